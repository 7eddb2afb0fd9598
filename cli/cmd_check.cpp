// `servesim check SPEC.ini [--update]`: the CI gate (analysis/check.hpp). Runs the spec's
// scenarios in parallel, prints baseline / current / change / tolerance / verdict, and exits 1
// on a regression; --update rewrites the baseline.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "analysis/check.hpp"
#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/parallel.hpp"

namespace servesim::cli {

namespace {

const char* kCheckHelp =
    "usage: servesim check SPEC.ini [--update] [--jobs N]\n"
    "\n"
    "The CI gate. SPEC names a baseline results file, tolerances per summary metric and\n"
    "scenarios (each a `servesim run` configuration). check runs the scenarios, prints baseline\n"
    "vs current vs tolerance, and exits 1 when a metric moved beyond its tolerance in the bad\n"
    "direction, 0 otherwise (2 for bad input). --update runs them and rewrites the baseline.\n"
    "\n"
    "  baseline = check-baseline.h5   # relative to SPEC's folder\n"
    "  model = llama-3.1-8b           # top-level run flags apply to every scenario\n"
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
    "direction is a regression. Metric names are paths in the JSON summary (`run --json`).\n";

// Each scenario's RunSpec: the section's flags, then the top level's where the section does not
// set them; checked before anything runs.
std::vector<RunSpec> scenario_specs(const CheckSpec& c, Inputs& inputs) {
  std::vector<RunSpec> specs;
  for (const std::string& name : c.scenarios) {
    std::vector<std::pair<std::string, std::string>> run;
    std::map<std::string, std::string> own;
    add_ini_run_flags(c.path, "scenario." + name, {}, run, own);
    add_ini_run_flags(c.path, "", {"baseline"}, run, own);
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
      specs.push_back(spec_from_flags(run));
      check_point(specs.back(), inputs);
    } catch (const Error& e) {
      throw Error(c.path, 0, "scenario." + name, e.what());
    }
  }
  return specs;
}

// The baseline summary of each scenario; null for a scenario the baseline does not hold (new).
std::vector<nlohmann::ordered_json> read_baselines(const CheckSpec& c) {
  std::error_code ec;
  if (!std::filesystem::exists(c.baseline, ec)) {
    throw Error(c.baseline, 0, "",
                "no baseline yet: run `servesim check " + c.path + " --update` and commit it");
  }
  const std::vector<std::string> held = results_runs(c.baseline);
  std::vector<nlohmann::ordered_json> out;
  for (const std::string& name : c.scenarios) {
    const bool known = std::find(held.begin(), held.end(), name) != held.end();
    out.push_back(known ? read_results_summary(c.baseline, name) : nlohmann::ordered_json());
  }
  return out;
}

// V in SPEC, or "-" when undefined.
std::string number(double v, const char* spec) {
  return std::isfinite(v) ? format(spec, v) : "-";
}

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// The table and the last line; returns the number of regressions.
int print_check(std::ostream& out, const CheckSpec& c, const std::vector<CheckLine>& lines) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-20s %-32s %12s %12s %9s %9s  %s\n", "scenario", "metric",
                "baseline", "current", "change", "tolerance", "verdict");
  out << buf;
  int regressions = 0;
  std::set<std::string> fresh;
  for (const CheckLine& l : lines) {
    regressions += is_regression(l.verdict);
    if (l.verdict == CheckVerdict::kNew) fresh.insert(l.scenario);
    std::snprintf(buf, sizeof buf, "%-20s %-32s %12s %12s %9s %9s  %s", l.scenario.c_str(),
                  l.tolerance->metric.c_str(), number(l.baseline, "%.4g").c_str(),
                  number(l.current, "%.4g").c_str(), number(l.change, "%+.1f%%").c_str(),
                  l.tolerance->text.c_str(), verdict_text(l.verdict));
    out << buf << (l.note.empty() ? "" : ": " + l.note) << "\n";
  }
  out << (regressions ? "check: FAILED, " + plural(size_t(regressions), "regression")
                      : std::string("check: passed"))
      << " (" << plural(c.scenarios.size(), "scenario") << ", "
      << plural(c.tolerances.size(), "tolerance");
  if (!fresh.empty()) out << "; " << fresh.size() << " new: run check --update to record";
  out << ")\n";
  return regressions;
}

}  // namespace

int cmd_check(int argc, const char* const* argv, std::ostream& out) {
  SplitArgs s = split_args(argc, argv, {"jobs"}, {"help", "update"});
  if (s.own.count("help")) {
    out << kCheckHelp;
    return 0;
  }
  if (!s.run.empty()) throw Error(s.run[0].first, "not an option of check (flags go in SPEC)");
  if (s.positional.size() != 1) throw Error("check", "expects one SPEC.ini");
  const bool update = s.own.count("update") > 0;
  const int jobs = get_jobs(s.own);
  const CheckSpec c = read_check_spec(s.positional[0], update);
  Inputs inputs;
  const std::vector<RunSpec> specs = scenario_specs(c, inputs);
  if (update) {  // the baseline must not overwrite the spec or a scenario's files
    PathPlan paths;
    paths.input("spec", c.path);
    for (const RunSpec& spec : specs)
      add_run_inputs(paths, spec);
    paths.output("baseline", c.baseline);
    paths.check();
  }
  const std::vector<nlohmann::ordered_json> baselines =
      update ? std::vector<nlohmann::ordered_json>() : read_baselines(c);
  std::vector<PointRun> runs(specs.size());
  parallel_for(
      specs.size(), jobs, "check",
      [&](size_t i) {
        try {
          runs[i] = run_point(specs[i], inputs);
        } catch (const Error& e) {
          throw Error(c.path, 0, "scenario." + c.scenarios[i], e.what());
        }
      },
      [](size_t) {});
  if (update) {
    for (const PointRun& run : runs)
      check_tolerance_metrics(c, summary_json(run.run, run.workload));
    std::vector<NamedRun> named;
    for (size_t i = 0; i < runs.size(); ++i)
      named.push_back({c.scenarios[i], &runs[i].run, &runs[i].workload});
    ResultsOptions o;
    o.steps = false;
    write_results_h5(c.baseline, named, runs[0].workload, o);
    out << "check: baseline " << c.baseline << " updated with "
        << plural(c.scenarios.size(), "scenario") << "\n";
    return 0;
  }
  std::vector<CheckLine> lines;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto current = summary_json(runs[i].run, runs[i].workload);
    for (CheckLine& l : check_scenario(c, c.scenarios[i], baselines[i], current))
      lines.push_back(l);
  }
  return print_check(out, c, lines) ? 1 : 0;
}

}  // namespace servesim::cli
