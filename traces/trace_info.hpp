// TraceInfo: what a capacity planner asks of a trace before replaying it: how many requests over
// how long, the mean arrival rate and its 5-minute peak, burstiness (the coefficient of variation
// of inter-arrival times: 1 for Poisson), token-length percentiles, and, where the trace has
// prefix-block hash ids, how many distinct blocks there are and the share of prompt tokens in
// blocks an earlier request already brought (what a prefix cache could reuse).
#pragma once

#include <cstdint>
#include <ostream>

#include "traces/trace.hpp"
#include "util/stats.hpp"

namespace servesim {

struct TraceInfo {
  uint64_t requests = 0;
  double span_s = 0;
  double mean_rate = 0;       // (requests - 1) / span, req/s
  double peak_rate_5min = 0;  // most requests in any 300 s window (sliding), / 300; NaN under 300 s
  double burstiness_cv = 0;   // std / mean of inter-arrival times
  Stats input_tokens, output_tokens;
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  // Prefix blocks (hash ids).
  bool has_hash_ids = false;
  uint64_t distinct_blocks = 0;
  double repeated_prompt_share = 0;  // prompt tokens in already-seen blocks / prompt tokens
};

TraceInfo trace_info(const Trace& t);

void print_trace_info(std::ostream& out, const Trace& t, const TraceInfo& info);

}  // namespace servesim
