#include "analysis/run_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "analysis/workload_report.hpp"
#include "models/calibration.hpp"
#include "scheduler/policy.hpp"
#include "traces/datasets.hpp"
#include "traces/rate_pattern.hpp"
#include "traces/servegen.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/text_input.hpp"

namespace servesim {

using nlohmann::ordered_json;

template <class T, class Load>
std::shared_ptr<const T> Inputs::cached(std::map<std::string, std::shared_ptr<const T>>& cache,
                                        const std::string& key, Load load) {
  // Loading under the lock: a file is read once however many threads ask for it, and HDF5 (the
  // servesim trace format) is not thread-safe. Simulations never hold it.
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, std::make_shared<const T>(load())).first;
  return it->second;
}

std::shared_ptr<const Trace> Inputs::trace(const std::string& path, const ImportOptions& options) {
  if (options.hash_block_size < 0) throw Error("hash-block-size", "must be >= 0");
  return cached(traces_, path + "\n" + options.describe(),
                [&] { return import_trace(path, options); });
}

std::shared_ptr<const ProfileSet> Inputs::profiles(const std::string& dir, const std::string& gpu) {
  return cached(profiles_, dir + '\n' + gpu, [&] { return load_profiles(dir, gpu); });
}

std::shared_ptr<const CalibrationFile> Inputs::calibration(const std::string& path) {
  return cached(calibrations_, path, [&] { return read_calibration(path); });
}

GpuSpec Inputs::gpu(const std::string& name, const std::string& file) {
  if (file.empty()) return find_gpu(name);
  return *cached(gpus_, file, [&] { return load_gpu_file(file); });
}

ModelSpec Inputs::model(const std::string& name, const std::string& file) {
  if (file.empty()) return find_model(name);
  return *cached(models_, file, [&] { return load_model_file(file); });
}

namespace {

// The flags that say how to read a trace file, and the format each is for ("" = any).
const std::pair<const char*, const char*> kImportFlags[] = {
    {"trace-format", ""},        {"skip-bad-rows", ""},
    {"col-arrival", "csv"},      {"col-input", "csv"},
    {"col-output", "csv"},       {"time-unit", "csv"},
    {"keep-failed", "burstgpt"}, {"model-filter", "burstgpt"},
    {"log-type", "burstgpt"},    {"hash-block-size", "mooncake"},
    {"col-priority", "csv"}};

// vLLM bench's --dataset-name values, and the flags that shape only one of them.
const char* const kDatasets[] = {"random", "prefix_repetition", "multi_turn", "servegen",
                                 "mixture"};
const std::pair<const char*, const char*> kDatasetFlags[] = {
    {"prefix-repetition-prefix-len", "prefix_repetition"},
    {"prefix-repetition-suffix-len", "prefix_repetition"},
    {"prefix-repetition-num-prefixes", "prefix_repetition"},
    {"prefix-repetition-output-len", "prefix_repetition"},
    {"num-turns", "multi_turn"},
    {"think-time-s", "multi_turn"},
    {"servegen", "servegen"},
    {"servegen-start-s", "servegen"},
    {"servegen-duration-s", "servegen"},
    {"servegen-rate-scale", "servegen"},
    {"client-mix", "mixture"}};

// --dataset-name and the flags of one dataset: Error when one would do nothing.
void check_dataset_flags(const RunSpec& s) {
  if (!s.trace.empty() && s.has("dataset-name")) {
    throw Error("dataset-name", "not used with --trace: the trace gives the requests");
  }
  if (!s.trace.empty() && s.has("num-priorities")) {
    throw Error("num-priorities", "not used with --trace: a csv trace's --col-priority gives them");
  }
  if (!s.trace.empty() && !s.rate_pattern.empty()) {
    throw Error("rate-pattern",
                "shapes generated arrivals; a trace keeps its own (capacity --target-scale "
                "scales a trace's rate)");
  }
  if (!s.rate_pattern.empty()) RatePattern::parse(s.rate_pattern, "rate-pattern");
  const std::string& d = s.dataset_name;
  if (std::find(std::begin(kDatasets), std::end(kDatasets), d) == std::end(kDatasets)) {
    throw Error(
        "dataset-name",
        "expected random, prefix_repetition, multi_turn, servegen or mixture, got '" + d + "'");
  }
  for (const auto& [flag, dataset] : kDatasetFlags) {
    if (s.has(flag) && (!s.trace.empty() || d != dataset)) {
      throw Error(flag, std::string("has no effect without --dataset-name ") + dataset +
                            (s.trace.empty() ? "" : " (and --trace gives the requests)"));
    }
  }
  if (s.trace.empty() && d == "servegen") {
    if (s.servegen.empty()) throw Error("servegen", "name the clients' chunk-N-trace.csv files");
    for (const char* flag :
         {"input-len", "output-len", "num-requests", "num-prompts", "burstiness"}) {
      if (s.has(flag)) {
        throw Error(flag,
                    "has no effect with --dataset-name servegen: the clients' windows give "
                    "the arrivals and lengths");
      }
    }
  }
  if (s.trace.empty() && d == "mixture") {
    if (s.client_mix.empty()) throw Error("client-mix", "name the client classes of the mixture");
    for (const char* flag : {"input-len", "output-len", "burstiness"}) {
      if (s.has(flag)) {
        throw Error(flag,
                    "has no effect with --dataset-name mixture: each class of --client-mix "
                    "sets its own");
      }
    }
  }
  if (!s.trace.empty() || d != "prefix_repetition") return;
  for (const char* flag : {"input-len", "output-len"}) {
    if (s.has(flag)) {
      throw Error(flag,
                  "has no effect with --dataset-name prefix_repetition: prompts are "
                  "--prefix-repetition-prefix-len + --prefix-repetition-suffix-len tokens, "
                  "outputs --prefix-repetition-output-len");
    }
  }
  if (num_requests(s) < s.prefix_repetition_num_prefixes) {  // as vLLM's ValueError
    throw Error("prefix-repetition-num-prefixes",
                "must be <= the number of requests (" + std::to_string(num_requests(s)) +
                    "): each prefix starts num-requests / num-prefixes prompts");
  }
}

}  // namespace

void check_flags(const RunSpec& s) {
  tensor_parallel_size(s);
  simulate_options(s);  // the fleet's flags
  num_requests(s);
  scheduler_spec(s);
  if (s.seed < 0) throw Error("seed", "must be >= 0");
  if (s.max_concurrency < 0) throw Error("max-concurrency", "must be >= 1 (or 0: open loop)");
  if (s.num_seeds < 1 || s.num_seeds > 1000) throw Error("num-seeds", "must be in [1, 1000]");
  if (s.trace_replicates != "auto") parse_resample(s.trace_replicates);
  if (s.seed > std::numeric_limits<int64_t>::max() - (s.num_seeds - 1)) {
    throw Error("num-seeds", "seeds --seed .. --seed + N - 1 would pass 2^63 - 1: lower --seed");
  }
  SchedulerConfig sched;  // the values' ranges, before any point is simulated
  sched.max_num_batched_tokens = s.max_num_batched_tokens;
  sched.max_num_seqs = s.max_num_seqs;
  sched.block_size = s.block_size;
  sched.long_prefill_token_threshold = s.long_prefill_token_threshold;
  check_scheduler_values(sched);
  MemoryPlanOptions memory;
  memory.gpu_memory_utilization = s.gpu_memory_utilization;
  memory.runtime_reserve_gib = s.has("runtime-reserve-gib") ? s.runtime_reserve_gib : NAN;
  memory.num_gpu_blocks_override = s.num_gpu_blocks;
  check_memory_values(memory);
  // A file and a name for the same thing: which one was meant is not ours to guess.
  if (!s.model_file.empty() && s.has("model")) {
    throw Error("model-file", "and --model both name the model: give one");
  }
  if (!s.gpu_file.empty() && s.has("gpu")) {
    throw Error("gpu-file", "and --gpu both name the GPU: give one");
  }
  for (const auto& [flag, format] : kImportFlags) {
    if (s.has(flag) && s.trace.empty()) {
      throw Error(flag, "has no effect without --trace: it says how to read a trace file");
    }
  }
  if (s.trace.empty() && std::isinf(s.request_rate) && s.has("burstiness")) {
    throw Error("burstiness", "has no effect with --request-rate inf: every request arrives at 0");
  }
  check_dataset_flags(s);
}

int64_t num_requests(const RunSpec& s) {
  if (!s.has("num-prompts")) return s.num_requests;
  if (s.has("num-requests") && s.num_requests != s.num_prompts) {
    throw Error("num-prompts", "conflicts with --num-requests");
  }
  return s.num_prompts;
}

std::string scheduler_spec(const RunSpec& s) {
  if (!s.has("enable-chunked-prefill")) return s.scheduler.empty() ? "chunked" : s.scheduler;
  const std::string named = s.enable_chunked_prefill ? "chunked" : "vllm-v0";
  if (s.scheduler.empty()) return named;
  const Policy given = parse_scheduler(s.scheduler).first;
  if (v1_scheduler(given)) {
    // vLLM V1 always chunks prefills in servesim (vLLM's --no-enable-chunked-prefill for V1
    // is not modelled).
    if (!s.enable_chunked_prefill) {
      throw Error("enable-chunked-prefill",
                  "false is not modelled for vllm-v1 (V1 chunks prefills)");
    }
    return s.scheduler;
  }
  if (policy_name(given) != named) {
    throw Error("enable-chunked-prefill", "contradicts --scheduler " + s.scheduler +
                                              " (chunked prefill is the chunked policy)");
  }
  return s.scheduler;
}

namespace {

// The autoscaler the flags ask for, into F.autoscale (Error naming the flag).
void autoscale_options(const RunSpec& s, bool pools, FleetOptions& f) {
  static const char* const kFlags[] = {
      "autoscale-target",   "min-replicas",      "max-replicas",
      "autoscale-period-s", "scale-up-window-s", "scale-down-window-s",
      "provision-s",        "engine-startup-s",  "model-load-gb-per-s"};
  const bool scheduled = !s.autoscale_schedule.empty();
  if (s.autoscale.empty() && !scheduled) {
    for (const char* flag : kFlags) {
      if (s.has(flag)) throw Error(flag, "needs --autoscale METRIC");
    }
    return;
  }
  AutoscaleOptions& a = f.autoscale;
  a.enabled = true;
  if (scheduled) {
    a.metric = ScaleMetric::kSchedule;
    a.schedule = s.autoscale_schedule;
  } else {
    a.metric = parse_scale_metric(s.autoscale);
    if (!s.has("autoscale-target")) throw Error("autoscale", "needs --autoscale-target X");
    if (!s.has("max-replicas")) throw Error("autoscale", "needs --max-replicas N");
  }
  if (pools) {
    throw Error("autoscale",
                "scales a fleet of one configuration (not --replica-gpus or prefill/decode "
                "pools)");
  }
  a.target = s.autoscale_target;
  a.min_replicas = s.min_replicas;
  a.max_replicas = scheduled ? 0 : s.max_replicas;
  for (const auto& [t, n] : a.schedule)
    a.max_replicas = std::max(a.max_replicas, n);
  a.period_s = s.autoscale_period_s;
  a.up_window_s = s.scale_up_window_s;
  a.down_window_s = s.scale_down_window_s;
  a.provision_s = s.provision_s;
  a.startup_s = s.engine_startup_s;
  a.load_gb_per_s = s.model_load_gb_per_s;
  check_autoscale(a);
  // The count at the start: --num-replicas when given, else the fewest.
  const bool counted = s.has("num-replicas") || s.has("data-parallel-size");
  if (!counted) f.num_replicas = a.min_replicas;
  if (!scheduled && (f.num_replicas < a.min_replicas || f.num_replicas > a.max_replicas)) {
    throw Error("num-replicas", "must be in [--min-replicas, --max-replicas] with --autoscale");
  }
}

}  // namespace

SimulateOptions simulate_options(const RunSpec& s) {
  SimulateOptions o;
  o.metrics.percentiles = s.metric_percentiles;
  o.metrics.goodput = s.goodput;
  o.max_concurrency = s.max_concurrency;
  if (s.has("num-replicas") && s.has("data-parallel-size") &&
      s.num_replicas != s.data_parallel_size) {
    throw Error("data-parallel-size", "contradicts --num-replicas");
  }
  o.fleet.num_replicas = s.has("data-parallel-size") ? s.data_parallel_size : s.num_replicas;
  if (o.fleet.num_replicas < 1 || o.fleet.num_replicas > kMaxReplicas) {
    throw Error(s.has("data-parallel-size") ? "data-parallel-size" : "num-replicas",
                "must be in [1, " + std::to_string(kMaxReplicas) + "]");
  }
  o.fleet.router.kind = parse_router(s.router);
  o.fleet.router.signal_delay_s = s.router_signal_delay_s;
  if (!(s.router_signal_delay_s >= 0) || !std::isfinite(s.router_signal_delay_s)) {
    throw Error("router-signal-delay-s", "must be a number of seconds >= 0");
  }
  const bool pools = s.prefill_replicas > 0 || s.decode_replicas > 0 || !s.replica_gpus.empty();
  autoscale_options(s, pools, o.fleet);
  // --num-replicas 1 --router X is a fleet of one (a loop over 1, 2, 4 replicas, issue 25): its
  // router sends everything to it. A router without any replica count is a mistake.
  const bool counted = s.has("num-replicas") || s.has("data-parallel-size");
  if (o.fleet.num_replicas == 1 && !pools && !counted && !o.fleet.autoscale.enabled &&
      (s.has("router") || s.has("router-signal-delay-s"))) {
    throw Error(s.has("router") ? "router" : "router-signal-delay-s",
                "routes between replicas: give --num-replicas N (1 for a fleet of one)");
  }
  return o;
}

namespace {

// One pool of the fleet: S on GPU and TP (as given when empty or 0), resolved for SCHEDULER.
ReplicaGroup fleet_group(const RunSpec& s, const std::string& scheduler, Inputs& inputs,
                         const std::string& gpu, int tp, int count, ReplicaRole role) {
  RunSpec g = s;
  if (!gpu.empty()) {
    g.gpu = gpu;
    g.gpu_file.clear();
  }
  if (tp > 0) {
    g.tensor_parallel_size = tp;
    g.tp = 0;
  }
  return {policy_config(base_config(g, inputs), g, scheduler), count, role};
}

}  // namespace

void add_fleet_groups(const RunSpec& s, const std::string& scheduler, Inputs& inputs,
                      SimulateOptions& o, SimConfig& config) {
  const bool disaggregated = s.prefill_replicas > 0 || s.decode_replicas > 0;
  if (disaggregated) {
    if (s.prefill_replicas < 1 || s.decode_replicas < 1) {
      throw Error(s.prefill_replicas < 1 ? "prefill-replicas" : "decode-replicas",
                  "a disaggregated fleet needs both pools: >= 1 each");
    }
    if (s.has("num-replicas") || s.has("data-parallel-size") || !s.replica_gpus.empty()) {
      throw Error("prefill-replicas",
                  "sizes the fleet itself: drop --num-replicas and "
                  "--replica-gpus");
    }
    if (s.prefill_tp < 0 || s.decode_tp < 0) {
      throw Error(s.prefill_tp < 0 ? "prefill-tp" : "decode-tp", "must be >= 1 (0: --tp)");
    }
    o.fleet.groups = {fleet_group(s, scheduler, inputs, s.prefill_gpu, s.prefill_tp,
                                  s.prefill_replicas, ReplicaRole::kPrefill),
                      fleet_group(s, scheduler, inputs, s.decode_gpu, s.decode_tp,
                                  s.decode_replicas, ReplicaRole::kDecode)};
  } else if (!s.replica_gpus.empty()) {
    if (s.has("num-replicas") || s.has("data-parallel-size")) {
      throw Error("replica-gpus", "sizes the fleet itself: drop --num-replicas");
    }
    std::istringstream items(s.replica_gpus);
    for (std::string item; std::getline(items, item, ',');) {
      const size_t colon = item.rfind(':');
      char* end = nullptr;
      const long count =
          colon == std::string::npos ? 0 : std::strtol(item.c_str() + colon + 1, &end, 10);
      if (colon == std::string::npos || colon == 0 || *end != '\0' || count < 1 ||
          count > kMaxReplicas) {
        throw Error("replica-gpus", "'" + item + "': expected GPU:COUNT, e.g. h100-sxm:4");
      }
      o.fleet.groups.push_back(fleet_group(s, scheduler, inputs, item.substr(0, colon), 0,
                                           int(count), ReplicaRole::kColocated));
    }
  } else {
    if (s.has("prefill-gpu") || s.has("decode-gpu") || s.has("prefill-tp") || s.has("decode-tp") ||
        s.has("kv-transfer-gbps") || s.has("kv-transfer-latency-s") || s.has("kv-transfer-link")) {
      throw Error("prefill-replicas",
                  "the prefill and decode flags need --prefill-replicas and "
                  "--decode-replicas");
    }
    return;
  }
  if (!o.fleet.groups.empty() && o.fleet.groups.size() == 1 && s.prefill_replicas == 0 &&
      o.fleet.groups[0].count == 1) {
    config = o.fleet.groups[0].config;  // one replica: a plain run, on that replica's GPU
    o.fleet.groups.clear();
    return;
  }
  o.fleet.kv_transfer_gb_per_s = s.kv_transfer_gbps / 8;  // Gb/s to GB/s
  o.fleet.kv_transfer_latency_s = s.kv_transfer_latency_s;
  if (!(s.kv_transfer_gbps == 0 || (s.kv_transfer_gbps >= 1e-3 && s.kv_transfer_gbps <= 1e6))) {
    throw Error("kv-transfer-gbps",
                "must be 0 (the link --kv-transfer-link names) or in [0.001, 1e6] Gb/s");
  }
  if (s.kv_transfer_link != "network" && s.kv_transfer_link != "nvlink") {
    throw Error("kv-transfer-link", "expected network or nvlink, got '" + s.kv_transfer_link + "'");
  }
  o.fleet.kv_transfer_nvlink = s.kv_transfer_link == "nvlink";
  if (!(s.kv_transfer_latency_s >= 0 && s.kv_transfer_latency_s <= 3600)) {
    throw Error("kv-transfer-latency-s", "must be in [0, 3600] seconds");
  }
}

RunSpec with_seed(const RunSpec& s, int64_t k) {
  RunSpec r = s;
  r.seed = s.seed + k;
  return r;
}

GoodputSlo parse_goodput(const std::string& text) {
  GoodputSlo g;
  std::istringstream in(text);
  for (std::string term; in >> term;) {
    const auto colon = term.find(':');
    const std::string key = term.substr(0, colon);
    double v = 0;
    const bool number = colon != std::string::npos && parse_double(term.substr(colon + 1), v);
    double* slot = key == "ttft"   ? &g.ttft_ms
                   : key == "tpot" ? &g.tpot_ms
                   : key == "e2el" ? &g.e2el_ms
                                   : nullptr;
    if (slot == nullptr || !number || !(v > 0)) {
      throw Error("goodput", "'" + term + "' must be ttft:MS, tpot:MS or e2el:MS (MS > 0)");
    }
    *slot = v;
  }
  if (!g.any()) throw Error("goodput", "give at least one SLO, e.g. ttft:200 tpot:50");
  return g;
}

std::vector<double> parse_percentiles(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    double q = 0;
    if (!parse_double(item, q) || q < 0 || q > 100) {
      throw Error("metric-percentiles", "'" + item + "' is not a percentile in [0, 100]");
    }
    out.push_back(q);
  }
  if (out.empty()) throw Error("metric-percentiles", "give percentiles, e.g. 50,90,99");
  return out;
}

int tensor_parallel_size(const RunSpec& s) {
  if (!s.has("tp")) return s.tensor_parallel_size;
  if (s.has("tensor-parallel-size") && s.tensor_parallel_size != s.tp) {
    throw Error("tp", "conflicts with --tensor-parallel-size");
  }
  return s.tp;
}

std::pair<Policy, int64_t> parse_scheduler(const std::string& spec) {
  const auto colon = spec.find(':');
  const Policy policy = parse_policy(spec.substr(0, colon));
  if (colon == std::string::npos) return {policy, 0};
  const std::string budget = spec.substr(colon + 1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(budget.data(), budget.data() + budget.size(), v);
  if (ec != std::errc() || end != budget.data() + budget.size() || v < 1) {
    throw Error("scheduler", "'" + spec + "': the token budget after ':' must be an integer >= 1");
  }
  return {policy, v};
}

namespace {

// The transforms to apply: the what-if flags, with the rate (0 keeps a trace's timing),
// burstiness and seed of the run.
TransformOptions transforms(const RunSpec& s, double request_rate) {
  TransformOptions o = s.what_if;
  o.request_rate = request_rate;
  o.burstiness = s.burstiness;
  o.seed = uint64_t(s.seed);
  return o;
}

// How replicates of trace T are drawn: --trace-replicates, auto meaning bootstrap when a timed
// trace runs as one of several replicates (--num-seeds > 1).
Resample trace_replicates(const RunSpec& s, const Trace& t) {
  if (s.trace_replicates == "auto") {
    return t.timed && s.num_seeds > 1 ? Resample::kBootstrap : Resample::kNone;
  }
  const Resample r = parse_resample(s.trace_replicates);
  if (r != Resample::kNone && !t.timed) {
    throw Error("trace-replicates", s.trace +
                                        " has no arrival times to resample: its arrivals are "
                                        "drawn from --seed (give --num-seeds alone)");
  }
  return r;
}

// The flags that would do nothing on trace T: generator flags on a timed trace (its arrival times
// are replayed), and import flags of another format.
void check_trace_flags(const RunSpec& s, const Trace& t, Resample replicates) {
  for (const char* flag : {"burstiness", "seed", "num-seeds"}) {
    if (replicates != Resample::kNone && std::string(flag) != "burstiness") continue;
    if (t.timed && s.has(flag)) {
      throw Error(flag, "has no effect on " + s.trace +
                            ": its arrival times are replayed (rescaled by --request-rate); it "
                            "shapes generated arrivals (synthetic workloads, length-only traces)");
    }
  }
  for (const auto& [flag, format] : kImportFlags) {
    if (s.has(flag) && t.stored && std::string(flag) != "trace-format") {
      throw Error(flag, "has no effect on " + s.trace +
                            ": a servesim trace file was imported already (give it to "
                            "`servesim trace import`)");
    }
    if (s.has(flag) && *format != '\0' && t.format != format) {
      throw Error(flag, std::string("reads ") + format + " traces; " + s.trace + " is in the " +
                            t.format + " format");
    }
  }
}

LoadedWorkload load_trace_workload(const RunSpec& s, Inputs& inputs) {
  for (const char* flag : {"num-requests", "num-prompts", "input-len", "output-len"}) {
    if (s.has(flag)) {
      throw Error(flag,
                  "not used with --trace: the trace gives the requests (see "
                  "--max-requests and the what-if transforms)");
    }
  }
  Trace t = *inputs.trace(s.trace, s.import);
  const Resample replicates = trace_replicates(s, t);
  check_trace_flags(s, t, replicates);
  TransformOptions o = transforms(s, s.has("request-rate") ? s.request_rate : 0);
  o.resample = replicates;
  apply_transforms(t, o);
  if (!t.timed) {
    throw Error("request-rate", s.trace + " has no arrival times: give --request-rate");
  }
  if (s.rate_scale != 1) scale_trace_rate(t, s.rate_scale, uint64_t(s.seed) ^ 0x7a26e5ca1eULL);
  const auto last = std::max_element(t.arrival_s.begin(), t.arrival_s.end());
  if (last != t.arrival_s.end() && !(*last <= kMaxSimTime_s)) {
    throw Error(s.trace, 0, "arrival",
                format("a request arrives at %.3g s, past the 1e9 s a simulation may span (where "
                       "a double still resolves sub-microsecond times); rescale with "
                       "--time-scale or --request-rate",
                       *last));
  }
  ordered_json j = trace_json(t);
  if (replicates != Resample::kNone) {  // the replicate drawn: its seed, as generators record it
    j["replicates"] = resample_name(replicates);
    j["seed"] = s.seed;
  }
  return {to_workload(t), std::move(j), trace_text(t)};
}

}  // namespace

namespace {

// The JSON description J of a generated workload, with the dataset's name after its kind.
ordered_json with_dataset(const std::string& name, const ordered_json& j) {
  ordered_json out = {{"kind", j["kind"]}, {"dataset_name", name}};
  for (const auto& item : j.items()) {
    if (item.key() != "kind") out[item.key()] = item.value();
  }
  return out;
}

// --dataset-name prefix_repetition. Its lengths are fixed, and are described as such.
LoadedWorkload prefix_repetition_workload(const RunSpec& s, SyntheticOptions w) {
  PrefixRepetitionOptions o;
  o.num_requests = w.num_requests;
  o.request_rate = w.request_rate;
  o.burstiness = w.burstiness;
  o.prefix_len = s.prefix_repetition_prefix_len;
  o.suffix_len = s.prefix_repetition_suffix_len;
  o.num_prefixes = s.prefix_repetition_num_prefixes;
  o.output_len = s.prefix_repetition_output_len;
  o.seed = w.seed;
  Workload requests = generate_prefix_repetition(o);
  w.num_requests = o.num_made();
  w.input_len = LengthDist::parse("fixed:" + std::to_string(o.prefix_len + o.suffix_len), "");
  w.output_len = LengthDist::parse("fixed:" + std::to_string(o.output_len), "");
  ordered_json j = with_dataset("prefix_repetition", synthetic_json(w));
  j["prefix_len"] = o.prefix_len;
  j["suffix_len"] = o.suffix_len;
  j["num_prefixes"] = o.num_prefixes;
  j["prompts_per_prefix"] = o.num_made() / o.num_prefixes;
  std::string text = "prefix_repetition, " + synthetic_text(w);
  text += format(", %lld prefixes of %lld tokens, %lld prompts each", (long long)o.num_prefixes,
                 (long long)o.prefix_len, (long long)(o.num_made() / o.num_prefixes));
  return {std::move(requests), std::move(j), std::move(text)};
}

// --dataset-name multi_turn: --input-len is the new user tokens of a turn.
LoadedWorkload multi_turn_workload(const RunSpec& s, const SyntheticOptions& w) {
  MultiTurnOptions o;
  o.base = w;
  o.num_turns = s.num_turns;
  o.think_time_s = s.think_time_s;
  ordered_json j = with_dataset("multi_turn", synthetic_json(w));
  j["num_turns"] = o.num_turns;
  j["think_time_s"] = o.think_time_s;
  std::string text = "multi_turn, " + synthetic_text(w);
  text += format(" (input: new tokens a turn), %lld turns a session, think time %g s",
                 (long long)o.num_turns, o.think_time_s);
  return {generate_multi_turn(o), std::move(j), std::move(text)};
}

// --dataset-name servegen: the clients' windows over the span; --request-rate, when given, is
// the mean rate over the span (ServeGen's rate function, one factor for every window).
LoadedWorkload servegen_workload(const RunSpec& s) {
  std::vector<ServeGenClient> clients;
  std::istringstream files(s.servegen);
  for (std::string f; std::getline(files, f, ',');)
    clients.push_back(load_servegen_client(f));
  ServeGenOptions o;
  o.start_s = s.servegen_start_s;
  o.duration_s = s.servegen_duration_s;
  o.rate_scale = s.servegen_rate_scale;
  o.seed = uint64_t(s.seed);
  if (s.has("request-rate")) {
    if (s.has("servegen-rate-scale")) {
      throw Error("servegen-rate-scale", "contradicts --request-rate (which sets the scale)");
    }
    o.rate_scale = 1;
    const double natural = double(generate_servegen(clients, o).size()) / o.duration_s;
    if (!(natural > 0)) throw Error("request-rate", "the clients send nothing in the span");
    if (!std::isfinite(s.request_rate)) throw Error("request-rate", "must be finite for servegen");
    o.rate_scale = s.request_rate / natural;
  }
  o.rate_scale *= s.rate_scale;
  Workload w = generate_servegen(clients, o);
  ordered_json j = {{"kind", "generated"},        {"dataset_name", "servegen"},
                    {"clients", s.servegen},      {"start_s", o.start_s},
                    {"duration_s", o.duration_s}, {"rate_scale", o.rate_scale},
                    {"requests", w.size()},       {"seed", s.seed}};
  std::string text =
      format("servegen, %zu clients, %zu requests over %g s from t=%g s (rate x%.3g)",
             clients.size(), w.size(), o.duration_s, o.start_s, o.rate_scale);
  const InputParts& parts = w.input_parts;
  if (!parts.empty() && !w.empty()) {  // the input's tokens by modality, in the mean
    ordered_json mean = ordered_json::object();
    text += ", input";
    for (size_t k = 0; k < parts.names.size(); ++k) {
      double sum = 0;
      for (size_t i = 0; i < w.size(); ++i)
        sum += parts.at(i, k);
      mean[parts.names[k]] = sum / double(w.size());
      text += format(" %s %.0f", parts.names[k].c_str(), sum / double(w.size()));
    }
    text += " (mean; columns input_* of the requests)";
    j["input_mean_tokens"] = std::move(mean);
  }
  return {std::move(w), std::move(j), std::move(text)};
}

// --dataset-name mixture: the classes at their own rates, or scaled to --request-rate in all.
LoadedWorkload mixture_workload(const RunSpec& s) {
  const std::vector<ClientClass> classes = parse_client_mix(s.client_mix);
  double total = 0;
  for (const ClientClass& c : classes)
    total += c.rate;
  const double scale = (s.has("request-rate") ? s.request_rate / total : 1.0) * s.rate_scale;
  Workload w = generate_client_mixture(
      classes, int64_t(std::llround(double(num_requests(s)) * s.rate_scale)), scale,
      uint64_t(s.seed));
  ordered_json j = {{"kind", "generated"},        {"dataset_name", "mixture"},
                    {"client_mix", s.client_mix}, {"rate_scale", scale},
                    {"requests", w.size()},       {"seed", s.seed}};
  std::string text = format("mixture of %zu client classes, %zu requests at %.3g req/s in all",
                            classes.size(), w.size(), total * scale);
  return {std::move(w), std::move(j), std::move(text)};
}

// The generator --dataset-name names.
LoadedWorkload generate_dataset(const RunSpec& s) {
  if (s.dataset_name == "servegen") return servegen_workload(s);
  if (s.dataset_name == "mixture") return mixture_workload(s);
  SyntheticOptions w;
  w.num_requests = int64_t(std::llround(double(num_requests(s)) * s.rate_scale));
  w.request_rate = s.request_rate * s.rate_scale;
  w.burstiness = s.burstiness;
  w.input_len = s.input_len;
  w.output_len = s.output_len;
  w.seed = uint64_t(s.seed);
  if (s.dataset_name == "prefix_repetition") return prefix_repetition_workload(s, w);
  if (s.dataset_name == "multi_turn") return multi_turn_workload(s, w);
  return {generate_synthetic(w), synthetic_json(w), synthetic_text(w)};
}

}  // namespace

LoadedWorkload load_workload(const RunSpec& s, Inputs& inputs) {
  if (!s.trace.empty()) return load_trace_workload(s, inputs);
  LoadedWorkload out = generate_dataset(s);
  if (!s.rate_pattern.empty()) {
    if (s.dataset_name == "servegen") {
      throw Error("rate-pattern", "servegen clients have their own rate over time");
    }
    const RatePattern p = RatePattern::parse(s.rate_pattern, "rate-pattern");
    apply_rate_pattern(out.requests, p);
    out.json["rate_pattern"] = p.spec;
    out.text += ", rate pattern " + p.spec;
  }
  if (s.num_priorities > 1 || s.has("num-priorities")) {
    draw_priorities(out.requests, s.num_priorities, uint64_t(s.seed));
    out.json["num_priorities"] = s.num_priorities;
    out.text += format(", priorities uniform in 0..%lld", (long long)(s.num_priorities - 1));
  }
  const TransformOptions what_if = transforms(s, 0);
  if (what_if.any()) {  // the what-if transforms apply to generated requests too, spans included
    // (not the input's modalities: a transform changes the input, so its parts are dropped)
    Trace t = from_workload(out.requests);
    apply_transforms(t, what_if);
    out.requests = to_workload(t);
    out.json["transforms"] = what_if.describe();
    out.text += ", " + what_if.describe();
  }
  return out;
}

SimConfig base_config(const RunSpec& s, Inputs& inputs) {
  SimConfig c;
  c.model = inputs.model(s.model, s.model_file);
  apply_serving_dtypes(c.model, s.quantization, s.kv_cache_dtype);
  c.gpu = inputs.gpu(s.gpu, s.gpu_file);
  c.tp = tensor_parallel_size(s);
  c.scheduler.max_model_len = s.max_model_len;
  c.scheduler.max_num_seqs = s.max_num_seqs;
  c.scheduler.block_size = s.block_size;
  c.memory.gpu_memory_utilization = s.gpu_memory_utilization;
  c.memory.runtime_reserve_gib = s.has("runtime-reserve-gib") ? s.runtime_reserve_gib : NAN;
  c.memory.num_gpu_blocks_override = s.num_gpu_blocks;
  if (s.max_num_batched_tokens < 0) throw Error("max-num-batched-tokens", "must be >= 1");
  c.cost_model = s.cost_model;
  if (!s.calibration.empty()) {
    if (s.cost_model != "roofline") throw Error("calibration", "only the roofline model takes one");
    std::istringstream files(s.calibration);
    for (std::string path; std::getline(files, path, ',');) {
      if (!path.empty()) c.calibrations.push_back(inputs.calibration(path));
    }
  }
  if (!s.engine.empty()) {
    c.engine = parse_engine(s.engine);
    c.engine_given = true;
  }
  if (s.has("frontend-latency-ms")) {
    if (!(s.frontend_latency_ms >= 0 && s.frontend_latency_ms <= 10000)) {
      throw Error("frontend-latency-ms", "must be in [0, 10000] ms");
    }
    c.frontend_latency_s = s.frontend_latency_ms * 1e-3;
  }
  if (!s.profiles.empty()) {
    if (s.cost_model != "table") throw Error("profiles", "only --cost-model table reads profiles");
    c.profiles = inputs.profiles(s.profiles, c.gpu.name);
  }
  return c;
}

namespace {

// --enable-prefix-caching, vLLM V1's scheduler flags and its engine's async scheduling, onto a
// policy's configuration on ENGINE. The V1 scheduler's flags on a V0 policy, and async
// scheduling on the V0 engine, would do nothing, so they are errors.
void apply_cache_and_v1_flags(SchedulerConfig& c, const RunSpec& s, Engine engine) {
  const bool v1 = v1_scheduler(c.policy);
  if (s.has("enable-prefix-caching") && s.has("no-enable-prefix-caching")) {
    throw Error("no-enable-prefix-caching", "contradicts --enable-prefix-caching");
  }
  // vLLM's defaults: on in V1 (v0.8+), off in V0.
  c.enable_prefix_caching = v1;
  if (s.has("enable-prefix-caching")) c.enable_prefix_caching = s.enable_prefix_caching;
  if (s.has("no-enable-prefix-caching")) c.enable_prefix_caching = !s.no_enable_prefix_caching;
  if (c.enable_prefix_caching && !v1) {
    throw Error(
        s.has("enable-prefix-caching") ? "enable-prefix-caching" : "scheduler",
        std::string("the prefix cache is modelled for vllm-v1 only, not ") + policy_name(c.policy));
  }
  for (const char* flag :
       {"scheduling-policy", "long-prefill-token-threshold", "scheduler-reserve-full-isl"}) {
    if (!v1 && s.has(flag)) {
      throw Error(flag, std::string("is a vLLM V1 scheduler option; ") + policy_name(c.policy) +
                            " is a V0 policy (use --scheduler vllm-v1)");
    }
  }
  for (const char* flag : {"async-scheduling", "no-async-scheduling"}) {
    if (engine != Engine::kV1 && s.has(flag)) {
      throw Error(flag, std::string("is the V1 engine's (EngineCore's batch queue); ") +
                            policy_name(c.policy) + " runs on the V0 engine here (--engine v1)");
    }
  }
  if (s.scheduling_policy == "fcfs") {
    c.scheduling_policy = WaitingOrder::kFcfs;
  } else if (s.scheduling_policy == "priority") {
    c.scheduling_policy = WaitingOrder::kPriority;
  } else {
    throw Error("scheduling-policy",
                "expected fcfs or priority, got '" + s.scheduling_policy + "'");
  }
  c.long_prefill_token_threshold = s.long_prefill_token_threshold;
  if (s.has("async-scheduling") && s.has("no-async-scheduling")) {
    throw Error("no-async-scheduling", "contradicts --async-scheduling");
  }
  c.async_scheduling = engine == Engine::kV1 && s.async_scheduling && !s.no_async_scheduling;
  c.reserve_full_isl = s.scheduler_reserve_full_isl;
}

}  // namespace

SimConfig policy_config(const SimConfig& base, const RunSpec& s, const std::string& scheduler) {
  const auto [policy, budget] = parse_scheduler(scheduler);
  SimConfig c = base;
  c.scheduler.policy = policy;
  if (budget > 0 && s.max_num_batched_tokens > 0 && budget != s.max_num_batched_tokens) {
    throw Error("scheduler", "'" + scheduler +
                                 "' sets a token budget that contradicts "
                                 "--max-num-batched-tokens " +
                                 std::to_string(s.max_num_batched_tokens));
  }
  c.scheduler.max_num_batched_tokens = budget > 0 ? budget : s.max_num_batched_tokens;
  apply_cache_and_v1_flags(c.scheduler, s, c.engine_given ? c.engine : default_engine(policy));
  return resolve(c);
}

std::vector<GpuPool> gpu_pools(const SimConfig& c, const SimulateOptions& o) {
  auto pool = [](const SimConfig& g, int replicas, const char* role) {
    GpuPool p;
    p.gpu = g.gpu.name;
    p.role = role;
    p.quantization = g.model.quantization();
    p.replicas = replicas;
    p.tp = g.tp;
    p.file_cost = g.gpu.cost_per_hour;
    return p;
  };
  std::vector<GpuPool> pools;
  for (const ReplicaGroup& g : o.fleet.groups) {
    pools.push_back(pool(g.config, g.count,
                         g.role == ReplicaRole::kPrefill  ? "prefill"
                         : g.role == ReplicaRole::kDecode ? "decode"
                                                          : "colocated"));
  }
  if (pools.empty()) pools.push_back(pool(c, std::max(o.fleet.num_replicas, 1), "colocated"));
  return pools;
}

PointRun run_point(const RunSpec& s, Inputs& inputs, const SimulateOptions& keep) {
  check_flags(s);
  LoadedWorkload w = load_workload(s, inputs);
  PointRun p;
  if (s.trace.empty() || s.has("request-rate")) p.request_rate = s.request_rate;
  SimConfig c = policy_config(base_config(s, inputs), s, scheduler_spec(s));
  SimulateOptions o = simulate_options(s);
  add_fleet_groups(s, scheduler_spec(s), inputs, o, c);
  o.keep_steps = keep.keep_steps;
  o.keep_histogram = keep.keep_histogram;
  o.progress = keep.progress;
  p.run = simulate(c, w.requests, nullptr, o);
  p.workload = std::move(w.json);
  p.pools = gpu_pools(c, o);
  return p;
}

void check_point(const RunSpec& s, Inputs& inputs) {
  check_flags(s);
  if (!s.scheduler.empty()) parse_scheduler(s.scheduler);
  SimConfig c = base_config(s, inputs);  // model, GPU, calibration and profile files
  SimulateOptions fleet = simulate_options(s);
  add_fleet_groups(s, scheduler_spec(s), inputs, fleet, c);  // the pools' GPUs and flags
  RunSpec one = s;  // the workload's flags, on one generated request
  one.num_requests = one.num_prompts = std::min<int64_t>(num_requests(s), 1);
  // prefix_repetition needs a request per prefix (vLLM refuses fewer).
  if (s.dataset_name == "prefix_repetition") {
    one.num_requests = one.num_prompts = std::max<int64_t>(s.prefix_repetition_num_prefixes, 1);
  }
  load_workload(one, inputs);
}

}  // namespace servesim
