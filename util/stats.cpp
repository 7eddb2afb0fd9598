#include "util/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace servesim {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double rank = q / 100.0 * double(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

Stats summarize(std::vector<double>& values) {
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
  return s;
}

Stats summarize(const LogHistogram& h) {
  Stats s;
  s.count = h.count();
  if (s.count == 0) return s;
  s.mean = h.mean();
  s.p50 = h.quantile(0.50);
  s.p90 = h.quantile(0.90);
  s.p95 = h.quantile(0.95);
  s.p99 = h.quantile(0.99);
  s.max = h.max();
  return s;
}

Stats scaled(Stats s, double f) {
  s.mean *= f;
  s.p50 *= f;
  s.p90 *= f;
  s.p95 *= f;
  s.p99 *= f;
  s.max *= f;
  return s;
}

}  // namespace servesim
