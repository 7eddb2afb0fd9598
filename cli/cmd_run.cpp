// `servesim run` and `servesim compare`: one scheduler, or several on the same requests, over one
// workload; a one-screen summary, and on request the JSON summary, the per-request CSV and the
// HDF5 results file.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/intervals.hpp"
#include "analysis/metrics_as.hpp"
#include "analysis/replicates.hpp"
#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "analysis/run_spec.hpp"
#include "analysis/timeline.hpp"
#include "analysis/windows.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/run_capture.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/progress.hpp"

namespace servesim::cli {

namespace {

using nlohmann::ordered_json;

const std::vector<std::string> kDefaultCompare = {"vllm-v0", "chunked:512", "chunked:2048",
                                                  "vllm-v1"};

// What `run` and `compare` read: the run's flags, the policies, and where the results go.
struct RunArgs {
  RunSpec spec;
  std::vector<std::string> schedulers;
  std::string json, requests_csv, config, out, timeline, timeline_window = "0:60";
  std::string metrics_as = "servesim";
  std::string interval = "0.9";
  double period_s = 300;
  bool no_steps = false;
  RunCapture* capture = nullptr;  // the caller's, beside --out and --json (cli/run_capture.hpp)

  MetricsTool tool() const { return parse_metrics_tool(metrics_as); }
  // Whether the results file's contents are wanted: written by --out, or captured.
  bool keeps_results() const { return !out.empty() || capture != nullptr; }
  // Whether the JSON summary is wanted: written by --json, or captured.
  bool keeps_json() const { return !json.empty() || capture != nullptr; }
};

po::options_description options(RunArgs& a, bool compare) {
  po::options_description sched = run_flag_group(FlagGroup::kScheduler, a.spec);
  po::options_description policies("scheduler");
  if (compare) {
    policies.add_options()("scheduler", po::value(&a.schedulers)->multitoken()->composing(),
                           "policies to compare, NAME[:MAX_NUM_BATCHED_TOKENS], repeatable or "
                           "comma-separated (default: vllm-v0 chunked:512 chunked:2048 vllm-v1)");
  } else {
    policies.add_options()("scheduler", po::value(&a.schedulers),
                           "policy (servesim list schedulers), NAME[:MAX_NUM_BATCHED_TOKENS] "
                           "(default: vllm-v1, on the V1 engine)");
  }
  for (const auto& o : sched.options())
    policies.add(o);
  po::options_description out("output");
  out.add_options()("json", po::value(&a.json), "write the JSON summary to FILE");
  out.add_options()("metrics-as", po::value(&a.metrics_as)->default_value(a.metrics_as),
                    "also report the metrics as this benchmark tool defines and names them: vllm "
                    "| guidellm | inference-perf (docs/manual/run-and-compare.md), in the JSON's "
                    "metrics_as (and printed by run)");
  out.add_options()("interval", po::value(&a.interval)->default_value(a.interval),
                    "prediction intervals' level beside the predicted figures, from servesim's "
                    "held-out error on real vLLM runs (docs/validation.md), or none");
  out.add_options()("out", po::value(&a.out),
                    "write the HDF5 results file FILE: per request, per step, per window "
                    "(layout in docs/manual/run-and-compare.md)")(
      "period-s", po::value(&a.period_s)->default_value(300),
      "window length of the results file's per-window table, in seconds (CloudWatch: 300)")(
      "no-steps", po::bool_switch(&a.no_steps), "leave the per-step table out of --out");
  if (!compare) {
    out.add_options()("requests-csv", po::value(&a.requests_csv), "write per-request CSV to FILE");
    out.add_options()("timeline", po::value(&a.timeline),
                      "write a Chrome/Perfetto trace FILE.json of the steps, requests and KV "
                      "transfers (ui.perfetto.dev)")(
        "timeline-window", po::value(&a.timeline_window)->default_value("0:60"),
        "the timeline's window of simulated time, START:END in seconds");
  }
  out.add_options()("config", po::value(&a.config), "read any of these flags from an INI file")(
      "help,h", "show this help");
  po::options_description all;
  all.add(run_flag_group(FlagGroup::kHardware, a.spec))
      .add(policies)
      .add(run_flag_group(FlagGroup::kWorkload, a.spec))
      .add(run_flag_group(FlagGroup::kTraceInput, a.spec))
      .add(run_flag_group(FlagGroup::kWhatIf, a.spec))
      .add(run_flag_group(FlagGroup::kMetrics, a.spec))
      .add(out);
  return all;
}

// Parses a run or compare command line; false when --help was printed.
bool parse(int argc, const char* const* argv, RunArgs& a, bool compare, std::ostream& out) {
  const po::options_description desc = options(a, compare);
  po::variables_map vm;
  const char* command = compare ? "compare" : "run";
  if (!parse_command(argc, argv, desc, vm, out,
                     std::string("servesim ") + command + " [options]")) {
    return false;
  }
  mark_given_flags(vm, a.spec);
  if (!compare && a.schedulers.size() > 1) {
    throw Error("scheduler", "given " + std::to_string(a.schedulers.size()) +
                                 " times: run takes one policy (compare takes several)");
  }
  if (!compare && !a.schedulers.empty()) a.spec.scheduler = a.schedulers.front();
  if (compare && a.spec.enable_chunked_prefill.given()) {
    throw Error("enable-chunked-prefill", "compare takes its policies from --scheduler");
  }
  if (!compare && a.spec.engine == "per-policy") {
    throw Error("engine", "per-policy is compare's: run has one policy (v0 or v1)");
  }
  if (!compare && !vm["timeline-window"].defaulted() && a.timeline.empty()) {
    throw Error("timeline-window", "has no effect without --timeline");
  }
  if (!a.timeline.empty()) parse_timeline_window(a.timeline_window);
  for (const char* flag : {"period-s", "no-steps"}) {
    if (!vm[flag].defaulted() && !a.keeps_results()) {
      throw Error(flag, "has no effect without --out: it shapes the results file");
    }
  }
  if (a.spec.num_seeds > 1 && !a.timeline.empty()) {
    throw Error("timeline", "writes one run: drop --num-seeds");
  }
  if (a.spec.num_seeds > 1 && !a.requests_csv.empty()) {
    throw Error("requests-csv",
                "writes one run's requests: with --num-seeds use --out (one run per seed, "
                "LABEL@seed=K) or --json");
  }
  check_flags(a.spec);
  a.tool();  // a bad --metrics-as before any work
  prediction_intervals(Regime{}, parse_interval_level(a.interval));  // and a bad --interval
  // Every output writable, and none of them an input or another output, before any work.
  PathPlan paths;
  add_run_inputs(paths, a.spec);
  add_config_input(paths, vm);
  paths.output("json", a.json);
  paths.output("out", a.out);
  paths.output("requests-csv", a.requests_csv);
  paths.output("timeline", a.timeline);
  paths.check();
  return true;
}

void print_compare_header(std::ostream& out, const std::vector<RunResult>& runs,
                          const std::string& workload) {
  const SimConfig& c = runs.front().config;
  bool alike = true;
  for (const RunResult& r : runs)
    alike = alike && row_differences(r, runs.front()).empty();
  out << "servesim compare: " << c.model.name << " on " << replica_layout_text(c)
      << (alike ? "; every row shares" : "; the first row (* rows differ, see notes)") << ":\n"
      << "  engine " << engine_text(c) << "\n  hardware " << arch_name(c.gpu.arch) << ": "
      << c.hardware_source << "\n  memory plan " << engine_name(c.engine) << ", max_model_len "
      << c.scheduler.max_model_len << ", max_num_seqs " << c.scheduler.max_num_seqs
      << "\nKV cache blocks (the activation reserve depends on the token budget):";
  for (const RunResult& r : runs)
    out << " " << run_label(r) << " " << r.memory.num_gpu_blocks;
  std::string capped;
  for (const RunResult& r : runs) {
    if (max_num_seqs_capped(r) && r.config.scheduler.max_num_seqs < c.scheduler.max_num_seqs) {
      capped += " " + run_label(r) + " " + std::to_string(r.config.scheduler.max_num_seqs);
    }
  }
  if (!capped.empty()) {
    out << "\nmax_num_seqs (vLLM V1 caps its default at the token budget):" << capped;
  }
  out << "\nworkload: " << workload << "\n\n";
}

// The engine each row of a compare runs on: --engine's for every row; per-policy, each its own;
// by default one for all, V1 (vLLM's engine since v0.8, and its only one since v0.11) when any
// row is vllm-v1, else V0.
std::string compare_engine(const RunSpec& s, const std::vector<SchedulerChoice>& specs) {
  if (s.engine == "per-policy") return "";
  if (!s.engine.empty()) return s.engine;
  for (const SchedulerChoice& spec : specs) {
    if (spec.policy == Policy::kVllmV1) return "v1";
  }
  return "v0";
}

// Runs the policies in SPECS over one workload: every configuration is checked before any runs.
std::vector<RunResult> run_policies(const RunArgs& a, const std::vector<SchedulerChoice>& specs,
                                    const Workload& w, Inputs& inputs, bool compare) {
  if (!(a.period_s > 0) || !std::isfinite(a.period_s)) throw Error("period-s", "must be > 0");
  // --out's per-window table: refuse before simulating, not after printing the summary.
  if (a.keeps_results() && !w.empty() &&
      (w.back().arrival_s - w.front().arrival_s) / a.period_s + 1 > double(kMaxWindows)) {
    throw Error("period-s",
                format("a period of %g s cuts the workload's %.6g s of arrivals into "
                       "more than %zu windows: use a longer --period-s",
                       a.period_s, w.back().arrival_s - w.front().arrival_s, size_t(kMaxWindows)));
  }
  SimulateOptions keep = simulate_options(a.spec);
  keep.keep_steps = (a.keeps_results() && !a.no_steps) || !a.timeline.empty();
  if (!a.timeline.empty() && (!a.keeps_results() || a.no_steps)) {
    // Only the timeline wants steps: those of its window (a run of 1M requests kept ~23 KB each).
    std::tie(keep.metrics.keep_steps_from_s, keep.metrics.keep_steps_to_s) =
        parse_timeline_window(a.timeline_window);
  }
  keep.keep_histogram = a.keeps_results();
  RunSpec row = a.spec;
  if (compare) row.engine = compare_engine(a.spec, specs);
  const SimConfig base = base_config(row, inputs);
  std::vector<SimConfig> configs;
  std::vector<SimulateOptions> options;
  for (const SchedulerChoice& spec : specs) {
    configs.push_back(policy_config(base, row, spec));
    options.push_back(keep);
    add_fleet_groups(row, spec, inputs, options.back(), configs.back());
  }
  std::vector<RunResult> runs;
  for (size_t i = 0; i < configs.size(); ++i) {
    const SimConfig& c = configs[i];
    const std::string label = std::string(policy_name(c.scheduler.policy)) + ":" +
                              std::to_string(c.scheduler.max_num_batched_tokens);
    Progress progress(label.c_str(), w.size(), /*delay_s=*/1);
    options[i].progress = [&progress](size_t done, size_t) { progress.show(done); };
    runs.push_back(simulate(c, w, nullptr, options[i]));
  }
  return runs;
}

// The JSON summary of R, with --metrics-as's view when asked for.
ordered_json run_summary_json(const RunArgs& a, const RunResult& r, const ordered_json& workload) {
  ordered_json j = summary_json(r, workload, parse_interval_level(a.interval));
  if (a.tool() != MetricsTool::kServesim) {
    j["metrics_as"] = metrics_as_json(r, a.tool(), a.spec.metric_percentiles);
  }
  return j;
}

// --num-seeds: the policies in SPECS over seed k's workload, for each seed: runs[policy][k], and
// each seed's workload as the results record it.
struct SeedRuns {
  std::vector<std::vector<RunResult>> runs;
  std::vector<ordered_json> workloads;  // [k]
  std::string text;                     // seed 0's workload, and the seeds
};

SeedRuns run_seeds(const RunArgs& a, const std::vector<SchedulerChoice>& specs, Inputs& inputs,
                   bool compare) {
  SeedRuns out;
  out.runs.resize(specs.size());
  for (int64_t k = 0; k < a.spec.num_seeds; ++k) {
    RunArgs seeded = a;
    seeded.spec = with_seed(a.spec, k);
    const LoadedWorkload w = load_workload(seeded.spec, inputs);
    if (k == 0) out.text = w.text;
    out.workloads.push_back(w.json);
    std::vector<RunResult> step = run_policies(seeded, specs, w.requests, inputs, compare);
    for (size_t i = 0; i < specs.size(); ++i)
      out.runs[i].push_back(std::move(step[i]));
  }
  out.text += " (" + std::to_string(a.spec.num_seeds) + " seeds: " + std::to_string(a.spec.seed) +
              " to " + std::to_string(a.spec.seed + (a.spec.num_seeds - 1)) + ")";
  return out;
}

// Every seed's whole summary of one policy, with its configuration and workload.
ordered_json seed_summaries(const RunArgs& a, const std::vector<RunResult>& runs,
                            const SeedRuns& s) {
  ordered_json j = ordered_json::array();
  for (size_t k = 0; k < runs.size(); ++k)
    j.push_back(run_summary_json(a, runs[k], s.workloads[k]));
  return j;
}

// The results NAMED (of WORKLOAD, as O shapes them) to --out's file and the caller's capture.
void keep_results(const RunArgs& a, const std::vector<NamedRun>& named,
                  const ordered_json& workload, const ResultsOptions& o) {
  if (a.capture != nullptr) a.capture->results = results_image(named, workload, o);
  if (!a.out.empty()) write_results_h5(a.out, named, workload, o);
}

// The JSON summary TEXT to --json's file and the caller's capture.
void keep_json(const RunArgs& a, const ordered_json& j) {
  if (!a.keeps_json()) return;
  ordered_json recorded = j;
  recorded["servesim"] = provenance_json();
  const std::string text = json_text(recorded, 2) + "\n";
  if (a.capture != nullptr) a.capture->json = text;
  if (!a.json.empty()) write_text_file(a.json, text);
}

// --out with --num-seeds: one run per policy and seed, named LABEL@seed=K.
void write_seed_results(const RunArgs& a, const SeedRuns& s) {
  if (!a.keeps_results()) return;
  std::vector<NamedRun> named;
  for (const std::vector<RunResult>& policy : s.runs) {
    for (size_t k = 0; k < policy.size(); ++k) {
      named.push_back({run_label(policy[k]) + "@seed=" + std::to_string(a.spec.seed + int64_t(k)),
                       &policy[k], &s.workloads[k]});
    }
  }
  ResultsOptions o;
  o.period_s = a.period_s;
  o.steps = !a.no_steps;
  o.interval_level = parse_interval_level(a.interval);
  keep_results(a, named, s.workloads.front(), o);
}

std::vector<int64_t> seeds_of(const RunSpec& s) {
  std::vector<int64_t> seeds;
  for (int64_t k = 0; k < s.num_seeds; ++k)
    seeds.push_back(s.seed + k);
  return seeds;
}

// `run --num-seeds N`: the replicates' table, and their JSON.
int run_replicates(const RunArgs& a, std::ostream& out) {
  Inputs inputs;
  const SeedRuns seeded = run_seeds(a, {scheduler_choice(a.spec)}, inputs, false);
  const std::vector<RunResult>& runs = seeded.runs.front();
  const RunResult& r = runs.front();
  out << "servesim run: " << r.config.model.name << " on " << replica_layout_text(r.config) << ", "
      << run_label(r) << (default_scheduler(a.spec) ? " (the default scheduler)" : "")
      << "\nworkload: " << seeded.text << "\n\n";
  const std::vector<Replicate> reps = replicate(runs);
  print_replicates(out, reps);
  print_replicate_warnings(out, runs);
  if (a.keeps_json()) {
    ordered_json j = {{"label", run_label(r)},
                      {"replicates", replicates_json(reps, seeds_of(a.spec))}};
    j["runs"] = seed_summaries(a, runs, seeded);
    keep_json(a, j);
  }
  write_seed_results(a, seeded);
  return 0;
}

// `compare --num-seeds N`: each policy's means and confidence intervals, and the verdict on them.
int compare_replicates(const RunArgs& a, const std::vector<SchedulerChoice>& specs,
                       std::ostream& out) {
  Inputs inputs;
  const SeedRuns seeded = run_seeds(a, specs, inputs, true);
  const std::vector<std::vector<RunResult>>& runs = seeded.runs;
  std::vector<RunResult> firsts;
  for (const auto& policy : runs)
    firsts.push_back(policy.front());
  print_compare_header(out, firsts, seeded.text);
  print_compare_replicates(out, runs);
  ordered_json j;
  j["runs"] = ordered_json::array();
  for (const auto& policy : runs) {
    print_replicate_warnings(out, policy, run_label(policy.front()) + ": ");
    ordered_json row = {{"label", run_label(policy.front())},
                        {"replicates", replicates_json(replicate(policy), seeds_of(a.spec))}};
    if (&policy != &runs.front()) row["paired_change"] = paired_changes_json(runs.front(), policy);
    // Every seed's whole summary, with its configuration.
    row["summaries"] = seed_summaries(a, policy, seeded);
    j["runs"].push_back(row);
  }
  keep_json(a, j);
  write_seed_results(a, seeded);
  return 0;
}

// --out: the HDF5 results file, one group per run named by its label.
void write_results(const RunArgs& a, const std::vector<RunResult>& runs, const LoadedWorkload& w) {
  if (!a.keeps_results()) return;
  std::vector<NamedRun> named;
  for (const RunResult& r : runs)
    named.push_back({run_label(r), &r});
  ResultsOptions o;
  o.period_s = a.period_s;
  o.steps = !a.no_steps;
  o.interval_level = parse_interval_level(a.interval);
  o.input_parts = &w.requests.input_parts;
  keep_results(a, named, w.json, o);
}

// HOOKS onto A's runs; before parsing, so that --no-steps and --period-s shape the capture.
void attach(RunArgs& a, const RunHooks* hooks) {
  if (hooks == nullptr) return;
  a.spec.scheduling_hooks = hooks->scheduling;
  a.spec.router_hook = hooks->router;
  a.capture = hooks->capture;
}

}  // namespace

int cmd_run(int argc, const char* const* argv, std::ostream& out, const RunHooks* hooks) {
  RunArgs a;
  attach(a, hooks);
  if (!parse(argc, argv, a, false, out)) return 0;
  if (a.spec.num_seeds > 1) return run_replicates(a, out);
  Inputs inputs;
  const LoadedWorkload w = load_workload(a.spec, inputs);
  const std::vector<RunResult> runs =
      run_policies(a, {scheduler_choice(a.spec)}, w.requests, inputs, false);
  const RunResult& r = runs.front();
  print_run_summary(out, r, w.text, default_scheduler(a.spec));
  print_intervals(out, r, prediction_intervals(regime_of(r), parse_interval_level(a.interval)));
  const ordered_json summary = run_summary_json(a, r, w.json);
  if (summary.contains("metrics_as")) print_metrics_as(out, summary["metrics_as"]);
  keep_json(a, summary);
  write_results(a, runs, w);
  if (!a.timeline.empty()) {
    const auto [from, to] = parse_timeline_window(a.timeline_window);
    ordered_json timeline = timeline_json(r, from, to);
    timeline["otherData"] = provenance_json();  // the trace format's place for metadata
    write_text_file(a.timeline, json_text(timeline) + "\n");
  }
  if (!a.requests_csv.empty()) {
    std::ostringstream csv;
    write_requests_csv(csv, r, &w.requests.input_parts);
    write_text_file(a.requests_csv, csv.str());
  }
  return 0;
}

int cmd_compare(int argc, const char* const* argv, std::ostream& out, const RunHooks* hooks) {
  RunArgs a;
  attach(a, hooks);
  if (!parse(argc, argv, a, true, out)) return 0;
  std::vector<std::string> names = split_list(a.schedulers);
  if (names.empty()) names = kDefaultCompare;
  std::vector<SchedulerChoice> specs;  // each NAME[:BUDGET] parsed once
  for (const std::string& name : names)
    specs.push_back(parse_scheduler(name));
  if (a.spec.num_seeds > 1) return compare_replicates(a, specs, out);
  Inputs inputs;
  const LoadedWorkload w = load_workload(a.spec, inputs);
  const std::vector<RunResult> runs = run_policies(a, specs, w.requests, inputs, true);
  print_compare_header(out, runs, w.text);
  print_compare_table(out, runs);
  print_compare_intervals(out, runs, parse_interval_level(a.interval));
  const std::string v = compare_verdict(runs);
  if (!v.empty()) out << "\n" << v << "\n";
  for (const RunResult& r : runs) {
    for (const std::string& warning : run_warnings(r))
      out << "WARNING: " << run_label(r) << ": " << warning << "\n";
  }
  if (a.keeps_json()) {
    ordered_json j;
    j["runs"] = ordered_json::array();
    for (const RunResult& r : runs)
      j["runs"].push_back(run_summary_json(a, r, w.json));
    keep_json(a, j);
  }
  write_results(a, runs, w);
  return 0;
}

}  // namespace servesim::cli
