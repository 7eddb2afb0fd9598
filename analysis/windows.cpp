#include "analysis/windows.hpp"

#include <algorithm>
#include <cassert>

#include "sim/simulation.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/stats.hpp"

namespace servesim {

RequestLog request_log(const RunResult& r) {
  RequestLog log;
  log.source = policy_name(r.config.scheduler.policy);
  const size_t n = r.requests.size();
  log.arrival_s.reserve(n);
  for (const RequestRecord& q : r.requests) {
    const bool done = q.finished();
    log.arrival_s.push_back(q.arrival_s);
    log.ttft_ms.push_back(done ? q.ttft_s() * 1e3 : NAN);
    log.e2e_ms.push_back(done ? q.e2e_s() * 1e3 : NAN);
    log.output_tokens.push_back(q.output_tokens);
    log.input_tokens.push_back(q.input_tokens);
    log.queue_ms.push_back(done ? q.queue_s() * 1e3 : NAN);
  }
  return log;
}

namespace {

// The statistics of the completed requests ROWS of LOG into W (counts are left to the caller).
void fill(Window& w, const RequestLog& log, const std::vector<size_t>& rows) {
  if (rows.empty()) return;
  std::vector<double> v;
  v.reserve(rows.size());
  auto stat = [&](auto value, double& p50, double* p95) {
    v.clear();
    for (size_t i : rows) {
      const double x = value(i);
      if (std::isfinite(x)) v.push_back(x);
    }
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    p50 = percentile_sorted(v, 50);
    if (p95) *p95 = percentile_sorted(v, 95);
  };
  stat([&](size_t i) { return log.ttft_ms[i]; }, w.ttft_ms_p50, &w.ttft_ms_p95);
  stat([&](size_t i) { return log.e2e_ms[i]; }, w.e2e_ms_p50, &w.e2e_ms_p95);
  stat([&](size_t i) { return double(log.output_tokens[i]); }, w.output_tokens_p50,
       &w.output_tokens_p95);
  if (!log.input_tokens.empty()) {
    stat([&](size_t i) { return double(log.input_tokens[i]); }, w.input_tokens_p50, nullptr);
  }
  if (!log.queue_ms.empty())
    stat([&](size_t i) { return log.queue_ms[i]; }, w.queue_ms_p50, nullptr);
  w.otps = cloudwatch_otps(w.output_tokens_p50, w.e2e_ms_p50, w.ttft_ms_p50);
}

}  // namespace

std::vector<Window> compute_windows(const RequestLog& log, double period_s) {
  assert(period_s > 0);
  std::vector<Window> out;
  if (log.size() == 0) return out;
  double first = log.arrival_s[0], last = log.arrival_s[0];
  for (size_t i = 0; i < log.size(); ++i) {
    first = std::min(first, log.arrival_s[i]);
    last = std::max(last, log.completed(i) ? log.finish_s(i) : log.arrival_s[i]);
  }
  const double origin = std::floor(first / period_s) * period_s;
  const double span = std::floor((last - origin) / period_s) + 1;
  if (!std::isfinite(origin) || !(span >= 1 && span <= double(kMaxWindows))) {
    throw Error(field::kPeriodS,
                format("a period of %g s cuts the %.6g s of this log into more than "
                       "%zu windows: use a longer {{output.period_s}}",
                       period_s, last - first, size_t(kMaxWindows)));
  }
  const size_t count = size_t(span);
  auto index = [&](double t) {
    return std::min(count - 1, size_t(std::max(0.0, std::floor((t - origin) / period_s))));
  };
  out.resize(count);
  std::vector<std::vector<size_t>> done(count);
  for (size_t i = 0; i < log.size(); ++i) {
    ++out[index(log.arrival_s[i])].arrivals;
    if (log.completed(i)) done[index(log.finish_s(i))].push_back(i);
  }
  for (size_t k = 0; k < count; ++k) {
    Window& w = out[k];
    w.start_s = origin + double(k) * period_s;
    w.end_s = w.start_s + period_s;
    w.completions = int64_t(done[k].size());
    fill(w, log, done[k]);
  }
  return out;
}

Window whole_log(const RequestLog& log) {
  Window w;
  std::vector<size_t> rows;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log.completed(i)) rows.push_back(i);
  }
  w.arrivals = int64_t(log.size());
  w.completions = int64_t(rows.size());
  if (log.size() > 0) {
    w.start_s = *std::min_element(log.arrival_s.begin(), log.arrival_s.end());
    w.end_s = w.start_s;
    for (size_t i : rows)
      w.end_s = std::max(w.end_s, log.finish_s(i));
  }
  fill(w, log, rows);
  return w;
}

}  // namespace servesim
