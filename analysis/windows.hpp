// Request logs and time windows: the per-request view that servesim results, vLLM benchmark
// dumps and CloudWatch exports share, and the per-period statistics CloudWatch reports from it.
//  - A RequestLog holds one row per request: arrival, TTFT, InvocationLatency (E2E) and
//    OutputTokenCount, and, when known, input tokens and queueing delay. A request that never
//    completed (rejected, failed) has NaN latencies: it counts as an arrival and nothing else.
//  - compute_windows() cuts time into periods aligned to multiples of PERIOD (CloudWatch aligns
//    its periods to the clock). Arrivals fall in the window of their arrival; a completed
//    request's datapoints (TTFT, latency, tokens) in the window where it completed, which is when
//    CloudWatch receives Bedrock's invocation metrics. Each window reports p50 and p95 with
//    numpy's linear interpolation, and OTPS the CloudWatch way:
//        OTPS = p50(OutputTokenCount) / (p50(InvocationLatency) - p50(TTFT)) x 1000,
//    so that p50 latency = p50 TTFT + p50 tokens / OTPS x 1000 holds exactly for every window.
//    A window with no completion has NaN statistics (CloudWatch's missing data).
// Promises: windows cover [first arrival, last completion] without gaps, in time order; the
// result is a pure function of the log.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace servesim {

struct RequestLog {
  std::string source;                   // file or run it came from, for messages
  std::vector<double> arrival_s;        // seconds on any clock (sim time, epoch, ...)
  std::vector<double> ttft_ms, e2e_ms;  // NaN when the request did not complete
  std::vector<int64_t> output_tokens;   // OutputTokenCount
  std::vector<int64_t> input_tokens;    // empty when the log does not say
  std::vector<double> queue_ms;         // empty when the log does not say; NaN per row
  nlohmann::ordered_json config;        // the recorded configuration (results files), else null

  size_t size() const { return arrival_s.size(); }
  bool completed(size_t i) const { return std::isfinite(e2e_ms[i]) && std::isfinite(ttft_ms[i]); }
  double finish_s(size_t i) const { return arrival_s[i] + e2e_ms[i] / 1e3; }
};

// The completed and rejected requests of a simulated run (rejected ones with NaN latencies).
RequestLog request_log(const RunResult& r);

struct Window {
  double start_s = 0, end_s = 0;
  int64_t arrivals = 0, completions = 0;
  double ttft_ms_p50 = NAN, ttft_ms_p95 = NAN;
  double e2e_ms_p50 = NAN, e2e_ms_p95 = NAN;  // InvocationLatency
  double output_tokens_p50 = NAN, output_tokens_p95 = NAN;
  double otps = NAN;  // CloudWatch formula above
  double input_tokens_p50 = NAN, queue_ms_p50 = NAN;
};

inline constexpr size_t kMaxWindows = 1000000;

// PERIOD_S > 0. An empty log gives no windows; more than kMaxWindows is an Error naming
// --period-s.
std::vector<Window> compute_windows(const RequestLog& log, double period_s);

// p50 and p95 of the completed requests of a whole log, in the same terms as a window.
Window whole_log(const RequestLog& log);

}  // namespace servesim
