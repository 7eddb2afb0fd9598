// The CI gate (`servesim check SPEC.ini`): scenarios re-simulated and compared with a baseline
// results file, one tolerance per summary metric.
//  - A spec names the baseline file (relative to the spec's folder), [tolerance] entries and
//    [scenario.NAME] sections of `run` flags; top-level flags apply to every scenario.
//  - A tolerance is +X% / -X% of the baseline or +X / -X in the metric's unit; its sign says which
//    direction is a regression. Metrics are paths in the JSON summary (`ttft_ms.p50`).
//  - Rejections are never good news: every spec checks `requests.rejected_share` with the
//    tolerance +0 unless it gives its own, so a change that makes requests get rejected fails
//    the gate even when the latencies of the remaining requests improve.
//  - judge() decides each metric's verdict; the CLI prints them. A scenario with no baseline yet
//    is reported as new, not as an error.
// Promises: a metric that became undefined (null) is a regression; one undefined in both is not;
// one that became defined is new.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

struct CheckLine {
  std::string scenario;
  const Tolerance* tolerance;
  double baseline = 0, current = 0;
  double change = 0;  // relative, in percent; NaN when the baseline is 0
  CheckVerdict verdict = CheckVerdict::kOk;
  std::string note;  // what a regressed rejected share means, in requests
};

// The verdict of CURRENT against BASELINE under T (NaN = undefined).
CheckVerdict judge(const Tolerance& t, double baseline, double current);

// Error naming SPEC's line when a tolerance's metric is not a number (or null) in SUMMARY, a run's
// JSON summary: --update checks it before writing a baseline no check could use.
void check_tolerance_metrics(const CheckSpec& spec, const nlohmann::ordered_json& summary);

// Each tolerance of SPEC judged on scenario NAME's summaries (BASELINE null: a new scenario).
// Throws Error (spec, line, metric) when a tolerance names no number of the summary.
std::vector<CheckLine> check_scenario(const CheckSpec& spec, const std::string& name,
                                      const nlohmann::ordered_json& baseline,
                                      const nlohmann::ordered_json& current);

}  // namespace servesim
