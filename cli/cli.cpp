#include "cli/cli.hpp"

#include <boost/program_options.hpp>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "cli/common.hpp"
#include "models/calibration.hpp"
#include "models/gpu.hpp"
#include "models/model.hpp"
#include "scheduler/policy.hpp"
#include "sim/simulation.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace.hpp"
#include "util/error.hpp"

namespace servesim {
namespace po = boost::program_options;
using nlohmann::ordered_json;
using namespace cli;

namespace {

// The built-in default scenario, shared by `run` and `compare`: Llama-3.1-8B on one H100 under
// a conversation-like load near saturation (ShareGPT-like lognormal lengths, Poisson arrivals),
// where prefill priority and chunked prefill visibly trade TTFT against ITL.
constexpr const char* kDefaultModel = "llama-3.1-8b";
constexpr const char* kDefaultGpu = "h100-sxm";
const std::vector<std::string> kDefaultCompare = {"vllm-v0", "chunked:512", "chunked:2048"};

const char* kUsage =
    "usage: servesim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run       simulate one scheduler on one workload and print a summary\n"
    "  compare   simulate several schedulers on the same requests, one row each\n"
    "            (with no flags: a built-in default scenario)\n"
    "  trace     import | info | synth: read, inspect and write trace files\n"
    "  calibrate fit the roofline cost model to Vidur profiles or a measured step log\n"
    "  fidelity  compare cost models with measured step times (Vidur profiles)\n"
    "  diagnose  split a latency change into TTFT and OTPS, with a verdict and the OTPS alarm\n"
    "  sweep     run a grid of configurations in parallel into one table (HDF5/CSV)\n"
    "  capacity  the highest request rate a configuration sustains under an SLO\n"
    "  check     the CI gate: run scenarios, compare with a baseline, exit 1 on regression\n"
    "  list      list gpus | models | schedulers\n"
    "\n"
    "`servesim <command> --help` describes a command's options.\n";

struct Args {
  std::string model, model_file, gpu, gpu_file;
  int tp = 1, tp_alias = 0;
  double gpu_memory_utilization = 0.9, runtime_reserve_gib = 0.5;
  int64_t num_gpu_blocks = 0, max_model_len = 0, max_num_batched_tokens = 0, max_num_seqs = 256;
  int block_size = 16;
  std::vector<std::string> schedulers;
  int64_t num_requests = 0;
  std::string request_rate, input_len, output_len;
  double burstiness = 1.0;
  int64_t seed = 0;  // signed so that "-1" is an error, not 2^64 - 1
  std::string json, requests_csv, config, out;
  double period_s = 300;
  bool no_steps = false;
  std::string trace;
  TraceArgs t;
  std::string cost_model, calibration, profiles;
  bool cache_traces = false;  // points of a sweep: import each trace file once
};

po::options_description options(Args& a, bool compare) {
  po::options_description hw("model and hardware");
  hw.add_options()("model", po::value(&a.model)->default_value(kDefaultModel),
                   "model name (servesim list models)")(
      "model-file", po::value(&a.model_file), "INI file describing a model (config.json keys)")(
      "gpu", po::value(&a.gpu)->default_value(kDefaultGpu), "GPU name (servesim list gpus)")(
      "gpu-file", po::value(&a.gpu_file), "INI file describing a GPU")(
      "tensor-parallel-size", po::value(&a.tp)->default_value(1), "GPUs per replica (vLLM -tp)")(
      "tp", po::value(&a.tp_alias), "same as --tensor-parallel-size")(
      "gpu-memory-utilization", po::value(&a.gpu_memory_utilization)->default_value(0.9, "0.9"),
      "fraction of GPU memory vLLM may use")(
      "num-gpu-blocks", po::value(&a.num_gpu_blocks)->default_value(0),
      "KV cache blocks, overriding the memory plan (0 = computed)")(
      "block-size", po::value(&a.block_size)->default_value(16), "tokens per KV block")(
      "max-model-len", po::value(&a.max_model_len)->default_value(0),
      "context length in tokens (0 = the model's max_position_embeddings)")(
      "runtime-reserve-gib", po::value(&a.runtime_reserve_gib)->default_value(0.5, "0.5"),
      "GiB per GPU outside PyTorch (CUDA context, NCCL) kept from the KV cache")(
      "cost-model", po::value(&a.cost_model)->default_value("roofline"),
      "roofline | table (measured op times; needs --profiles)")(
      "calibration", po::value(&a.calibration),
      "roofline parameters from `servesim calibrate` (default: the GPU's, see list gpus)")(
      "profiles", po::value(&a.profiles), "directory of Vidur profiles, for --cost-model table");
  po::options_description sched("scheduler");
  if (compare) {
    sched.add_options()("scheduler", po::value(&a.schedulers)->multitoken()->composing(),
                        "policies to compare, NAME[:MAX_NUM_BATCHED_TOKENS], repeatable or "
                        "comma-separated (default: vllm-v0 chunked:512 chunked:2048)");
  } else {
    sched.add_options()("scheduler", po::value(&a.schedulers),
                        "policy (servesim list schedulers), NAME[:MAX_NUM_BATCHED_TOKENS] "
                        "(default: chunked)");
  }
  sched.add_options()(
      "max-num-batched-tokens", po::value(&a.max_num_batched_tokens)->default_value(0),
      "token budget per step (0 = vLLM's default: 2048 chunked, max(max_model_len, 2048) "
      "vllm-v0)")("max-num-seqs", po::value(&a.max_num_seqs)->default_value(256),
                  "sequences per step");
  po::options_description work(
      "workload: a trace (--trace) or synthetic, as vLLM's benchmark_serving.py draws it");
  work.add_options()("trace", po::value(&a.trace),
                     "replay this trace file (any format of `servesim trace import`)");
  work.add_options()("num-requests", po::value(&a.num_requests)->default_value(kDefaultNumRequests),
                     "requests")("request-rate",
                                 po::value(&a.request_rate)->default_value(kDefaultRate),
                                 "mean arrival rate in requests/s, or inf for all at t=0")(
      "burstiness", po::value(&a.burstiness)->default_value(1.0, "1"),
      "Gamma shape of inter-arrival times (1 = Poisson)")(
      "input-len", po::value(&a.input_len)->default_value(kDefaultInputLen),
      "prompt tokens: fixed:N | uniform:LO:HI | normal:MEAN:STD[:MIN:MAX] | "
      "lognormal:MEDIAN:SIGMA[:MIN:MAX]")(
      "output-len", po::value(&a.output_len)->default_value(kDefaultOutputLen),
      "output tokens, same forms as --input-len")("seed", po::value(&a.seed)->default_value(0),
                                                  "random seed");
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
  all.add(hw)
      .add(sched)
      .add(work)
      .add(trace_input_options(a.t))
      .add(transform_options(a.t))
      .add(out);
  return all;
}

// "chunked:512" -> policy "chunked" with budget 512; "vllm-v0" -> the default budget.
std::pair<std::string, int64_t> parse_scheduler(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  find_policy(name);
  if (colon == std::string::npos) return {name, 0};
  const std::string budget = spec.substr(colon + 1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(budget.data(), budget.data() + budget.size(), v);
  if (ec != std::errc() || end != budget.data() + budget.size() || v < 1) {
    throw Error("scheduler", "'" + spec + "': the token budget after ':' must be an integer >= 1");
  }
  return {name, v};
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    std::stringstream ss(item);
    for (std::string part; std::getline(ss, part, ',');) {
      if (!part.empty()) out.push_back(part);
    }
  }
  return out;
}

SimConfig base_config(const Args& a) {
  SimConfig c;
  c.model = model_from_flags(a.model, a.model_file);
  c.gpu = gpu_from_flags(a.gpu, a.gpu_file);
  c.tp = a.tp;
  c.scheduler.max_model_len = a.max_model_len;
  c.scheduler.max_num_seqs = a.max_num_seqs;
  c.scheduler.block_size = a.block_size;
  c.memory.gpu_memory_utilization = a.gpu_memory_utilization;
  c.memory.runtime_reserve_gib = a.runtime_reserve_gib;
  c.memory.num_gpu_blocks_override = a.num_gpu_blocks;
  if (a.max_num_batched_tokens < 0) throw Error("max-num-batched-tokens", "must be >= 1");
  c.cost_model = a.cost_model;
  if (!a.calibration.empty()) {
    if (a.cost_model != "roofline") throw Error("calibration", "only the roofline model takes one");
    std::string fitted_for;
    c.roofline = read_calibration(a.calibration, &c.roofline_source, &fitted_for);
    if (!fitted_for.empty() && fitted_for != c.gpu.name) {
      throw Error("calibration", a.calibration + " was fitted for " + fitted_for + ", not " +
                                     c.gpu.name + " (efficiencies differ between GPUs)");
    }
  }
  if (!a.profiles.empty()) {
    if (a.cost_model != "table") throw Error("profiles", "only --cost-model table reads profiles");
    c.profiles = std::make_shared<const ProfileSet>(load_profiles(a.profiles));
  }
  return c;
}

// Parses a run or compare command line; false when --help was printed.
// What every parsed run command line needs after notify: --tp folded into
// --tensor-parallel-size, and the seed checked.
void finish_args(Args& a, const po::variables_map& vm) {
  if (vm.count("tp")) {
    if (!vm["tensor-parallel-size"].defaulted() && a.tp != a.tp_alias) {
      throw Error("tp", "conflicts with --tensor-parallel-size");
    }
    a.tp = a.tp_alias;
  }
  if (a.seed < 0) throw Error("seed", "must be >= 0");
}

bool parse(int argc, const char* const* argv, const po::options_description& desc, Args& a,
           po::variables_map& vm, std::ostream& out, const char* command) {
  if (!parse_command(argc, argv, desc, vm, out,
                     std::string("servesim ") + command + " [options]")) {
    return false;
  }
  finish_args(a, vm);
  return true;
}

// The requests to replay, and how reports describe them.
struct LoadedWorkload {
  Workload requests;
  ordered_json json;
  std::string text;
};

LoadedWorkload load_workload(const Args& a, const po::variables_map& vm) {
  const bool explicit_rate = !vm["request-rate"].defaulted();
  const uint64_t seed = uint64_t(a.seed);
  if (!a.trace.empty()) {
    for (const char* flag : {"num-requests", "input-len", "output-len"}) {
      if (!vm[flag].defaulted()) {
        throw Error(flag,
                    "not used with --trace: the trace gives the requests (see "
                    "--max-requests and the what-if transforms)");
      }
    }
    const Trace t = load_trace(a.trace, a.t, explicit_rate ? parse_rate(a.request_rate) : 0,
                               a.burstiness, seed, a.cache_traces);
    if (!t.timed) {
      throw Error("request-rate", a.trace + " has no arrival times: give --request-rate");
    }
    return {to_workload(t), trace_json(t), trace_text(t)};
  }
  SyntheticOptions w;
  w.num_requests = a.num_requests;
  w.request_rate = parse_rate(a.request_rate);
  w.burstiness = a.burstiness;
  w.input_len = LengthDist::parse(a.input_len, "input-len");
  w.output_len = LengthDist::parse(a.output_len, "output-len");
  w.seed = seed;
  LoadedWorkload out{generate_synthetic(w), synthetic_json(w), synthetic_text(w)};
  const TransformOptions what_if = transforms(a.t, 0, a.burstiness, seed);
  if (what_if.any()) {  // the what-if transforms apply to generated requests too
    Trace t = from_workload(out.requests);
    apply_transforms(t, what_if);
    out.requests = to_workload(t);
    out.json["transforms"] = what_if.describe();
    out.text += ", " + what_if.describe();
  }
  return out;
}

// Runs the policies in SPECS over one workload.
std::vector<RunResult> run_policies(const Args& a, const std::vector<std::string>& specs,
                                    const Workload& w) {
  if (!(a.period_s > 0) || !std::isfinite(a.period_s)) throw Error("period-s", "must be > 0");
  SimulateOptions keep;
  keep.keep_steps = !a.out.empty() && !a.no_steps;
  keep.keep_histogram = !a.out.empty();
  const SimConfig base = base_config(a);
  std::vector<SimConfig> configs;
  for (const std::string& spec : specs) {
    const auto [name, budget] = parse_scheduler(spec);
    SimConfig c = base;
    c.scheduler.policy = name;
    if (budget > 0 && a.max_num_batched_tokens > 0 && budget != a.max_num_batched_tokens) {
      throw Error("scheduler", "'" + spec +
                                   "' sets a token budget that contradicts "
                                   "--max-num-batched-tokens " +
                                   std::to_string(a.max_num_batched_tokens));
    }
    c.scheduler.max_num_batched_tokens = budget > 0 ? budget : a.max_num_batched_tokens;
    configs.push_back(resolve(c));  // every flag checked before anything runs
  }
  std::vector<RunResult> runs;
  for (const SimConfig& c : configs)
    runs.push_back(simulate(c, w, nullptr, keep));
  return runs;
}

// --out: the HDF5 results file, one group per run named by its label.
void write_results(const Args& a, const std::vector<RunResult>& runs,
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

int cmd_run(int argc, const char* const* argv, std::ostream& out) {
  Args a;
  const auto desc = options(a, false);
  po::variables_map vm;
  if (!parse(argc, argv, desc, a, vm, out, "run")) return 0;
  const LoadedWorkload w = load_workload(a, vm);
  const std::string spec = a.schedulers.empty() ? "chunked" : a.schedulers.front();
  const std::vector<RunResult> runs = run_policies(a, {spec}, w.requests);
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
  const bool classic = best_ttft->config.scheduler.policy == "vllm-v0" &&
                       best_itl->config.scheduler.policy == "chunked";
  if (classic) {
    line +=
        ": prefill priority wins the first token by stalling running decodes; chunked "
        "prefill keeps the token cadence steady at the cost of a later first token.";
  } else {
    line += ".";
  }
  return line;
}

int cmd_compare(int argc, const char* const* argv, std::ostream& out) {
  Args a;
  const auto desc = options(a, true);
  po::variables_map vm;
  if (!parse(argc, argv, desc, a, vm, out, "compare")) return 0;
  const LoadedWorkload w = load_workload(a, vm);
  std::vector<std::string> specs = split_list(a.schedulers);
  if (specs.empty()) specs = kDefaultCompare;
  const std::vector<RunResult> runs = run_policies(a, specs, w.requests);
  const SimConfig& c = runs.front().config;
  out << "servesim compare: " << c.model.name << " on " << c.gpu.name << " x" << c.tp
      << ", max_model_len " << c.scheduler.max_model_len << ", max_num_seqs "
      << c.scheduler.max_num_seqs << "\nKV cache blocks (the activation reserve depends on the "
      << "token budget):";
  for (const RunResult& r : runs)
    out << " " << run_label(r) << " " << r.memory.num_gpu_blocks;
  out << "\nworkload: " << w.text << "\n\n";
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

std::mutex trace_mutex;  // HDF5 (servesim traces) is not thread-safe

// Parses a `run` command line without the command name.
void parse_point(const std::vector<std::string>& args, Args& a, po::variables_map& vm) {
  const auto desc = options(a, false);
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  for (const char* flag : {"out", "json", "requests-csv", "config", "help"}) {
    if (vm.count(flag)) throw Error(flag, "not allowed in a point: the command writes the results");
  }
  po::notify(vm);
  finish_args(a, vm);
}

}  // namespace

namespace cli {

bool run_flag_is_switch(const std::string& name) {
  Args a;
  const auto desc = options(a, false);
  const po::option_description* d = desc.find_nothrow(name, false);
  if (d == nullptr) throw Error(name, "not a flag of `servesim run` (see servesim run --help)");
  return d->semantic()->max_tokens() == 0;
}

void check_point_args(const std::vector<std::string>& args) {
  Args a;
  po::variables_map vm;
  parse_point(args, a, vm);
  if (!a.schedulers.empty()) parse_scheduler(a.schedulers.front());
  base_config(a);  // model, GPU, calibration and profile files
  // The workload's flags, on one generated request (a trace is imported once and cached).
  a.cache_traces = true;
  a.num_requests = std::min<int64_t>(a.num_requests, 1);
  if (a.trace.empty()) {
    load_workload(a, vm);
  } else {
    const std::lock_guard<std::mutex> lock(trace_mutex);
    load_workload(a, vm);
  }
}

PointRun run_point(const std::vector<std::string>& args) {
  Args a;
  po::variables_map vm;
  parse_point(args, a, vm);
  PointRun p;
  a.cache_traces = true;
  LoadedWorkload w;
  if (a.trace.empty()) {
    w = load_workload(a, vm);
  } else {
    const std::lock_guard<std::mutex> lock(trace_mutex);
    w = load_workload(a, vm);
  }
  if (a.trace.empty() || !vm["request-rate"].defaulted())
    p.request_rate = parse_rate(a.request_rate);
  const std::string spec = a.schedulers.empty() ? "chunked" : a.schedulers.front();
  std::vector<RunResult> runs = run_policies(a, {spec}, w.requests);
  p.run = std::move(runs.front());
  p.workload = std::move(w.json);
  return p;
}

}  // namespace cli

namespace {

int cmd_list(int argc, const char* const* argv, std::ostream& out) {
  const std::string what = argc >= 2 ? argv[1] : "";
  char buf[256];
  if (what == "gpus") {
    std::snprintf(buf, sizeof buf, "%-10s %-28s %10s %8s %10s %14s  %s\n", "name", "description",
                  "bf16_tflops", "hbm_gib", "hbm_gb_per_s", "interconnect_gb_per_s",
                  "cost-model defaults");
    out << buf;
    for (const GpuSpec& g : gpu_catalogue()) {
      std::snprintf(buf, sizeof buf, "%-10s %-28s %10.1f %8.1f %10.0f %14.0f  %s\n", g.name.c_str(),
                    g.description.c_str(), g.bf16_tflops, g.hbm_gib, g.hbm_gb_per_s,
                    g.interconnect_gb_per_s, default_roofline_source(g).c_str());
      out << buf;
    }
    return 0;
  }
  if (what == "models") {
    std::snprintf(buf, sizeof buf, "%-16s %-30s %6s %6s %5s %4s %6s %6s %7s %8s %7s %8s %8s\n",
                  "name", "hf_id", "layers", "hidden", "heads", "kv", "inter", "vocab", "max_pos",
                  "experts", "params", "active", "kv_KiB/tok");
    out << buf;
    for (const ModelSpec& m : model_catalogue()) {
      std::snprintf(
          buf, sizeof buf, "%-16s %-30s %6d %6d %5d %4d %6d %6d %7d %5d/%-2d %6.2fB %7.2fB %8.0f\n",
          m.name.c_str(), m.hf_id.c_str(), m.num_layers, m.hidden_size, m.num_heads, m.num_kv_heads,
          m.intermediate_size, m.vocab_size, m.max_position, m.experts_per_token, m.num_experts,
          double(m.total_params()) / 1e9, double(m.active_params()) / 1e9,
          double(m.kv_bytes_per_token_per_gpu(1)) / 1024);
      out << buf;
    }
    return 0;
  }
  if (what == "schedulers") {
    for (const PolicyInfo& p : policy_catalogue()) {
      out << p.name << "\t" << p.summary << "\n";
    }
    return 0;
  }
  throw Error("list", "expected gpus, models or schedulers, got '" + what + "'");
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  if (argc < 2) {
    err << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  try {
    if (command == "run") return cmd_run(argc - 1, argv + 1, out);
    if (command == "compare") return cmd_compare(argc - 1, argv + 1, out);
    if (command == "list") return cmd_list(argc - 1, argv + 1, out);
    if (command == "diagnose") return cmd_diagnose(argc - 1, argv + 1, out);
    if (command == "sweep") return cmd_sweep(argc - 1, argv + 1, out);
    if (command == "capacity") return cmd_capacity(argc - 1, argv + 1, out);
    if (command == "check") return cmd_check(argc - 1, argv + 1, out);
    if (command == "trace") return cmd_trace(argc - 1, argv + 1, out);
    if (command == "calibrate" || command == "fidelity") {
      return cmd_calibrate_or_fidelity(command, argc - 1, argv + 1, out);
    }
    if (command == "--help" || command == "-h" || command == "help") {
      out << kUsage;
      return 0;
    }
    err << "servesim: unknown command '" << command
        << "' (commands: run, compare, trace, calibrate, fidelity, diagnose, sweep, capacity, "
           "check, "
           "list; see servesim --help)\n";
    return 2;
  } catch (const Error& e) {
    err << "servesim " << command << ": error: " << e.what() << "\n";
    return 2;
  } catch (const po::error& e) {
    err << "servesim " << command << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "servesim " << command << ": error: not enough memory for this input\n";
    return 2;
  } catch (const std::exception& e) {
    err << "servesim " << command << ": internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace servesim
