// Stats: the distribution summary every latency metric reports (mean, p50, p90, p95, p99, max,
// and any further percentiles asked for), from exact values (per-request metrics) or from a
// LogHistogram (inter-token gaps). Percentiles use numpy's default linear interpolation, as
// vLLM's benchmark_serving.py does. A summary of nothing is undefined: every field NaN, count 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/histogram.hpp"

namespace servesim {

struct Stats {
  double mean = NAN, p50 = NAN, p90 = NAN, p95 = NAN, p99 = NAN, max = NAN;
  uint64_t count = 0;
  std::vector<std::pair<double, double>> extra;  // (percentile in [0, 100], value)

  bool defined() const { return count > 0; }
};

// numpy.percentile(values, q) for sorted values, q in [0, 100]; NaN when empty.
double percentile_sorted(const std::vector<double>& sorted, double q);

// Sorts VALUES in place and summarises them, with the EXTRA percentiles too.
Stats summarize(std::vector<double>& values, const std::vector<double>& extra = {});
Stats summarize(const LogHistogram& h, const std::vector<double>& extra = {});

// "p50", "p99.9": the name of percentile Q in reports.
std::string percentile_name(double q);

// Every value multiplied by FACTOR (e.g. seconds to milliseconds).
Stats scaled(Stats s, double factor);

}  // namespace servesim
