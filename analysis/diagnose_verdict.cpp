// diagnose's decision rule: the Verdict on two logs' statistics (analysis/diagnose_verdict.hpp).
#include "analysis/diagnose_verdict.hpp"

#include <algorithm>

#include "analysis/config_diff.hpp"

namespace servesim {

namespace {

Change change(double baseline, double current) {
  return {baseline, current, relative_change(baseline, current)};
}

double completed_share(const LogStats& s) {
  return s.requests ? double(s.completed) / double(s.requests) : NAN;
}

// Each statistic in both logs.
Verdict measure(const LogStats& base, const LogStats& cur) {
  Verdict v;
  v.il = change(base.p50.il_ms, cur.p50.il_ms);
  v.ttft = change(base.p50.ttft_ms, cur.p50.ttft_ms);
  v.otps = change(base.p50.otps, cur.p50.otps);
  v.otc = change(base.p50.otc, cur.p50.otc);
  v.input_tokens = change(base.input_tokens_p50, cur.input_tokens_p50);
  v.queue_ms = change(base.queue_ms_p50, cur.queue_ms_p50);
  v.otps_p95 = change(base.p95.otps, cur.p95.otps);
  v.ttft_p95 = change(base.p95.ttft_ms, cur.p95.ttft_ms);
  v.prefill_tps = change(base.prefill_tps_p99, cur.prefill_tps_p99);
  v.completed_share = change(completed_share(base), completed_share(cur));
  v.rate = change(base.request_rate, cur.request_rate);
  v.concurrency = change(base.decode.concurrency_p50, cur.decode.concurrency_p50);
  const DecodeLoad &db = base.decode, &dc = cur.decode;
  if (db.defined() && dc.defined()) {
    // Compare the lines where both logs have requests, as near the current's p50 as they allow.
    const double lo = std::max(db.concurrency_p5, dc.concurrency_p5);
    const double hi = std::min(db.concurrency_p95, dc.concurrency_p95);
    v.decode_extrapolated = !(lo <= hi);
    v.matched_concurrency =
        v.decode_extrapolated ? dc.concurrency_p50 : std::clamp(dc.concurrency_p50, lo, hi);
    const double tb = db.tpot_ms_at(v.matched_concurrency);
    const double tc = dc.tpot_ms_at(v.matched_concurrency);
    if (tb > 0 && tc > 0) v.decode_speed = change(1e3 / tb, 1e3 / tc);
  }
  v.configs_recorded = base.config.is_object() && cur.config.is_object();
  if (v.configs_recorded) v.config_changes = configuration_changes(base.config, cur.config);
  v.baseline_seed = config_seed(base.config);
  v.current_seed = config_seed(cur.config);
  v.other_seed_only = v.configs_recorded && v.config_changes.empty() && v.baseline_seed >= 0 &&
                      v.current_seed >= 0 && v.baseline_seed != v.current_seed;
  return v;
}

// Which p50s crossed the tolerance (NaN compares false: an undefined change never does).
void judge_p50s(Verdict& v) {
  const double tol = v.tolerance;
  v.otps_down = v.otps.relative < -tol;
  v.ttft_up = v.ttft.relative > tol;
  v.il_up = v.il.relative > tol;
  v.otc_up = v.otc.relative > tol;
  v.worse = v.il_up || v.ttft_up || v.otps_down;
  v.better = v.il.relative < -tol || v.ttft.relative < -tol || v.otps.relative > tol;
  v.longer_prompts = v.input_tokens.relative > tol;
  v.shorter_prompts = v.input_tokens.relative < -tol;
  v.any_moved = std::abs(v.il.relative) > tol || std::abs(v.ttft.relative) > tol ||
                std::abs(v.otps.relative) > tol || std::abs(v.otc.relative) > tol;
  v.small_drift = v.il_up && v.ttft.defined() && v.otps.defined() && v.otc.defined();
  v.rate_up = v.rate.relative > tol;
  v.decode_slower = v.decode_speed.relative < -tol;
  v.decode_held = v.decode_speed.defined() && !v.decode_slower;
  v.prefill_slower = v.prefill_tps.relative < -tol;
}

// The notes beside the finding: the host check, queueing, the tail, dropped requests.
void judge_notes(Verdict& v) {
  const double tol = v.tolerance;
  v.host_slower_too = v.finding == Finding::kInputLength && v.prefill_tps.relative < -tol;
  v.mostly_queueing = v.p50.ttft > 0 && v.queue_ms.delta() >= 0.5 * v.p50.ttft;
  // The tail, for investigation, never the verdict (the article: p95 beside p50, p50 pages).
  v.tail_otps_down = !v.otps_down && v.otps_p95.relative < -tol;
  v.tail_ttft_up = !v.ttft_up && v.ttft_p95.relative > tol;
  // Failed or rejected requests are not in the statistics: note when their share moved.
  v.fewer_completed = v.completed_share.baseline - v.completed_share.current > tol;
}

Finding first_match(const Verdict& v) {
  // Prompts that moved the way the latency did explain it; against it, they explain nothing.
  if ((v.longer_prompts && v.worse) || (v.shorter_prompts && v.better)) {
    return Finding::kInputLength;
  }
  if ((v.decode_slower && v.worse) || (v.otps_down && !v.decode_speed.defined())) {
    return Finding::kThroughput;
  }
  if (v.otps_down) {  // the host decodes as fast at matched concurrency: bigger batches
    if (v.other_seed_only) return Finding::kNoise;
    if (v.otc_up) return Finding::kOutputLength;
    if (v.rate_up) return Finding::kRate;
    if (!v.config_changes.empty()) return Finding::kConfig;
    return Finding::kNoise;
  }
  if (v.ttft_up && v.rate_up && !v.prefill_slower) {
    return v.other_seed_only ? Finding::kNoise : Finding::kRate;
  }
  if (v.ttft_up) return Finding::kTtft;
  if (v.il_up && v.otc_up) return Finding::kOutputLength;
  return Finding::kNone;
}

// The prompts' finding splits the latency change into input length, output length and speed.
Split split_for(Finding f) {
  return f == Finding::kInputLength ? Split::kInputOutputSpeed : Split::kTtftDecode;
}

}  // namespace

const char* finding_name(Finding f) {
  switch (f) {
    case Finding::kInputLength:
      return "input_length";
    case Finding::kThroughput:
      return "throughput";
    case Finding::kTtft:
      return "ttft";
    case Finding::kOutputLength:
      return "output_length";
    case Finding::kRate:
      return "rate";
    case Finding::kConfig:
      return "config";
    case Finding::kNoise:
      return "noise";
    case Finding::kNone:
      break;
  }
  return "none";
}

Verdict decide(const LogStats& base, const LogStats& cur, double tolerance) {
  Verdict v = measure(base, cur);
  v.tolerance = tolerance;
  judge_p50s(v);
  v.finding = first_match(v);
  v.p50 = decompose(base.p50, cur.p50, split_for(v.finding));
  judge_notes(v);
  return v;
}

}  // namespace servesim
