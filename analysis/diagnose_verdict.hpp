// diagnose's decision rule: what a change between two logs' p50s means, read off Bedrock's
// identity IL = TTFT + OTC / OTPS x 1000 (analysis/diagnose_stats.hpp): TTFT up while OTPS holds
// is input length or queueing before generation; OTPS down is the host generating slower (the
// alarm-worthy case); latency up with both stable is more output tokens per request (a workload
// change, for cost and UX review).
//  - decide(): the Verdict, i.e. the Finding (precedence documented at Finding) and the numbers
//    and flags that justify it: each statistic in both logs with its relative change, which
//    changes crossed the tolerance, the decomposition of the latency change, and the notes for
//    the tail, dropped requests and queueing. It builds no text: analysis/diagnose_verdict_text.hpp
//    puts a Verdict in words.
// Promises: a pure function of its inputs. NaN compares false: an undefined change is never
// significant.
#pragma once

#include <cmath>

#include "analysis/diagnose_stats.hpp"

namespace servesim {

// What the p50s say, first match wins:
//  1. kThroughput:   OTPS p50 fell by more than the tolerance (whatever TTFT did): the host
//                    generates slower. First because it is the one change to page for, and
//                    because slower generation also delays queued requests' first tokens.
//  2. kTtft:         TTFT p50 rose by more than the tolerance while OTPS held: input length or
//                    queueing before generation.
//  3. kOutputLength: InvocationLatency p50 rose by more than the tolerance, TTFT and OTPS
//                    within it, and OutputTokenCount p50 rose by more than the tolerance: more
//                    output tokens per request, a workload change.
//  4. kNone:         none of the above (improvements and sub-tolerance drifts are noted).
enum class Finding { kThroughput, kTtft, kOutputLength, kNone };

const char* finding_name(Finding f);  // "throughput", "ttft", "output_length", "none"

// One statistic in both logs (NaN when a log does not say).
struct Change {
  double baseline = NAN, current = NAN;
  double relative = NAN;  // relative_change(baseline, current)

  double delta() const { return current - baseline; }
  bool defined() const { return std::isfinite(relative); }
};

struct Verdict {
  Finding finding = Finding::kNone;
  double tolerance = 0;  // a relative change beyond this is significant

  // The p50s the rule reads, the p95s behind the tail notes, and the share of requests that
  // completed (completed / requests; NaN for a log without requests).
  Change il, ttft, otps, otc, input_tokens, queue_ms;
  Change otps_p95, ttft_p95;
  Change completed_share;
  Decomposition p50;  // the change of InvocationLatency p50, split

  // Which p50s crossed the tolerance, in the direction the rule asks.
  bool otps_down = false, ttft_up = false, il_up = false, otc_up = false;
  bool any_moved = false;    // IL, TTFT, OTPS or OTC p50 moved beyond it either way
  bool small_drift = false;  // IL up while TTFT, OTPS and OTC are defined and within it
  // Notes beside the finding.
  bool longer_prompts = false;   // input tokens p50 rose beyond the tolerance
  bool mostly_queueing = false;  // the queueing delay grew by half or more of a TTFT rise
  bool tail_otps_down = false;   // OTPS p95 fell beyond the tolerance while p50 held
  bool tail_ttft_up = false;     // TTFT p95 rose beyond the tolerance while p50 held
  bool fewer_completed = false;  // the completed share fell by more than the tolerance
};

// REQUIRES: TOLERANCE >= 0.
Verdict decide(const LogStats& baseline, const LogStats& current, double tolerance);

}  // namespace servesim
