#include "util/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace servesim {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  const double rank = q / 100.0 * double(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

Stats summarize(std::vector<double>& values, const std::vector<double>& extra) {
  Stats s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
  s.p50 = percentile_sorted(values, 50);
  s.p90 = percentile_sorted(values, 90);
  s.p95 = percentile_sorted(values, 95);
  s.p99 = percentile_sorted(values, 99);
  s.max = values.back();
  for (double q : extra)
    s.extra.emplace_back(q, percentile_sorted(values, q));
  return s;
}

Stats summarize(const LogHistogram& h, const std::vector<double>& extra) {
  Stats s;
  s.count = h.count();
  if (s.count == 0) return s;
  s.mean = h.mean();
  s.p50 = h.quantile(0.50);
  s.p90 = h.quantile(0.90);
  s.p95 = h.quantile(0.95);
  s.p99 = h.quantile(0.99);
  s.max = h.max();
  for (double q : extra)
    s.extra.emplace_back(q, h.quantile(q / 100));
  return s;
}

std::string percentile_name(double q) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%g", q);
  return buf;
}

Stats scaled(Stats s, double f) {
  s.mean *= f;
  s.p50 *= f;
  s.p90 *= f;
  s.p95 *= f;
  s.p99 *= f;
  s.max *= f;
  for (auto& [q, v] : s.extra)
    v *= f;
  return s;
}

}  // namespace servesim
