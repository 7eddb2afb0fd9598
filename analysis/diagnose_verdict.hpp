// diagnose's decision rule: what a change between two logs' p50s means, read off Bedrock's
// identity IL = TTFT + OTC / OTPS x 1000 (analysis/diagnose_stats.hpp): TTFT up while OTPS holds
// is input length or queueing before generation; OTPS down is the host generating slower (the
// alarm-worthy case); latency up with both stable is more output tokens per request (a workload
// change, for cost and UX review).
// The article's rule assumes decode speed does not depend on the prompts. Under load it does:
// longer prompts mean more prefill work, so requests queue longer for their first token, and
// with chunked prefill (vLLM V0 `enable_chunked_prefill`, V1 always) the prompts' chunks run in
// the same steps as the running requests' decodes (without it, decodes wait while prefill steps
// run), so every output token waits longer and OTPS falls with no change to the host. Read alone,
// OTPS would page for a prompt regression. So the rule asks about the prompts first: when input
// tokens p50 moved beyond the tolerance, in the direction that explains the latency change, the
// prompts are the verdict, the latency change is split into input length (the whole TTFT change,
// queueing included), output length and speed, and an OTPS drop beside it is read as their
// consequence. The host check beside it: the prefill speed of the fastest prefills
// (analysis/diagnose_stats.hpp), which longer prompts and load leave in place and a slower host
// lowers; when it fell too, the verdict says the host may have slowed as well.
//  - decide(): the Verdict, i.e. the Finding (precedence documented at Finding) and the numbers
//    and flags that justify it: each statistic in both logs with its relative change, which
//    changes crossed the tolerance, the decomposition of the latency change, and the notes for
//    the tail, dropped requests and queueing. It builds no text: analysis/diagnose_verdict_text.hpp
//    puts a Verdict in words.
// Promises: a pure function of its inputs. NaN compares false: an undefined change is never
// significant, and a log without input tokens is judged as if the prompts held (the text says
// that they were not recorded).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/diagnose_stats.hpp"

namespace servesim {

// What the p50s say, first match wins:
//  1. kInputLength:  input tokens p50 rose by more than the tolerance and the latency got worse
//                    (InvocationLatency or TTFT p50 up, or OTPS p50 down, beyond it), or fell
//                    by more than the tolerance and the latency got better (the same the other
//                    way): the prompts changed, a workload change, not the host. First because
//                    the prompts drive every other p50 under load (above); the latency change is
//                    split into input length, output length and speed (Split::kInputOutputSpeed).
//                    Prompts that moved against the latency change (shorter prompts, slower
//                    answers) explain nothing: the rules below decide, and the text notes them.
//  2. kThroughput:   the host decodes slower: its decode speed at matched concurrency (the
//                    DecodeLoad lines, diagnose_stats.hpp) fell by more than the tolerance while
//                    the latency got worse, or OTPS p50 fell by more than the tolerance and the
//                    decode check is not known (too few requests). The one change to page for.
//  3. OTPS p50 fell by more than the tolerance while the host's decode speed at matched
//     concurrency held: the requests decoded in bigger batches, so each token waited longer.
//     What made the batches bigger is the finding:
//     kOutputLength:  OutputTokenCount p50 rose beyond the tolerance: longer answers keep more
//                     requests decoding at once (the case the article's rule, read alone,
//                     pages for under load);
//     kRate:          the request rate rose beyond the tolerance;
//     kConfig:        the recorded configurations differ (results files): the new one batches
//                     more (max_num_seqs, the token budget, the GPU's memory);
//     kNoise:         nothing recorded moved, the seed aside: the arrival sample formed bigger
//                     batches (seed noise near saturation), not the host; not alarm-worthy.
//                     First of the four when the results files record configurations equal
//                     but for the seed: then a realized rate or length that moved is a draw.
//  4. kRate:         TTFT p50 rose beyond the tolerance, the rate rose beyond it and the host's
//                    prefill speed did not fall beyond it: more queueing from more requests
//                    (kNoise instead when the configurations are equal but for the seed).
//  5. kTtft:         TTFT p50 rose by more than the tolerance while OTPS held: queueing or
//                    slower prefill before generation (or input length, when the logs do not
//                    record it).
//  6. kOutputLength: InvocationLatency p50 rose by more than the tolerance, TTFT and OTPS
//                    within it, and OutputTokenCount p50 rose by more than the tolerance: more
//                    output tokens per request, a workload change.
//  7. kNone:         none of the above (improvements, sub-tolerance drifts and prompts that moved
//                    without moving the latency are noted).
// Every finding but kInputLength splits the latency change into TTFT and decode
// (Split::kTtftDecode).
enum class Finding {
  kInputLength,
  kThroughput,
  kOutputLength,
  kRate,
  kConfig,
  kNoise,
  kTtft,
  kNone
};

// "input_length", "throughput", "output_length", "rate", "config", "noise", "ttft", "none"
const char* finding_name(Finding f);

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

  // The p50s the rule reads, the p95s behind the tail notes, the host check (prefill speed
  // p99) and the share of requests that completed (completed / requests; NaN for a log without
  // requests).
  Change il, ttft, otps, otc, input_tokens, queue_ms;
  Change otps_p95, ttft_p95;
  Change prefill_tps;
  Change completed_share;
  Change rate;         // requests/s
  Change concurrency;  // requests decoding at once, p50 (DecodeLoad)
  // The host's decode speed per sequence (1000 / tpot, tokens/s) on each log's DecodeLoad line
  // at the matched concurrency: the current log's p50, moved into the range (p5 to p95) both
  // logs cover when they overlap; when they do not, the baseline's line is extrapolated.
  Change decode_speed;
  double matched_concurrency = NAN;
  bool decode_extrapolated = false;
  // What the results files record that differs (analysis/config_diff.hpp), the seed aside;
  // configs_recorded when both logs recorded theirs; the seeds when both say.
  std::vector<std::string> config_changes;
  bool configs_recorded = false;
  int64_t baseline_seed = -1, current_seed = -1;
  // Both configurations recorded, equal but for the workload's seed: whatever the realized
  // lengths and rate did, the two runs are draws of one workload.
  bool other_seed_only = false;
  Decomposition p50;  // the change of InvocationLatency p50, split as the finding says

  // Which p50s crossed the tolerance, in the direction the rule asks.
  bool otps_down = false, ttft_up = false, il_up = false, otc_up = false;
  bool worse = false;        // IL or TTFT up, or OTPS down, beyond it
  bool better = false;       // IL or TTFT down, or OTPS up, beyond it
  bool any_moved = false;    // IL, TTFT, OTPS or OTC p50 moved beyond it either way
  bool small_drift = false;  // IL up while TTFT, OTPS and OTC are defined and within it
  // The prompts: input tokens p50 rose (fell) beyond the tolerance.
  bool longer_prompts = false, shorter_prompts = false;
  bool rate_up = false;  // the request rate rose beyond the tolerance
  // The host checks: decode speed at matched concurrency, prefill speed p99, fell beyond it.
  bool decode_slower = false, prefill_slower = false;
  bool decode_held = false;  // the decode check is defined and did not fall beyond it
  // Notes beside the finding.
  bool host_slower_too = false;  // kInputLength, and prefill speed p99 fell beyond the tolerance
  bool mostly_queueing = false;  // the queueing delay grew by half or more of a TTFT rise
  bool tail_otps_down = false;   // OTPS p95 fell beyond the tolerance while p50 held
  bool tail_ttft_up = false;     // TTFT p95 rose beyond the tolerance while p50 held
  bool fewer_completed = false;  // the completed share fell by more than the tolerance
};

// REQUIRES: TOLERANCE >= 0.
Verdict decide(const LogStats& baseline, const LogStats& current, double tolerance);

}  // namespace servesim
