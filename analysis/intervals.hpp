// Prediction intervals: how wrong a predicted figure may be, from how wrong servesim was on real
// vLLM runs it was not fitted on. Each stage row of the ground-truth files
// (../shared/groundtruth: 17 experiments, 29 stage rows) was predicted by the engine fit that left
// its whole experiment out (scripts/fit-engine.py --leave-one-out --residuals); the table of
// ln(measured / predicted) is analysis/interval_residuals.inc. Split-conformal: a LEVEL interval
// of a figure is [point / f, point x f] with ln f the ceil((n + 1) LEVEL)-th smallest of the n
// absolute held-out log errors of its metric, so that a new run exchangeable with the held-out
// ones falls inside with probability >= LEVEL. A configuration outside what the fit saw (a GPU
// architecture without real runs, a TP degree, a decode batch or a context past the runs', MLA
// attention, a TP group across nodes) is
// not exchangeable with them: it says why and gets the widest interval the table holds (each
// metric's largest held-out error), which is still no guarantee; an MLA model, whose published
// runs were off by far more than that, gets none ([0, inf]).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace servesim {

// run's --interval default, and the level every other JSON summary carries.
inline constexpr double kDefaultIntervalLevel = 0.9;

// The metrics the ground truth measures, in the table's column order.
enum class IntervalMetric { kTtftMean, kTtftP90, kTtftP99, kTpotMean, kE2eMean, kE2eP90, kE2eP99 };
inline constexpr int kNumIntervalMetrics = 7;
const char* interval_metric_name(IntervalMetric m);  // "ttft_mean", ...

// What a run's load and configuration look like, against the fitted runs' range.
struct Regime {
  double decode_batch = 0;    // decode tokens per step, mean over the run's steps
  double context_tokens = 0;  // a decoding sequence's mean context: mean prompt + half the output
  int tp = 1;
  GpuArch arch = GpuArch::kHopper;
  bool mla = false;         // multi-head latent attention (no real run fitted)
  bool multi_node = false;  // a TP group larger than the GPU's node
  int pp = 1;               // pipeline stages (no real run had more than one)
  int ep = 1;               // GPUs the experts are spread over (no real run had EP)
  bool sliding = false;     // sliding-window layers (gpt-oss: no real run)
  bool mxfp4 = false;       // MXFP4 experts (no real run, no kernel profile)
  bool nvfp4 = false;       // NVFP4 linear layers (no real run, no kernel profile)
  bool linear = false;      // linear-attention layers (Qwen3-Next: no real run)
};
Regime regime_of(const RunResult& r);
// Why REGIME lies outside what the held-out runs covered ("" entries none: in range).
std::vector<std::string> outside_fitted_range(const Regime& regime);

struct IntervalSet {
  double level = 0;  // 0: none
  // Per metric, the factor f of [point / f, point x f]; the widest for a run out of range.
  std::array<double, kNumIntervalMetrics> factor{};
  std::vector<std::string> extrapolated;  // why the run is out of the fitted range (empty: in)
  size_t calibration_rows = 0;            // n, the held-out stage rows
  double lo(IntervalMetric m, double point) const;
  double hi(IntervalMetric m, double point) const;
};

// The largest level the table supports: n / (n + 1) (a higher one needs more held-out rows).
double max_interval_level();
// LEVEL in (0, max_interval_level()]; Error naming --interval otherwise.
IntervalSet prediction_intervals(const Regime& regime, double level);
// R's predicted figures with their intervals: the ground truth's seven (TTFT mean, p90, p99; TPOT
// mean; E2E mean, p90, p99), ITL mean on TPOT mean's and output throughput on the inverse of it.
// Printed by run beside its table, and the JSON's prediction_intervals.
void print_intervals(std::ostream& out, const RunResult& r, const IntervalSet& s);
nlohmann::ordered_json intervals_json(const RunResult& r, const IntervalSet& s);
// A table's columns of R's intervals at LEVEL (sweep points): interval_level, then each
// held-out-measured figure's low and high end (ttft_ms_mean_lo, ttft_ms_mean_hi, ... as
// summary_metrics names them), then interval_extrapolated (1: outside the fitted range, the
// widest).
std::vector<std::pair<std::string, double>> interval_columns(const RunResult& r, double level);
// compare's: one line per run of its table's TTFT p99, TPOT p50 and E2E p50 with their LEVEL
// intervals (nothing at level 0).
void print_compare_intervals(std::ostream& out, const std::vector<RunResult>& runs, double level);

// Reads a level's text (--interval, capacity's --confidence; FLAG names it in an Error): a level in
// (0, max_interval_level()] or "none" (0).
double parse_interval_level(const std::string& text, const std::string& flag = "interval");

// Which held-out metric's error stands for summary-metric COLUMN (report.hpp's summary_metrics
// names), and which end of its interval is the pessimistic one. The ground truth measures TTFT
// and E2E mean, p90 and p99 and TPOT's mean only, so: a median borrows the mean's error, p95 and
// the maximum p99's; queueing borrows TTFT's (it is part of it); every TPOT and ITL figure, and
// the OTPS and token throughputs (inverse, lower is worse), borrow TPOT mean's. Other columns
// (counts, KV usage, request rates, attainment) have none.
struct IntervalProxy {
  IntervalMetric metric;
  bool larger_is_worse = true;
};
std::optional<IntervalProxy> interval_proxy(const std::string& column);
// VALUE of COLUMN at the pessimistic end of its interval under S (VALUE itself when S is none or
// COLUMN has no interval).
double pessimistic_value(const std::string& column, double value, const IntervalSet& s);

}  // namespace servesim
