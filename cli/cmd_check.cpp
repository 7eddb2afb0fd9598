// `servesim check SPEC.ini [--update] [--json F] [--junit F]`: the CI gate (analysis/check.hpp).
// Runs the spec's scenarios (each over its seeds) in parallel, prints baseline / current / change
// and its interval / tolerance / verdict, and exits 1 on a regression; --update rewrites the
// baseline with every seed's run. --json and --junit write the same lines for CI systems.
#include <cstdint>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/check.hpp"
#include "analysis/check_report.hpp"
#include "analysis/check_run.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"
#include "util/output_file.hpp"
#include "util/text_input.hpp"

namespace servesim::cli {

namespace {

const char* kCheckHelp =
    "usage: servesim check SPEC.ini [--update] [--jobs N] [--json F] [--junit F]\n"
    "\n"
    "The CI gate. SPEC names a baseline results file, tolerances per summary metric and\n"
    "scenarios (each a `servesim run` configuration). check runs the scenarios, prints baseline\n"
    "vs current vs tolerance, and exits 1 when a metric moved beyond its tolerance in the bad\n"
    "direction, 0 otherwise (2 for bad input). --update runs them and rewrites the baseline.\n"
    "\n"
    "  baseline = check-baseline.h5   # relative to SPEC's folder\n"
    "  model = llama-3.1-8b           # top-level run flags apply to every scenario\n"
    "  num-seeds = 10                 # replicates: seeds SEED .. SEED+9 (also per scenario)\n"
    "  confidence-level = 0.95        # of each change's interval\n"
    "  fail-on-alarm = true           # the Bedrock OTPS alarm is a check (otps_alarm), unless\n"
    "                                 # diagnose puts the drop on the workload or noise (any:\n"
    "                                 # whenever it fires)\n"
    "  [tolerance]\n"
    "  ttft_ms.p50 = +10%             # may rise at most 10%\n"
    "  itl_ms.p99 = +5%\n"
    "  otps.p50 = -5%                 # may fall at most 5%\n"
    "  throughput.output_tokens_per_s = -2%\n"
    "  [scenario.chat]                # a scenario named chat\n"
    "  scheduler = chunked:512\n"
    "  request-rate = 8\n"
    "\n"
    "A tolerance is +X% / -X% of the baseline or +X / -X in the metric's unit; its sign says "
    "which\n"
    "direction is a regression. Metric names are paths in the JSON summary (`run --json`).\n"
    "With replicates each change is judged on its mean's confidence interval (paired t when\n"
    "both sides ran the same seeds, Welch t when not): a regression is an interval wholly beyond\n"
    "the tolerance. --json F and --junit F (one test case per scenario and metric) write the\n"
    "lines for CI systems.\n";

const std::set<std::string> kTopLevelOwn = {"baseline", "num-seeds", "confidence-level",
                                            "fail-on-alarm"};

// Each scenario's RunSpec and seeds: the section's flags, then the top level's where the section
// does not set them; checked before anything runs.
std::vector<CheckScenario> scenario_specs(const CheckSpec& c, Inputs& inputs) {
  std::vector<CheckScenario> out;
  for (const std::string& name : c.scenarios) {
    std::vector<std::pair<std::string, std::string>> run;
    std::map<std::string, std::string> own;
    // The scenario's keys first; `key =` there unsets the top level's key for it.
    IniFlagLines where;
    add_ini_run_flags(c.path, "scenario." + name, {"num-seeds"}, run, own, false, &where);
    add_ini_run_flags(c.path, "", kTopLevelOwn, run, own, false, &where);
    // Files named in a spec are relative to the spec, as its baseline is.
    const std::filesystem::path dir = std::filesystem::path(c.path).parent_path();
    for (auto& [flag, value] : run) {
      if (!run_flag_is_path(flag)) continue;
      // --calibration a.ini,b.ini and --servegen a.csv,b.csv name several files.
      std::string resolved;
      for (const std::string& item :
           run_flag_is_list(flag) ? split_list({value}) : std::vector<std::string>{value}) {
        const std::filesystem::path p(item);
        resolved.append(resolved.empty() ? "" : ",")
            .append(p.is_relative() ? (dir / p).string() : item);
      }
      value = resolved;
    }
    try {
      CheckScenario sc;
      sc.spec = spec_from_flags(run);
      if (own.count("num-seeds")) {
        int64_t n = 0;
        if (!parse_int(own["num-seeds"], n) || n < 1 || n > 1000) {
          throw Error("num-seeds", "must be a whole number in [1, 1000]");
        }
        sc.num_seeds = n;
        sc.spec.num_seeds.value() = n;  // checked with --seed as run checks it
      }
      // A timed trace's replicates are drawn from its seeds (trace-replicates, bootstrap by
      // default: traces/resample.hpp), so num-seeds stays on the spec that runs each one.
      check_point(sc.spec, inputs);
      out.push_back(sc);
    } catch (const Error& e) {
      // A flag's error names the spec's line that set it (the scenario's, or the top level's).
      const auto line = where.line.find(e.field());
      if (e.file().empty() && line != where.line.end()) {
        throw Error(c.path, line->second, e.field(), "scenario " + name + ": " + e.reason());
      }
      throw Error(c.path, 0, "scenario." + name, e.what());
    }
  }
  return out;
}

}  // namespace

int cmd_check(int argc, const char* const* argv, std::ostream& out) {
  SplitArgs s = split_args(argc, argv, {"jobs", "json", "junit"}, {"help", "update"});
  if (s.own.count("help")) {
    out << kCheckHelp;
    return 0;
  }
  if (!s.run.empty()) throw Error(s.run[0].first, "not an option of check (flags go in SPEC)");
  if (s.positional.size() != 1) throw Error("check", "expects one SPEC.ini");
  const bool update = s.own.count("update") > 0;
  const int jobs = get_jobs(s.own);
  const std::string json_out = get(s.own, "json"), junit_out = get(s.own, "junit");
  if (update && (!json_out.empty() || !junit_out.empty())) {
    throw Error(json_out.empty() ? "junit" : "json", "reports a check: drop --update");
  }
  const CheckSpec c = read_check_spec(s.positional[0], update);
  Inputs inputs;
  const std::vector<CheckScenario> scenarios = scenario_specs(c, inputs);
  PathPlan paths;  // the baseline and reports must not overwrite the spec or a scenario's files
  paths.input("spec", c.path);
  for (const CheckScenario& sc : scenarios)
    add_run_inputs(paths, sc.spec);
  if (update) {
    paths.output("baseline", c.baseline);
  } else {
    paths.input("baseline", c.baseline);
  }
  paths.output("json", json_out);
  paths.output("junit", junit_out);
  paths.check();
  const std::vector<Replicates> baselines =
      update ? std::vector<Replicates>() : read_check_baselines(c);
  std::string by_default;  // the scenarios naming no scheduler
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (default_scheduler(scenarios[i].spec)) {
      by_default += (by_default.empty() ? "" : ", ") + c.scenarios[i];
    }
  }
  if (!by_default.empty()) out << by_default << ": " << kDefaultSchedulerNote << "\n";
  const CheckRuns runs = run_check_scenarios(c, scenarios, jobs, inputs);
  if (update) {
    out << check_updated_text(c, write_check_baseline(c, runs));
    return 0;
  }
  const CheckOutcome outcome = judge_check(c, baselines, runs);
  out << check_text(c, outcome);
  if (!json_out.empty()) write_text_file(json_out, check_json(c, outcome));
  if (!junit_out.empty()) write_text_file(junit_out, check_junit(outcome.lines));
  return outcome.regressions ? 1 : 0;
}

}  // namespace servesim::cli
