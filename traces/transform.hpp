// What-if transforms on a trace, applied in this order (each optional):
//  1. --window START:END  keep arrivals in [START, END) s, shifted to start at 0 (timed only);
//  2. --max-requests N    keep the first N;
//     then --trace-replicates bootstrap|jitter draws a replicate of what is left from --seed
//     (traces/resample.hpp: a circular block bootstrap of --replicate-block-s blocks, or
//     arrivals jittered by --replicate-jitter-s), timed traces only;
//  3. arrivals: on a timed trace --time-scale X stretches them (0.5 = twice the rate) and then
//     --request-rate R rescales them to mean rate R; a length-only trace gets Gamma arrivals at
//     rate R with --burstiness and --seed, as the synthetic generator draws them;
//  4. --input-trim N      remove N tokens from every prompt (floor 1): "trim the system prompt";
//  5. --input-scale X, --output-scale X  multiply lengths (rounded, floor 1);
//  6. --max-input-len N, --max-output-len N  clip, counting the requests clipped.
// Content follows (traces/trace.hpp): a dropped row takes its hash ids, spans and session along;
// the tokens a prompt edit keeps keep their names (once a transform edits prompts, hash ids and
// session ids become spans, since their blocks and conversations no longer line up with the new
// prompts); tokens --input-scale > 1 adds are the request's own; an output continues its
// conversation only while the prompt still ends where it did and the answer did not grow.
// Promises: the trace's invariants hold afterwards; counts record every request dropped; the
// transforms applied are appended to the trace's options.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "traces/resample.hpp"
#include "traces/trace.hpp"

namespace servesim {

struct TransformOptions {
  bool has_window = false;
  double window_start_s = 0, window_end_s = std::numeric_limits<double>::infinity();
  int64_t max_requests = 0;  // 0 = all
  double time_scale = 1;
  double request_rate = 0;  // 0 = keep the trace's timing
  double burstiness = 1;    // for length-only traces
  uint64_t seed = 0;        // for length-only traces, and the replicate drawn
  Resample resample = Resample::kNone;
  double replicate_block_s = 60;  // bootstrap: block length
  double replicate_jitter_s = 1;  // jitter: width of the uniform offset
  int64_t input_trim = 0;
  double input_scale = 1, output_scale = 1;
  int64_t max_input_len = 0, max_output_len = 0;  // 0 = no clip

  bool any() const;
  std::string describe() const;  // as flags
};

// Parses "START:END" (seconds; END may be empty or inf). Throws Error on bad input.
void parse_window(const std::string& spec, TransformOptions& o);

// Throws Error naming the flag on a bad value, or when nothing is left.
void apply_transforms(Trace& t, const TransformOptions& o);

}  // namespace servesim
