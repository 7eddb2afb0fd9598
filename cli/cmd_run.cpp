// `servesim run` and `servesim compare`: one scheduler, or several on the same requests, over one
// workload; a one-screen summary, and on request the JSON summary, the per-request CSV and the
// HDF5 results file.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "analysis/run_spec.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"

namespace servesim::cli {

namespace {

using nlohmann::ordered_json;

const std::vector<std::string> kDefaultCompare = {"vllm-v0", "chunked:512", "chunked:2048"};

// What `run` and `compare` read: the run's flags, the policies, and where the results go.
struct RunArgs {
  RunSpec spec;
  std::vector<std::string> schedulers;
  std::string json, requests_csv, config, out;
  double period_s = 300;
  bool no_steps = false;
};

po::options_description options(RunArgs& a, bool compare) {
  po::options_description sched = run_flag_group(FlagGroup::kScheduler, a.spec);
  po::options_description policies("scheduler");
  if (compare) {
    policies.add_options()("scheduler", po::value(&a.schedulers)->multitoken()->composing(),
                           "policies to compare, NAME[:MAX_NUM_BATCHED_TOKENS], repeatable or "
                           "comma-separated (default: vllm-v0 chunked:512 chunked:2048)");
  } else {
    policies.add_options()("scheduler", po::value(&a.schedulers),
                           "policy (servesim list schedulers), NAME[:MAX_NUM_BATCHED_TOKENS] "
                           "(default: chunked)");
  }
  for (const auto& o : sched.options())
    policies.add(o);
  po::options_description out("output");
  out.add_options()("json", po::value(&a.json), "write the JSON summary to FILE");
  out.add_options()("out", po::value(&a.out),
                    "write the HDF5 results file FILE: per request, per step, per window "
                    "(layout in README.md)")(
      "period-s", po::value(&a.period_s)->default_value(300),
      "window length of the results file's per-window table, in seconds (CloudWatch: 300)")(
      "no-steps", po::bool_switch(&a.no_steps), "leave the per-step table out of --out");
  if (!compare) {
    out.add_options()("requests-csv", po::value(&a.requests_csv), "write per-request CSV to FILE");
  }
  out.add_options()("config", po::value(&a.config), "read any of these flags from an INI file")(
      "help,h", "show this help");
  po::options_description all;
  all.add(run_flag_group(FlagGroup::kHardware, a.spec))
      .add(policies)
      .add(run_flag_group(FlagGroup::kWorkload, a.spec))
      .add(run_flag_group(FlagGroup::kTraceInput, a.spec))
      .add(run_flag_group(FlagGroup::kWhatIf, a.spec))
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
  a.spec.given = given_run_flags(vm);
  check_flags(a.spec);
  return true;
}

// Runs the policies in SPECS over one workload: every configuration is checked before any runs.
std::vector<RunResult> run_policies(const RunArgs& a, const std::vector<std::string>& specs,
                                    const Workload& w, Inputs& inputs) {
  if (!(a.period_s > 0) || !std::isfinite(a.period_s)) throw Error("period-s", "must be > 0");
  SimulateOptions keep;
  keep.keep_steps = !a.out.empty() && !a.no_steps;
  keep.keep_histogram = !a.out.empty();
  const SimConfig base = base_config(a.spec, inputs);
  std::vector<SimConfig> configs;
  for (const std::string& spec : specs)
    configs.push_back(policy_config(base, a.spec, spec));
  std::vector<RunResult> runs;
  for (const SimConfig& c : configs)
    runs.push_back(simulate(c, w, nullptr, keep));
  return runs;
}

// --out: the HDF5 results file, one group per run named by its label.
void write_results(const RunArgs& a, const std::vector<RunResult>& runs,
                   const ordered_json& workload) {
  if (a.out.empty()) return;
  std::vector<NamedRun> named;
  for (const RunResult& r : runs)
    named.push_back({run_label(r), &r});
  ResultsOptions o;
  o.period_s = a.period_s;
  o.steps = !a.no_steps;
  write_results_h5(a.out, named, workload, o);
}

// One line that says what the comparison shows.
std::string verdict(const std::vector<RunResult>& runs) {
  if (runs.size() < 2) return "";
  const RunResult* best_ttft = &runs[0];
  const RunResult* best_itl = &runs[0];
  for (const RunResult& r : runs) {
    if (r.summary.ttft_ms.p50 < best_ttft->summary.ttft_ms.p50) best_ttft = &r;
    if (r.summary.itl_ms.p99 < best_itl->summary.itl_ms.p99) best_itl = &r;
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s has the lowest TTFT p50 (%.0f ms) and %s the lowest ITL p99 "
                "(%.0f ms)",
                run_label(*best_ttft).c_str(), best_ttft->summary.ttft_ms.p50,
                run_label(*best_itl).c_str(), best_itl->summary.itl_ms.p99);
  std::string line = buf;
  const bool classic = best_ttft->config.scheduler.policy == Policy::kVllmV0 &&
                       best_itl->config.scheduler.policy == Policy::kChunked;
  if (classic) {
    line +=
        ": prefill priority wins the first token by stalling running decodes; chunked "
        "prefill keeps the token cadence steady at the cost of a later first token.";
  } else {
    line += ".";
  }
  return line;
}

void print_compare_header(std::ostream& out, const std::vector<RunResult>& runs,
                          const std::string& workload) {
  const SimConfig& c = runs.front().config;
  out << "servesim compare: " << c.model.name << " on " << c.gpu.name << " x" << c.tp
      << ", max_model_len " << c.scheduler.max_model_len << ", max_num_seqs "
      << c.scheduler.max_num_seqs << "\nKV cache blocks (the activation reserve depends on the "
      << "token budget):";
  for (const RunResult& r : runs)
    out << " " << run_label(r) << " " << r.memory.num_gpu_blocks;
  out << "\nworkload: " << workload << "\n\n";
}

}  // namespace

int cmd_run(int argc, const char* const* argv, std::ostream& out) {
  RunArgs a;
  if (!parse(argc, argv, a, false, out)) return 0;
  Inputs inputs;
  const LoadedWorkload w = load_workload(a.spec, inputs);
  const std::string spec = a.schedulers.empty() ? "chunked" : a.schedulers.front();
  const std::vector<RunResult> runs = run_policies(a, {spec}, w.requests, inputs);
  const RunResult& r = runs.front();
  print_run_summary(out, r, w.text);
  if (!a.json.empty()) write_file(a.json, summary_json(r, w.json).dump(2) + "\n");
  write_results(a, runs, w.json);
  if (!a.requests_csv.empty()) {
    std::ostringstream csv;
    write_requests_csv(csv, r);
    write_file(a.requests_csv, csv.str());
  }
  return 0;
}

int cmd_compare(int argc, const char* const* argv, std::ostream& out) {
  RunArgs a;
  if (!parse(argc, argv, a, true, out)) return 0;
  Inputs inputs;
  const LoadedWorkload w = load_workload(a.spec, inputs);
  std::vector<std::string> specs = split_list(a.schedulers);
  if (specs.empty()) specs = kDefaultCompare;
  const std::vector<RunResult> runs = run_policies(a, specs, w.requests, inputs);
  print_compare_header(out, runs, w.text);
  print_compare_table(out, runs);
  const std::string v = verdict(runs);
  if (!v.empty()) out << "\n" << v << "\n";
  if (!a.json.empty()) {
    ordered_json j;
    j["runs"] = ordered_json::array();
    for (const RunResult& r : runs)
      j["runs"].push_back(summary_json(r, w.json));
    write_file(a.json, j.dump(2) + "\n");
  }
  write_results(a, runs, w.json);
  return 0;
}

}  // namespace servesim::cli
