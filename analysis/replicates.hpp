// Replicates: one configuration run over several seeds (`--num-seeds N`: seeds S .. S+N-1), and
// each headline metric's mean with its 95% confidence interval, from Student's t with N-1
// degrees of freedom: mean +- t(0.975, N-1) x s / sqrt(N). Near saturation a single seed can
// mislead (TTFT p50 was seen to range 0.2-9 s across seeds); replicates say how much.
// Promises: pure functions of the runs; a metric undefined in some run (null) is summarised over
// the runs that define it, and is undefined when none does.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace servesim {

struct Replicate {
  std::string metric;          // JSON summary path, e.g. "ttft_ms.p50"
  std::vector<double> values;  // one per run (NaN where undefined)
  double mean = NAN, stddev = NAN, ci_low = NAN, ci_high = NAN;
  size_t n = 0;  // runs that define it
};

// The headline metrics over RUNS (the same configuration, different seeds): TTFT, ITL, TPOT, E2E,
// OTPS, throughput, goodput, rejected share and the share of runs that were overloaded.
std::vector<Replicate> replicate(const std::vector<RunResult>& runs);

// Half the width of the 95% confidence interval of the mean of N values of standard deviation S.
double ci95_half_width(double s, size_t n);
// R's n, mean, standard deviation and 95% interval over its finite values.
void summarise(Replicate& r);

nlohmann::ordered_json replicates_json(const std::vector<Replicate>& r,
                                       const std::vector<int64_t>& seeds);

// One row per metric: mean, 95% CI, min, max.
void print_replicates(std::ostream& out, const std::vector<Replicate>& r);

// RUNS (one policy over the seeds) overloaded or rejecting in some seeds, one line each, after
// PREFIX.
void print_replicate_warnings(std::ostream& out, const std::vector<RunResult>& runs,
                              const std::string& prefix = "");

// `compare --num-seeds`: one row per policy (RUNS[policy][seed]), each headline as mean +- the
// 95% CI's half width, then the verdict on the means among the policies that kept up and
// rejected at most 1% in every seed.
void print_compare_replicates(std::ostream& out, const std::vector<std::vector<RunResult>>& runs);

// The change of each headline metric of RUNS[i] from RUNS[0], seed by seed (every policy ran the
// same seeds: common random numbers), with its paired 95% interval: {"vs": label of RUNS[0],
// "metrics": {path: {"change", "ci95": [lo, hi], "test", "n"}}}. Printed by
// print_compare_replicates, one line per policy after the first.
nlohmann::ordered_json paired_changes_json(const std::vector<RunResult>& first,
                                           const std::vector<RunResult>& other);

}  // namespace servesim
