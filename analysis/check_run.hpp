// Running the CI gate (`servesim check`, check.hpp): a spec's scenarios simulated over their
// seeds, the baseline's runs read back, each scenario judged (check_scenario), and a regression
// attributed to its cause (issue 24): diagnose (diagnose.hpp) on each seed's current run against
// the baseline's run of the same replicate, the most frequent finding over the seeds, and the side
// it puts the change on (the workload's lengths or rate, or the service: the host's decode and
// prefill speed at matched load, the configuration). With fail-on-alarm, the Bedrock OTPS alarm of
// those diagnoses is a line of its own (`otps_alarm`), a regression when it fires in most seeds.
// The text, JSON and JUnit reports of the outcome are check_report.hpp's.
// Promises: the lines depend only on the spec, the baseline and the runs (never on threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/check.hpp"
#include "analysis/diagnose.hpp"
#include "analysis/run_spec.hpp"

namespace servesim {

// A scenario of a spec: its RunSpec (checked before anything runs) and how many seeds it runs.
struct CheckScenario {
  RunSpec spec;
  int64_t num_seeds = 1;
};

// The name of scenario NAME's run of replicate K (seed SEED) in the baseline file: NAME for the
// first, NAME@seed=SEED for the others.
std::string check_run_name(const std::string& name, size_t k, int64_t seed);

// Each scenario's baseline replicates, in SPEC's order; empty for a scenario the baseline does not
// hold (new). Error naming the baseline when the file does not exist.
std::vector<Replicates> read_check_baselines(const CheckSpec& spec);

// Every scenario's runs, one per seed, and their JSON summaries (the current side of the gate).
struct CheckRuns {
  std::vector<std::vector<PointRun>> runs;  // [scenario][replicate]
  std::vector<Replicates> current;          // [scenario]
};

// Every (scenario, seed) of SCENARIOS (SPEC's, in its order) simulated on JOBS threads; an Error
// names the spec and the scenario.
CheckRuns run_check_scenarios(const CheckSpec& spec, const std::vector<CheckScenario>& scenarios,
                              int jobs, Inputs& inputs);

// --update: RUNS written as SPEC's baseline (every seed's run, without steps), after checking that
// every tolerance names a number of their summaries. Returns the runs written.
size_t write_check_baseline(const CheckSpec& spec, const CheckRuns& runs);

// What a scenario's regression comes from: diagnose's findings over the seeds (finding -> runs),
// the most frequent finding, the side it puts the change on (workload, service or neither) and
// its headline.
struct CheckAttribution {
  std::map<std::string, size_t> findings;
  std::string finding, side, headline;
  size_t runs = 0;
  bool empty() const { return runs == 0; }
  // "cause (diagnose over N runs: rate 2, ...): workload, rate: HEADLINE".
  std::string text() const;
};
CheckAttribution attribute_check(const std::vector<Diagnosis>& diagnoses);

// diagnose on each seed's current run (RUNS, with CURRENT's recorded configuration) against the
// baseline's run of the same replicate; a pair diagnose cannot judge (no completed request in a
// log) is left out.
std::vector<Diagnosis> diagnose_replicates(const CheckSpec& spec, const std::string& name,
                                           const Replicates& baseline, const Replicates& current,
                                           const std::vector<PointRun>& runs);

// fail-on-alarm: scenario NAME's `otps_alarm` line over DIAGNOSES (a regression when the alarm
// fails in most of them; ANY: an excused firing fails too), or, for a scenario the baseline
// lacks, a new one.
CheckLine otps_alarm_line(const std::string& name, bool any,
                          const std::vector<Diagnosis>& diagnoses);
CheckLine new_otps_alarm_line(const std::string& name);

// The gate's outcome: every line (each scenario's tolerances, `overloaded`, `otps_alarm`), with
// a regression's cause in its note; each scenario's configuration changes from its baseline
// (config_diff.hpp) and its cause.
struct CheckOutcome {
  std::vector<CheckLine> lines;
  std::map<std::string, std::vector<std::string>> changes;
  std::map<std::string, CheckAttribution> causes;
  bool replicated = false;  // some line was judged on an interval
  int regressions = 0;
};

// Every scenario of SPEC judged: BASELINES (read_check_baselines) against RUNS.
CheckOutcome judge_check(const CheckSpec& spec, const std::vector<Replicates>& baselines,
                         const CheckRuns& runs);

}  // namespace servesim
