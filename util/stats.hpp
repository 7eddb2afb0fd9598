// Stats: the distribution summary every latency metric reports (mean, p50, p90, p95, p99, max),
// from exact values (per-request metrics) or from a LogHistogram (inter-token gaps).
// Percentiles use numpy's default linear interpolation, as vLLM's benchmark_serving.py does.
#pragma once

#include <cstdint>
#include <vector>

#include "util/histogram.hpp"

namespace servesim {

struct Stats {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
  uint64_t count = 0;
};

// numpy.percentile(values, q) for sorted values, q in [0, 100].
double percentile_sorted(const std::vector<double>& sorted, double q);

// Sorts VALUES in place and summarises them; all zeros when empty.
Stats summarize(std::vector<double>& values);
Stats summarize(const LogHistogram& h);

// Every field multiplied by FACTOR (e.g. seconds to milliseconds).
Stats scaled(Stats s, double factor);

}  // namespace servesim
