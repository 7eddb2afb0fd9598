// The statistics diagnose compares: LogStats of a request log, the split of a latency change, and
// relative changes (analysis/diagnose_stats.hpp).
#include "analysis/diagnose_stats.hpp"

#include <algorithm>
#include <vector>

#include "analysis/diagnose_util.hpp"
#include "sim/metrics.hpp"
#include "util/stats.hpp"

namespace servesim {

using diagnose_util::positive;

double LatencyPoint::decode_ms() const {
  if (positive(otps) && std::isfinite(otc)) return otc / otps * 1e3;
  return il_ms - ttft_ms;  // OTPS undefined (no decode time) or zero (no tokens)
}

namespace {

// Input tokens / (TTFT - queueing) x 1000 of each completed request that says both.
double prefill_tps_p99(const RequestLog& log) {
  if (log.input_tokens.empty() || log.queue_ms.empty()) return NAN;
  std::vector<double> tps;
  for (size_t i = 0; i < log.size(); ++i) {
    const double prefill_ms = log.ttft_ms[i] - log.queue_ms[i];
    if (log.completed(i) && prefill_ms > 0 && log.input_tokens[i] > 0) {
      tps.push_back(double(log.input_tokens[i]) / prefill_ms * 1e3);
    }
  }
  if (tps.empty()) return NAN;
  std::sort(tps.begin(), tps.end());
  return percentile_sorted(tps, 99);
}

}  // namespace

const char* split_name(Split s) {
  return s == Split::kInputOutputSpeed ? "input_output_speed" : "ttft_decode";
}

LogStats log_stats(const RequestLog& log) {
  const Window w = whole_log(log);
  LogStats s;
  s.source = log.source;
  s.requests = w.arrivals;
  s.completed = w.completions;
  s.p50 = {w.e2e_ms_p50, w.ttft_ms_p50, w.output_tokens_p50, w.otps};
  s.p95 = {w.e2e_ms_p95, w.ttft_ms_p95, w.output_tokens_p95,
           cloudwatch_otps(w.output_tokens_p95, w.e2e_ms_p95, w.ttft_ms_p95)};
  s.input_tokens_p50 = w.input_tokens_p50;
  s.queue_ms_p50 = w.queue_ms_p50;
  s.prefill_tps_p99 = prefill_tps_p99(log);
  s.start_s = w.start_s;
  s.end_s = w.end_s;
  return s;
}

Decomposition decompose(const LatencyPoint& base, const LatencyPoint& cur, Split split) {
  Decomposition d;
  d.split = split;
  d.il = cur.il_ms - base.il_ms;
  d.ttft = cur.ttft_ms - base.ttft_ms;
  d.decode = cur.decode_ms() - base.decode_ms();
  if (positive(base.otps) && positive(cur.otps)) {
    d.output = (cur.otc - base.otc) / base.otps * 1e3;
    d.speed = cur.otc * (1 / cur.otps - 1 / base.otps) * 1e3;
  }
  if (split == Split::kInputOutputSpeed) d.input = d.ttft;
  return d;
}

double relative_change(double baseline, double current) {
  if (!std::isfinite(baseline) || !std::isfinite(current) || baseline < 0) return NAN;
  if (baseline == 0) {  // from nothing: any rise is significant
    return current > 0 ? INFINITY : current < 0 ? -INFINITY : 0.0;
  }
  return (current - baseline) / baseline;
}

}  // namespace servesim
