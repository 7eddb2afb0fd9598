// Running the CI gate's scenarios, reading its baseline, judging every scenario and attributing
// a regression (check_run.hpp).
#include "analysis/check_run.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "analysis/config_diff.hpp"
#include "analysis/diagnose_verdict_text.hpp"
#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "analysis/windows.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/parallel.hpp"

namespace servesim {

namespace {

// Which side a diagnose finding puts a change on.
const char* finding_side(Finding f) {
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

}  // namespace

std::string check_run_name(const std::string& name, size_t k, int64_t seed) {
  return k == 0 ? name : name + "@seed=" + std::to_string(seed);
}

std::vector<Replicates> read_check_baselines(const CheckSpec& c) {
  std::error_code ec;
  if (!std::filesystem::exists(c.baseline, ec)) {
    throw Error(
        c.baseline, 0, "",
        "no baseline yet: run `servesim check " + c.path + " {{check.update}}` and commit it");
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

CheckRuns run_check_scenarios(const CheckSpec& c, const std::vector<CheckScenario>& scenarios,
                              int jobs, Inputs& inputs) {
  // Every (scenario, seed) is one task.
  std::vector<std::pair<size_t, int64_t>> tasks;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    for (int64_t k = 0; k < scenarios[i].num_seeds; ++k)
      tasks.emplace_back(i, k);
  }
  CheckRuns out;
  std::vector<std::vector<PointRun>>& runs = out.runs;
  runs.resize(scenarios.size());
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
  std::vector<Replicates>& current = out.current;
  current.resize(scenarios.size());
  for (size_t i = 0; i < scenarios.size(); ++i) {
    for (const PointRun& run : runs[i]) {
      current[i].summaries.push_back(summary_json(run.run, run.workload));
      current[i].seeds.push_back(summary_seed(current[i].summaries.back()));
    }
  }
  return out;
}

size_t write_check_baseline(const CheckSpec& c, const CheckRuns& done) {
  const std::vector<std::vector<PointRun>>& runs = done.runs;
  const std::vector<Replicates>& current = done.current;
  for (const Replicates& r : current) {
    for (const nlohmann::ordered_json& summary : r.summaries)
      check_tolerance_metrics(c, summary);
  }
  std::vector<NamedRun> named;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t k = 0; k < runs[i].size(); ++k) {
      named.push_back({check_run_name(c.scenarios[i], k, current[i].seeds[k]), &runs[i][k].run,
                       &runs[i][k].workload});
    }
  }
  ResultsOptions o;
  o.steps = false;
  write_results_h5(c.baseline, named, runs[0][0].workload, o);
  return named.size();
}

std::string CheckAttribution::text() const {
  std::string counts;
  for (const auto& [f, n] : findings)
    counts += (counts.empty() ? "" : ", ") + f + format(" %zu", n);
  return format("cause (diagnose over %zu runs: %s): %s, %s: %s", runs, counts.c_str(),
                side.c_str(), finding.c_str(), headline.c_str());
}

CheckAttribution attribute_check(const std::vector<Diagnosis>& diagnoses) {
  CheckAttribution a;
  a.runs = diagnoses.size();
  for (const Diagnosis& d : diagnoses)
    ++a.findings[finding_name(d.verdict.finding)];
  size_t best = 0;
  for (const Diagnosis& d : diagnoses) {
    const size_t n = a.findings[finding_name(d.verdict.finding)];
    if (n > best) {
      best = n;
      a.finding = finding_name(d.verdict.finding);
      a.side = finding_side(d.verdict.finding);
      a.headline = verdict_text(d.verdict).headline;
    }
  }
  return a;
}

std::vector<Diagnosis> diagnose_replicates(const CheckSpec& c, const std::string& name,
                                           const Replicates& baseline, const Replicates& current,
                                           const std::vector<PointRun>& runs) {
  std::vector<Diagnosis> out;
  for (size_t k = 0; k < runs.size() && k < baseline.summaries.size(); ++k) {
    const RequestLog base =
        read_results_log(c.baseline, check_run_name(name, k, baseline.seeds[k]));
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

CheckLine otps_alarm_line(const std::string& name, bool any,
                          const std::vector<Diagnosis>& diagnoses) {
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

CheckLine new_otps_alarm_line(const std::string& name) {
  CheckLine l;
  l.scenario = name;
  l.metric = "otps_alarm";
  l.tolerance = "no alarm";
  l.change = NAN;
  l.verdict = CheckVerdict::kNew;
  return l;
}

CheckOutcome judge_check(const CheckSpec& c, const std::vector<Replicates>& baselines,
                         const CheckRuns& done) {
  const std::vector<std::vector<PointRun>>& runs = done.runs;
  const std::vector<Replicates>& current = done.current;
  CheckOutcome out;
  std::vector<CheckLine>& lines = out.lines;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (CheckLine& l : check_scenario(c, c.scenarios[i], baselines[i], current[i])) {
      out.replicated = out.replicated || l.interval.test != ChangeTest::kSingle;
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
                          ? new_otps_alarm_line(c.scenarios[i])
                          : otps_alarm_line(c.scenarios[i], c.fail_on_any_alarm, diagnoses));
    }
    const CheckAttribution cause = attribute_check(diagnoses);
    if (!cause.empty()) {
      for (CheckLine& l : lines) {
        if (l.scenario != c.scenarios[i] || !is_regression(l.verdict)) continue;
        l.note += (l.note.empty() ? "" : "; ") + cause.text();
      }
      out.causes[c.scenarios[i]] = cause;
    }
    if (!baselines[i].empty()) {
      out.changes[c.scenarios[i]] =
          config_changes(baselines[i].summaries.front(), current[i].summaries.front());
    }
  }
  for (const CheckLine& l : lines)
    out.regressions += is_regression(l.verdict);
  return out;
}

}  // namespace servesim
