// The CI gate (`servesim check SPEC.ini`): scenarios re-simulated and compared with a baseline
// results file, one tolerance per summary metric.
//  - A spec names the baseline file (relative to the spec's folder), [tolerance] entries and
//    [scenario.NAME] sections of `run` flags; top-level flags apply to every scenario.
//  - A tolerance is +X% / -X% of the baseline or +X / -X in the metric's unit; its sign says which
//    direction is a regression. Metrics are paths in the JSON summary (`ttft_ms.p50`).
//  - Replicates: `num-seeds = N` (top level or per scenario) runs a scenario over seeds SEED ..
//    SEED+N-1, and the baseline keeps every seed's run. A metric is judged on the change of its
//    mean with a confidence interval (`confidence-level`, 0.95 by default): paired Student t when
//    both sides ran the same seeds (common random numbers: seed k sees the same arrivals and
//    lengths on both), Welch's two-sample t when they did not, a one-sample t when one side has a
//    single run. A regression is an interval wholly beyond the tolerance in the bad direction; an
//    improvement, wholly beyond it in the good one; anything else is within tolerance or noise.
//    With one run a side the values are compared as they are, and the output says that noise is
//    not estimated.
//  - Rejections are never good news: every spec checks `requests.rejected_share` with the
//    tolerance +0 unless it gives its own, so a change that makes requests get rejected fails
//    the gate even when the latencies of the remaining requests improve. A scenario that became
//    overloaded in most seeds fails too (`overloaded`).
//  - `fail-on-alarm = true` adds the Bedrock OTPS alarm (diagnose's: OTPS below 80% of the
//    baseline's p50 for 3 of 5 five-minute windows) as a check of its own (`otps_alarm`).
//  - judge() decides each metric's verdict; the CLI prints them. A scenario with no baseline yet
//    is reported as new, not as an error.
// Promises: a metric that became undefined (null) is a regression; one undefined in both is not;
// one that became defined is new.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/config_diff.hpp"
#include "util/ini.hpp"

namespace servesim {

struct Tolerance {
  std::string metric, text;
  int line = 0;  // 0 for the default rejected-share tolerance
  double amount = 0;
  bool relative = false, rise_is_bad = true;
};

// The entry E of spec file SPEC as a tolerance; Error naming the file, line and metric.
Tolerance parse_tolerance(const std::string& spec, const IniEntry& e);

struct CheckSpec {
  std::string path;      // the spec file
  std::string baseline;  // the baseline results file, resolved against the spec's folder
  std::vector<Tolerance> tolerances;
  std::vector<std::string> scenarios;  // names, in file order
  double confidence = 0.95;            // confidence-level: of every interval, in (0.5, 1)
  bool fail_on_alarm = false;          // fail-on-alarm: the OTPS alarm is a check
  bool fail_on_any_alarm = false;      // fail-on-alarm = any: an excused firing fails too
};

// Reads SPEC's baseline, tolerances (with the default requests.rejected_share = +0 unless the
// spec sets it) and scenario names (their flags are the CLI's to read). UPDATE: tolerances may be
// absent (the baseline is being written).
CheckSpec read_check_spec(const std::string& path, bool update);

enum class CheckVerdict {
  kOk,
  kUndefinedInBoth,
  kImproved,
  kBecameDefined,  // undefined in the baseline, a number now
  kNew,            // the scenario has no baseline yet
  kFewerRequests,  // it looks better, but only over the requests that were not rejected
  kRegressed,
  kBecameUndefined,
};

const char* verdict_text(CheckVerdict v);  // "ok", "REGRESSED", ...
bool is_regression(CheckVerdict v);

// How a change was judged: one value a side (no noise estimate), paired Student t over shared
// seeds, Welch's two-sample t, or a one-sample t against a side's single value.
enum class ChangeTest { kSingle, kPaired, kWelch, kOneSample };
const char* change_test_name(ChangeTest t);  // "single run", "paired t", "Welch t", "one-sample t"

// The change of a metric's mean, current - baseline, and its confidence interval.
struct ChangeInterval {
  double baseline = NAN, current = NAN;  // the means over the values that are defined
  double low = NAN, high = NAN;          // the interval of the change (NaN for kSingle)
  size_t n_baseline = 0, n_current = 0;  // defined values (pairs, for kPaired)
  ChangeTest test = ChangeTest::kSingle;
};

// The change from BASELINE to CURRENT (one value per run; SEEDS_B and SEEDS_C their seeds, -1 for
// a run without one) at confidence LEVEL. Paired when both sides ran the same seeds, each once.
ChangeInterval change_interval(const std::vector<int64_t>& seeds_b, const std::vector<double>& b,
                               const std::vector<int64_t>& seeds_c, const std::vector<double>& c,
                               double level);

struct CheckLine {
  std::string scenario, metric, tolerance;  // the tolerance as written ("+10%")
  ChangeInterval interval;  // the means (interval.baseline, interval.current) and their change
  double change = 0;        // relative, in percent; NaN when the baseline is 0
  CheckVerdict verdict = CheckVerdict::kOk;
  std::string note;  // what a regressed rejected share means, in requests; the alarm's windows
};

// The verdict of CURRENT against BASELINE under T (NaN = undefined).
CheckVerdict judge(const Tolerance& t, double baseline, double current);
// The verdict of a change under T: on its interval when it has one, else on the means.
CheckVerdict judge(const Tolerance& t, const ChangeInterval& c);

// A scenario's runs on one side of the gate: one JSON summary per seed.
struct Replicates {
  std::vector<int64_t> seeds;  // -1 for a run without one (a timed trace)
  std::vector<nlohmann::ordered_json> summaries;
  bool empty() const { return summaries.empty(); }
};

// Error naming SPEC's line when a tolerance's metric is not a number (or null) in SUMMARY, a run's
// JSON summary: --update checks it before writing a baseline no check could use.
void check_tolerance_metrics(const CheckSpec& spec, const nlohmann::ordered_json& summary);

// Each tolerance of SPEC judged on scenario NAME's replicates (BASELINE empty: a new scenario),
// then the built-in `overloaded` line. Throws Error (spec, line, metric) when a tolerance names
// no number of the summary.
std::vector<CheckLine> check_scenario(const CheckSpec& spec, const std::string& name,
                                      const Replicates& baseline, const Replicates& current);

}  // namespace servesim
