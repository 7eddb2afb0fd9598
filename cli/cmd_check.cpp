// `servesim check SPEC.ini [--update] [--json F] [--junit F]`: the CI gate (analysis/check.hpp).
// Runs the spec's scenarios (each over its seeds) in parallel, prints baseline / current / change
// and its interval / tolerance / verdict, and exits 1 on a regression; --update rewrites the
// baseline with every seed's run. --json and --junit write the same lines for CI systems.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/check.hpp"
#include "analysis/diagnose.hpp"
#include "analysis/diagnose_verdict_text.hpp"
#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "analysis/windows.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/parallel.hpp"

namespace servesim::cli {

namespace {

using nlohmann::ordered_json;

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

// A scenario: its run flags and how many seeds it runs.
struct Scenario {
  RunSpec spec;
  int64_t num_seeds = 1;
};

// Each scenario's RunSpec and seeds: the section's flags, then the top level's where the section
// does not set them; checked before anything runs.
std::vector<Scenario> scenario_specs(const CheckSpec& c, Inputs& inputs) {
  std::vector<Scenario> out;
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
      Scenario sc;
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

// The name of scenario NAME's run of replicate K in the baseline file.
std::string run_name(const std::string& name, size_t k, int64_t seed) {
  return k == 0 ? name : name + "@seed=" + std::to_string(seed);
}

// Each scenario's baseline replicates; empty for a scenario the baseline does not hold (new).
std::vector<Replicates> read_baselines(const CheckSpec& c) {
  std::error_code ec;
  if (!std::filesystem::exists(c.baseline, ec)) {
    throw Error(c.baseline, 0, "",
                "no baseline yet: run `servesim check " + c.path + " --update` and commit it");
  }
  const std::vector<std::string> held = results_runs(c.baseline);
  std::vector<Replicates> out;
  for (const std::string& name : c.scenarios) {
    Replicates r;
    for (const std::string& run : held) {
      if (run != name && run.rfind(name + "@seed=", 0) != 0) continue;
      r.summaries.push_back(read_results_summary(c.baseline, run));
      r.seeds.push_back(summary_seed(r.summaries.back()));
    }
    out.push_back(std::move(r));
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

// A line's interval as a change in percent of the baseline mean ("[-3.1%, +8.2%]"), or in the
// metric's unit when the baseline is 0; "-" without one.
std::string interval_text(const CheckLine& l) {
  const ChangeInterval& i = l.interval;
  if (i.test == ChangeTest::kSingle || !std::isfinite(i.low)) return "-";
  if (i.baseline != 0 && std::isfinite(i.baseline)) {
    const double b = std::abs(i.baseline);
    return format("[%+.1f%%, %+.1f%%]", i.low / b * 100, i.high / b * 100);
  }
  return format("[%+.3g, %+.3g]", i.low, i.high);
}

// The table and the last line; returns the number of regressions.
int print_check(std::ostream& out, const CheckSpec& c, const std::vector<CheckLine>& lines,
                bool replicated) {
  out << format("%-20s %-32s %12s %12s %9s %20s %9s  %s\n", "scenario", "metric", "baseline",
                "current", "change", "interval", "tolerance", "verdict");
  int regressions = 0;
  std::set<std::string> fresh;
  for (const CheckLine& l : lines) {
    regressions += is_regression(l.verdict);
    if (l.verdict == CheckVerdict::kNew) fresh.insert(l.scenario);
    out << format("%-20s %-32s %12s %12s %9s %20s %9s  %s", l.scenario.c_str(), l.metric.c_str(),
                  number(l.interval.baseline, "%.4g").c_str(),
                  number(l.interval.current, "%.4g").c_str(), number(l.change, "%+.1f%%").c_str(),
                  interval_text(l).c_str(), l.tolerance.c_str(), verdict_text(l.verdict))
        << (l.note.empty() ? "" : ": " + l.note) << "\n";
  }
  if (replicated) {
    out << format(
        "(interval: the change of the mean, %.0f%% confidence; a regression is an "
        "interval wholly beyond the tolerance)\n",
        c.confidence * 100);
  } else {
    out << "(one run a side: noise is not estimated; give num-seeds = N for intervals)\n";
  }
  out << (regressions ? "check: FAILED, " + plural(size_t(regressions), "regression")
                      : std::string("check: passed"))
      << " (" << plural(c.scenarios.size(), "scenario") << ", "
      << plural(c.tolerances.size(), "tolerance");
  if (!fresh.empty()) out << "; " << fresh.size() << " new: run check --update to record";
  out << ")\n";
  return regressions;
}

// --json: every line with its numbers, and each scenario's configuration changes.
std::string check_json(const CheckSpec& c, const std::vector<CheckLine>& lines,
                       const std::map<std::string, std::vector<std::string>>& changes,
                       const ordered_json& causes, int regressions) {
  ordered_json j = {{"spec", c.path},
                    {"baseline", c.baseline},
                    {"confidence_level", c.confidence},
                    {"passed", regressions == 0},
                    {"regressions", regressions}};
  j["lines"] = ordered_json::array();
  for (const CheckLine& l : lines) {
    j["lines"].push_back({{"scenario", l.scenario},
                          {"metric", l.metric},
                          {"tolerance", l.tolerance},
                          {"baseline", json_number(l.interval.baseline)},
                          {"current", json_number(l.interval.current)},
                          {"change_pct", json_number(l.change)},
                          {"interval", {json_number(l.interval.low), json_number(l.interval.high)}},
                          {"test", change_test_name(l.interval.test)},
                          {"n_baseline", l.interval.n_baseline},
                          {"n_current", l.interval.n_current},
                          {"verdict", verdict_text(l.verdict)},
                          {"regression", is_regression(l.verdict)},
                          {"note", l.note}});
  }
  j["config_changes"] = changes;
  j["causes"] = causes;
  return json_text(j, 2) + "\n";
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // XML 1.0 allows no control characters but tab and line breaks.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
          out += '?';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

// --junit: one test case per scenario and metric (classname the scenario); a regression is a
// failure, a new scenario skipped.
std::string check_junit(const std::vector<CheckLine>& lines) {
  size_t failures = 0, skipped = 0;
  std::string cases;
  for (const CheckLine& l : lines) {
    const std::string text =
        format("baseline %s, current %s, change %s, interval %s (%s), tolerance %s: %s",
               number(l.interval.baseline, "%.6g").c_str(),
               number(l.interval.current, "%.6g").c_str(), number(l.change, "%+.2f%%").c_str(),
               interval_text(l).c_str(), change_test_name(l.interval.test), l.tolerance.c_str(),
               verdict_text(l.verdict)) +
        (l.note.empty() ? "" : "; " + l.note);
    cases += "    <testcase classname=\"" + xml_escape(l.scenario) + "\" name=\"" +
             xml_escape(l.metric) + "\">\n";
    if (is_regression(l.verdict)) {
      ++failures;
      cases += "      <failure message=\"" + xml_escape(verdict_text(l.verdict)) + "\">" +
               xml_escape(text) + "</failure>\n";
    } else if (l.verdict == CheckVerdict::kNew) {
      ++skipped;
      cases += "      <skipped message=\"no baseline yet\"/>\n";
    }
    cases += "      <system-out>" + xml_escape(text) + "</system-out>\n    </testcase>\n";
  }
  return format(
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite "
             "name=\"servesim check\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
             "skipped=\"%zu\">\n",
             lines.size(), failures, skipped) +
         cases + "  </testsuite>\n</testsuites>\n";
}

// diagnose on each seed's current run against the baseline's run of the same replicate (the
// current run's log carries its recorded configuration, so that diagnose names what changed).
// A pair diagnose cannot judge (no completed request in a log) is left out.
std::vector<Diagnosis> diagnose_replicates(const CheckSpec& c, const std::string& name,
                                           const Replicates& baseline, const Replicates& current,
                                           const std::vector<PointRun>& runs) {
  std::vector<Diagnosis> out;
  for (size_t k = 0; k < runs.size() && k < baseline.summaries.size(); ++k) {
    const RequestLog base = read_results_log(c.baseline, run_name(name, k, baseline.seeds[k]));
    RequestLog cur = request_log(runs[k].run);
    if (k < current.summaries.size() && current.summaries[k].contains("config")) {
      cur.config = current.summaries[k]["config"];
    }
    try {
      out.push_back(diagnose(base, cur, DiagnoseOptions{}));
    } catch (const Error&) {
      continue;  // nothing completed on a side: the tolerances say so
    }
  }
  return out;
}

// fail-on-alarm: the Bedrock OTPS alarm on each seed's current run against the baseline's run of
// the same replicate; a regression when it fires in most of them.
CheckLine alarm_line(const std::string& name, bool any, const std::vector<Diagnosis>& diagnoses) {
  CheckLine l;
  l.scenario = name;
  l.metric = "otps_alarm";
  l.tolerance = "no alarm";
  l.change = NAN;
  size_t fired = 0, windows = 0, excused = 0;
  const size_t compared = diagnoses.size();
  std::string first;
  for (const Diagnosis& d : diagnoses) {
    windows = std::max(windows, d.windows.size());
    if (!d.alarm_fails(any)) {
      excused += d.alarm_excused();
      continue;
    }
    ++fired;
    if (first.empty()) {
      first = format("windows %zu-%zu of %.0f s below %.4g tok/s", d.firings.front().first,
                     d.firings.front().last, d.options.period_s, d.alarm_threshold);
    }
  }
  l.interval.baseline = 0;
  l.interval.current = compared ? double(fired) / double(compared) : NAN;
  if (2 * fired > compared) l.verdict = CheckVerdict::kRegressed;
  l.note = format("fired in %zu of %zu runs", fired, compared) +
           (first.empty() ? "" : " (" + first + ")");
  if (excused) {
    l.note += format(
        "; %zu more fired but were excused: their verdict puts the OTPS drop on the "
        "workload or noise (fail-on-alarm = any fails on them)",
        excused);
  }
  if (windows < 3) {
    l.note += format("; %zu windows of 300 s: the alarm needs 3 breaching of 5", windows);
  }
  return l;
}

// fail-on-alarm on a scenario the baseline lacks: new, as its other lines.
CheckLine new_alarm_line(const std::string& name) {
  CheckLine l;
  l.scenario = name;
  l.metric = "otps_alarm";
  l.tolerance = "no alarm";
  l.change = NAN;
  l.verdict = CheckVerdict::kNew;
  return l;
}

// Which side a diagnose finding puts a change on.
const char* side_of(Finding f) {
  switch (f) {
    case Finding::kInputLength:
    case Finding::kOutputLength:
    case Finding::kRate:
      return "workload";
    case Finding::kThroughput:
    case Finding::kTtft:
    case Finding::kConfig:
      return "service";
    case Finding::kNoise:
    case Finding::kNone:
      break;
  }
  return "neither";
}

// What a scenario's regression comes from (issue 24: attribution in every verdict): diagnose's
// findings over the seeds, the side the most frequent one puts it on (the workload's lengths or
// rate, or the service: the host's decode and prefill speed at matched load, the configuration),
// and that finding's headline.
struct Attribution {
  std::map<std::string, size_t> findings;  // finding -> runs
  std::string finding, side, headline;     // the most frequent finding
  size_t runs = 0;
  bool empty() const { return runs == 0; }
  std::string text() const {
    std::string counts;
    for (const auto& [f, n] : findings)
      counts += (counts.empty() ? "" : ", ") + f + format(" %zu", n);
    return format("cause (diagnose over %zu runs: %s): %s, %s: %s", runs, counts.c_str(),
                  side.c_str(), finding.c_str(), headline.c_str());
  }
};

Attribution attribute(const std::vector<Diagnosis>& diagnoses) {
  Attribution a;
  a.runs = diagnoses.size();
  for (const Diagnosis& d : diagnoses)
    ++a.findings[finding_name(d.verdict.finding)];
  size_t best = 0;
  for (const Diagnosis& d : diagnoses) {
    const size_t n = a.findings[finding_name(d.verdict.finding)];
    if (n > best) {
      best = n;
      a.finding = finding_name(d.verdict.finding);
      a.side = side_of(d.verdict.finding);
      a.headline = verdict_text(d.verdict).headline;
    }
  }
  return a;
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
  const std::vector<Scenario> scenarios = scenario_specs(c, inputs);
  PathPlan paths;  // the baseline and reports must not overwrite the spec or a scenario's files
  paths.input("spec", c.path);
  for (const Scenario& sc : scenarios)
    add_run_inputs(paths, sc.spec);
  if (update) {
    paths.output("baseline", c.baseline);
  } else {
    paths.input("baseline", c.baseline);
  }
  paths.output("json", json_out);
  paths.output("junit", junit_out);
  paths.check();
  const std::vector<Replicates> baselines = update ? std::vector<Replicates>() : read_baselines(c);
  std::string by_default;  // the scenarios naming no scheduler
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (default_scheduler(scenarios[i].spec)) {
      by_default += (by_default.empty() ? "" : ", ") + c.scenarios[i];
    }
  }
  if (!by_default.empty()) out << by_default << ": " << kDefaultSchedulerNote << "\n";
  // Every (scenario, seed) is one task.
  std::vector<std::pair<size_t, int64_t>> tasks;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    for (int64_t k = 0; k < scenarios[i].num_seeds; ++k)
      tasks.emplace_back(i, k);
  }
  std::vector<std::vector<PointRun>> runs(scenarios.size());
  for (size_t i = 0; i < scenarios.size(); ++i)
    runs[i].resize(size_t(scenarios[i].num_seeds));
  parallel_for(
      tasks.size(), jobs, "check",
      [&](size_t t) {
        const auto [i, k] = tasks[t];
        try {
          runs[i][size_t(k)] = run_point(with_seed(scenarios[i].spec, k), inputs);
        } catch (const Error& e) {
          throw Error(c.path, 0, "scenario." + c.scenarios[i], e.what());
        }
      },
      [](size_t) {});
  std::vector<Replicates> current(scenarios.size());
  for (size_t i = 0; i < scenarios.size(); ++i) {
    for (const PointRun& run : runs[i]) {
      current[i].summaries.push_back(summary_json(run.run, run.workload));
      current[i].seeds.push_back(summary_seed(current[i].summaries.back()));
    }
  }
  if (update) {
    for (const Replicates& r : current) {
      for (const ordered_json& summary : r.summaries)
        check_tolerance_metrics(c, summary);
    }
    std::vector<NamedRun> named;
    for (size_t i = 0; i < runs.size(); ++i) {
      for (size_t k = 0; k < runs[i].size(); ++k) {
        named.push_back({run_name(c.scenarios[i], k, current[i].seeds[k]), &runs[i][k].run,
                         &runs[i][k].workload});
      }
    }
    ResultsOptions o;
    o.steps = false;
    write_results_h5(c.baseline, named, runs[0][0].workload, o);
    out << "check: baseline " << c.baseline << " updated with "
        << plural(c.scenarios.size(), "scenario") << " (" << plural(named.size(), "run") << ")\n";
    return 0;
  }
  std::vector<CheckLine> lines;
  std::map<std::string, std::vector<std::string>> changes;
  std::map<std::string, Attribution> causes;
  bool replicated = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (CheckLine& l : check_scenario(c, c.scenarios[i], baselines[i], current[i])) {
      replicated = replicated || l.interval.test != ChangeTest::kSingle;
      lines.push_back(l);
    }
    const bool regressed = std::any_of(lines.begin(), lines.end(), [&](const CheckLine& l) {
      return l.scenario == c.scenarios[i] && is_regression(l.verdict);
    });
    std::vector<Diagnosis> diagnoses;
    if (!baselines[i].empty() && (c.fail_on_alarm || regressed)) {
      diagnoses = diagnose_replicates(c, c.scenarios[i], baselines[i], current[i], runs[i]);
    }
    if (c.fail_on_alarm) {
      lines.push_back(baselines[i].empty()
                          ? new_alarm_line(c.scenarios[i])
                          : alarm_line(c.scenarios[i], c.fail_on_any_alarm, diagnoses));
    }
    const Attribution cause = attribute(diagnoses);
    if (!cause.empty()) {
      for (CheckLine& l : lines) {
        if (l.scenario != c.scenarios[i] || !is_regression(l.verdict)) continue;
        l.note += (l.note.empty() ? "" : "; ") + cause.text();
      }
      causes[c.scenarios[i]] = cause;
    }
    if (!baselines[i].empty()) {
      changes[c.scenarios[i]] =
          config_changes(baselines[i].summaries.front(), current[i].summaries.front());
    }
  }
  const int regressions = print_check(out, c, lines, replicated);
  for (const auto& [name, list] : changes) {
    if (list.empty()) continue;
    constexpr size_t kShown = 6;  // the rest are in --json's config_changes
    std::string joined;
    for (size_t k = 0; k < list.size() && k < kShown; ++k)
      joined += (joined.empty() ? "" : "; ") + list[k];
    if (list.size() > kShown)
      joined += format("; and %zu more (--json lists them)", list.size() - kShown);
    out << "WARNING: " << name << ": the configuration differs from the baseline's: " << joined
        << "\n";
  }
  for (const auto& [name, cause] : causes) {
    if (regressions) out << name << ": " << cause.text() << "\n";
  }
  ordered_json causes_json = ordered_json::object();
  for (const auto& [name, cause] : causes) {
    causes_json[name] = {{"runs", cause.runs},
                         {"findings", cause.findings},
                         {"finding", cause.finding},
                         {"side", cause.side},
                         {"headline", cause.headline}};
  }
  if (!json_out.empty()) {
    write_text_file(json_out, check_json(c, lines, changes, causes_json, regressions));
  }
  if (!junit_out.empty()) write_text_file(junit_out, check_junit(lines));
  return regressions ? 1 : 0;
}

}  // namespace servesim::cli
