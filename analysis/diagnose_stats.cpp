// The statistics diagnose compares: LogStats of a request log, the split of a latency change, and
// relative changes (analysis/diagnose_stats.hpp).
#include "analysis/diagnose_stats.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <utility>
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

// The number of requests decoding at once, as a step function of time, and its integral.
class DecodeConcurrency {
 public:
  // Each request decodes over [first token, last token].
  explicit DecodeConcurrency(std::vector<std::pair<double, double>> spans) {
    std::vector<std::pair<double, int>> events;
    events.reserve(2 * spans.size());
    for (const auto& [from, to] : spans) {
      events.emplace_back(from, 1);
      events.emplace_back(to, -1);
    }
    std::sort(events.begin(), events.end());
    times_.reserve(events.size());
    count_after_.reserve(events.size());
    integral_at_.reserve(events.size());
    double integral = 0;
    int64_t count = 0;
    for (const auto& [t, delta] : events) {
      if (!times_.empty()) integral += double(count) * (t - times_.back());
      count += delta;
      times_.push_back(t);
      count_after_.push_back(count);
      integral_at_.push_back(integral);
    }
  }

  // The mean number decoding over [FROM, TO], TO > FROM.
  double mean(double from, double to) const {
    return (integral(to) - integral(from)) / (to - from);
  }

 private:
  double integral(double t) const {
    const size_t k = size_t(std::upper_bound(times_.begin(), times_.end(), t) - times_.begin());
    if (k == 0) return 0;
    return integral_at_[k - 1] + double(count_after_[k - 1]) * (t - times_[k - 1]);
  }

  std::vector<double> times_, integral_at_;
  std::vector<int64_t> count_after_;
};

double request_rate(const RequestLog& log) {
  if (log.size() < 2) return NAN;
  const auto [lo, hi] = std::minmax_element(log.arrival_s.begin(), log.arrival_s.end());
  return *hi > *lo ? double(log.size() - 1) / (*hi - *lo) : NAN;
}

}  // namespace

DecodeLoad decode_load(const RequestLog& log) {
  std::vector<std::pair<double, double>> spans;
  std::vector<size_t> rows;  // the requests with a decode to time
  for (size_t i = 0; i < log.size(); ++i) {
    if (!log.completed(i)) continue;
    const double from = log.arrival_s[i] + log.ttft_ms[i] / 1e3, to = log.finish_s(i);
    spans.emplace_back(from, to);
    if (log.output_tokens[i] >= 2 && to > from) rows.push_back(i);
  }
  DecodeLoad d;
  d.requests = int64_t(rows.size());
  if (d.requests < kMinDecodeRequests) return d;
  const DecodeConcurrency concurrency(std::move(spans));
  const Eigen::Index n = Eigen::Index(rows.size());
  Eigen::MatrixXd x(n, 2);
  Eigen::VectorXd y(n);
  std::vector<double> c(rows.size()), tpot(rows.size());
  for (size_t k = 0; k < rows.size(); ++k) {
    const size_t i = rows[k];
    const double from = log.arrival_s[i] + log.ttft_ms[i] / 1e3, to = log.finish_s(i);
    c[k] = concurrency.mean(from, to);
    tpot[k] = (log.e2e_ms[i] - log.ttft_ms[i]) / double(log.output_tokens[i] - 1);
    x(Eigen::Index(k), 0) = 1;
    x(Eigen::Index(k), 1) = c[k];
    y(Eigen::Index(k)) = tpot[k];
  }
  std::sort(c.begin(), c.end());
  std::sort(tpot.begin(), tpot.end());
  d.concurrency_p5 = percentile_sorted(c, 5);
  d.concurrency_p50 = percentile_sorted(c, 50);
  d.concurrency_p95 = percentile_sorted(c, 95);
  d.tpot_ms_p50 = percentile_sorted(tpot, 50);
  if (c.back() - c.front() > 1e-9 * c.back()) {
    const Eigen::Vector2d coef = x.colPivHouseholderQr().solve(y);
    d.a_ms = coef(0);
    d.b_ms = coef(1);
  } else {  // one concurrency: the mean time per token, flat
    d.a_ms = y.mean();
    d.b_ms = 0;
  }
  if (!std::isfinite(d.a_ms) || !std::isfinite(d.b_ms)) d.a_ms = d.b_ms = NAN;
  return d;
}

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
  s.request_rate = request_rate(log);
  s.decode = decode_load(log);
  s.config = log.config;
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
