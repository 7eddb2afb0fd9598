// `servesim diagnose BASELINE CURRENT`: split a latency change between two request logs (servesim
// results files or request log CSVs) into TTFT and decode, or into input length, output length
// and speed when the prompts changed, give the verdict, and replay the CloudWatch OTPS alarm over
// the current log (analysis/diagnose.hpp).
#include <ostream>
#include <string>
#include <vector>

#include "analysis/diagnose.hpp"
#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "cli/common.hpp"
#include "util/error.hpp"
#include "util/output_file.hpp"

namespace servesim::cli {

namespace {

struct DiagnoseArgs {
  std::string baseline, current, baseline_run, current_run, json, config;
  std::string latency_unit = "ms", time_unit = "s";
  CsvLogColumns columns;
  DiagnoseOptions options;
  bool windows = false, fail_on_alarm = false, fail_on_any_alarm = false;
};

po::options_description diagnose_options(DiagnoseArgs& a) {
  po::options_description in("inputs: a servesim results file (HDF5) or a request log CSV each");
  CsvLogColumns& c = a.columns;
  in.add_options()("baseline", po::value(&a.baseline)->required(),
                   "BASELINE: the log before the change (also the first positional argument)")(
      "current", po::value(&a.current)->required(),
      "CURRENT: the log after it (also the second positional argument)")(
      "baseline-run", po::value(&a.baseline_run),
      "run of a BASELINE results file that holds several")(
      "current-run", po::value(&a.current_run), "run of a CURRENT results file that holds several")(
      "col-arrival", po::value(&c.arrival)->default_value(c.arrival), "CSV column: arrival time")(
      "col-ttft", po::value(&c.ttft)->default_value(c.ttft),
      "CSV column: TimeToFirstToken (empty = not completed)")(
      "col-latency", po::value(&c.latency)->default_value(c.latency),
      "CSV column: InvocationLatency, arrival to last token (empty = not completed)")(
      "col-output", po::value(&c.output)->default_value(c.output), "CSV column: OutputTokenCount")(
      "col-input", po::value(&c.input)->default_value(c.input),
      "CSV column: input tokens (optional unless given)")(
      "col-queue", po::value(&c.queue)->default_value(c.queue),
      "CSV column: queueing delay (optional unless given)")(
      "latency-unit", po::value(&a.latency_unit)->default_value(a.latency_unit),
      "unit of the TTFT, latency and queue columns: ms | s")(
      "time-unit", po::value(&a.time_unit)->default_value(a.time_unit),
      "unit of the arrival column: s | ms (any origin, e.g. epoch)");
  po::options_description rule("decision rule and alarm");
  DiagnoseOptions& o = a.options;
  rule.add_options()("tolerance", po::value(&o.tolerance)->default_value(o.tolerance, "0.1"),
                     "relative change of a p50 considered significant")(
      "period-s", po::value(&o.period_s)->default_value(o.period_s, "300"),
      "alarm period in seconds (CloudWatch: 5 minutes)")(
      "alarm-fraction", po::value(&o.alarm_fraction)->default_value(o.alarm_fraction, "0.8"),
      "a period breaches when its OTPS < this x the baseline p50 OTPS")(
      "datapoints", po::value(&o.datapoints)->default_value(o.datapoints),
      "M: breaching periods that put the alarm in ALARM ...")(
      "evaluation-periods", po::value(&o.evaluation_periods)->default_value(o.evaluation_periods),
      "N: ... among the last N periods");
  po::options_description out("output");
  out.add_options()("windows", po::bool_switch(&a.windows),
                    "print the current log's periods with their alarm state")(
      "fail-on-alarm", po::bool_switch(&a.fail_on_alarm),
      "exit 1 when the OTPS alarm went to ALARM and the verdict does not put the drop on the "
      "workload or noise (a failing CI step)")(
      "fail-on-any-alarm", po::bool_switch(&a.fail_on_any_alarm),
      "exit 1 whenever the OTPS alarm went to ALARM, as CloudWatch pages")(
      "json", po::value(&a.json), "write the whole diagnosis as JSON to FILE")(
      "config", po::value(&a.config), "read any of these flags from an INI file")("help,h",
                                                                                  "show this help");
  po::options_description all;
  all.add(in).add(rule).add(out);
  return all;
}

RequestLog load_log(const std::string& path, const std::string& run, const char* run_flag,
                    const CsvLogColumns& columns) {
  if (const std::string problem = input_file_problem(path); !problem.empty()) {
    throw Error(path, 0, "", problem);
  }
  if (is_hdf5_file(path)) {
    if (run.empty()) {
      const std::vector<std::string> runs = results_runs(path);
      if (runs.size() > 1) {
        std::string names;
        for (const std::string& r : runs)
          names += (names.empty() ? "" : ", ") + r;
        throw Error(run_flag, path + " holds " + std::to_string(runs.size()) +
                                  " runs: choose one of " + names);
      }
    }
    return read_results_log(path, run);
  }
  if (!run.empty()) {
    throw Error(run_flag, path + " is not a servesim results file: it holds no runs to choose");
  }
  return read_request_log_csv(path, columns);
}

}  // namespace

int cmd_diagnose(int argc, const char* const* argv, std::ostream& out) {
  DiagnoseArgs a;
  po::options_description desc = diagnose_options(a);
  po::positional_options_description pos;
  pos.add("baseline", 1).add("current", 1);
  po::variables_map vm;
  if (!parse_command(argc, argv, desc, vm, out, "servesim diagnose BASELINE CURRENT [options]",
                     &pos)) {
    return 0;
  }
  CsvLogColumns& c = a.columns;
  c.input_required = !vm["col-input"].defaulted();
  c.queue_required = !vm["col-queue"].defaulted();
  if (a.latency_unit == "ms") {
    c.latency_to_ms = 1;
  } else if (a.latency_unit == "s") {
    c.latency_to_ms = 1e3;
  } else {
    throw Error("latency-unit", "expected ms or s, got '" + a.latency_unit + "'");
  }
  if (a.time_unit == "s") {
    c.time_to_s = 1;
  } else if (a.time_unit == "ms") {
    c.time_to_s = 1e-3;
  } else {
    throw Error("time-unit", "expected s or ms, got '" + a.time_unit + "'");
  }
  validate(a.options);  // before reading anything
  PathPlan paths;
  paths.input("baseline", a.baseline);
  paths.input("current", a.current);
  paths.input("config", a.config);
  paths.output("json", a.json);
  paths.check();
  const RequestLog baseline = load_log(a.baseline, a.baseline_run, "baseline-run", c);
  const RequestLog current = load_log(a.current, a.current_run, "current-run", c);
  const Diagnosis d = diagnose(baseline, current, a.options);
  print_diagnosis(out, d, a.windows);
  if (!a.json.empty()) {
    nlohmann::ordered_json j = diagnosis_json(d);
    j["servesim"] = provenance_json();
    write_text_file(a.json, json_text(j, 2) + "\n");
  }
  if ((a.fail_on_alarm || a.fail_on_any_alarm) && d.alarm_fails(a.fail_on_any_alarm)) {
    out << "diagnose: FAILED, the OTPS alarm fired ("
        << (a.fail_on_any_alarm ? "--fail-on-any-alarm" : "--fail-on-alarm") << ")\n";
    return 1;
  }
  return 0;
}

}  // namespace servesim::cli
