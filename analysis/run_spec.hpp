// RunSpec: one simulation as a user asks for it, in types: the values of `servesim run`'s flags
// (model and GPU names or files, the scheduler, the workload, the what-if transforms), parsed,
// before anything is looked up or loaded. The command line builds one (cli/run_flags.hpp);
// sweeps, capacity searches and the check gate build theirs from a base and typed patches, never
// from a command line. Resolving a RunSpec looks names up in the catalogues and reads files through
// Inputs, a cache shared by every point of a command, so that a trace is imported once per
// process and then shared read-only between threads.
// Nothing here or below reads a flag by its name: where a value given and the same value by
// default mean different things, the setting is a Given<T> that says which (names appear only
// in error messages, so that they name what the user typed).
// Promises: a RunSpec's run depends only on its values, which of them were given, and the files
// it names; every check a `run` command makes on its flags is made, in the same order, whoever
// built the RunSpec.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "models/calibration.hpp"
#include "models/gpu.hpp"
#include "models/model.hpp"
#include "models/profiles.hpp"
#include "models/roofline.hpp"
#include "sim/simulation.hpp"
#include "traces/import.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace.hpp"
#include "traces/transform.hpp"

namespace servesim {

// The built-in default scenario: Llama-3.1-8B on one H100 under a conversation-like load near
// saturation (ShareGPT-like lognormal lengths, Poisson arrivals), where prefill priority and
// chunked prefill visibly trade TTFT against ITL.
inline constexpr const char* kDefaultModel = "llama-3.1-8b";
inline constexpr const char* kDefaultGpu = "h100-sxm";
inline constexpr int64_t kDefaultNumRequests = 2000;
inline constexpr double kDefaultRate = 9;
inline constexpr const char* kDefaultInputLen = "lognormal:1024:0.8:16:6000";
inline constexpr const char* kDefaultOutputLen = "lognormal:256:0.8:4:2000";

// One group of a mixed fleet (--replica-gpus GPU:COUNT,...): COUNT colocated replicas on GPU (a
// catalogue name or alias).
struct GpuCount {
  std::string gpu;
  int count = 1;
  bool operator==(const GpuCount&) const = default;
};

// "h100-sxm:4,a100-80g:2" -> its groups, parsed once where the flag is read; Error naming
// --replica-gpus when an item is not GPU:COUNT with 1 <= COUNT <= kMaxReplicas.
std::vector<GpuCount> parse_replica_gpus(const std::string& text);
// The groups in the flag's own form, for messages and tables.
std::string replica_gpus_text(const std::vector<GpuCount>& groups);

// A setting of a RunSpec with its default, and whether it was set (by a flag, a grid's patch or
// a command's own choice): where the default and an explicit value of the same number mean
// different things (--request-rate with a trace rescales it; --tp against
// --tensor-parallel-size; a value that would do nothing is an error, the default is not). It
// reads as its value; assigning a value sets it.
template <class T>
class Given {
 public:
  Given() = default;
  explicit Given(T v) : value_(std::move(v)) {}
  Given& operator=(T v) {
    value_ = std::move(v);
    set_ = true;
    return *this;
  }
  // It reads as a T. A conversion on to a narrower type (an int from a Given<double>, as in
  // `given() ? rate : 0`, which truncated --request-rate) is a -Wfloat-conversion error in CI's
  // build (CMakeLists.txt); write *g and convert it in the open. (A conversion template
  // constrained to T alone, which refused it outright, builds with Clang but not with GCC 12:
  // GCC takes no conversion template into the built-in operators, so `g < 0` had no match.)
  operator const T&() const { return value_; }
  const T& operator*() const { return value_; }
  const T* operator->() const { return &value_; }
  // Compared by value (given or not): a number by the built-in operators, through the
  // conversion; a string (whose operator== is a template, which sees no conversion) here. Not a
  // constrained template: GCC 12 finds its constraint recursive.
  friend bool operator==(const Given& a, const T& b) requires(!std::is_arithmetic_v<T>) {
    return a.value_ == b;
  }
  friend bool operator==(const Given& a, const Given& b) { return a.value_ == b.value_; }
  bool given() const { return set_; }
  // As if never set; the value stays (a command that takes a setting over, e.g. capacity's
  // replica count).
  void forget() { set_ = false; }
  // For a parser that writes the value in place and says afterwards that it was given.
  T& value() { return value_; }
  void mark_given() { set_ = true; }

 private:
  T value_{};
  bool set_ = false;
};

// A setting in a JSON record is its value.
template <class Json, class T>
void to_json(Json& j, const Given<T>& g) {
  j = *g;
}

struct RunSpec {
  // Model and hardware: a catalogue name or a file (not both).
  Given<std::string> model{kDefaultModel};
  std::string model_file;
  Given<std::string> gpu{kDefaultGpu};
  std::string gpu_file;
  std::string quantization;             // vLLM's --quantization: "" (the checkpoint's), fp8, none
  std::string kv_cache_dtype = "auto";  // vLLM's --kv-cache-dtype: auto | fp8
  Given<int> tensor_parallel_size{1};
  Given<int> tp{0};  // --tp, the alias of --tensor-parallel-size
  Given<int> pipeline_parallel_size{1};
  Given<int> pp{0};  // --pp, the alias of --pipeline-parallel-size
  // vLLM --enable-expert-parallel: the routed experts spread whole over TP x the DP ranks.
  Given<bool> enable_expert_parallel{false};
  // With expert parallelism: the routing's Zipf skew over the experts (0: uniform).
  Given<double> expert_skew{0};
  // A fleet: replicas behind a router (vLLM's --data-parallel-size is the alias).
  Given<int> num_replicas{1}, data_parallel_size{0};
  Given<std::string> router{"round-robin"};
  Given<double> router_signal_delay_s{0};
  Given<std::string> prefix_index{"per-replica"};  // prefix-aware: per-replica | kv-events
  // Disaggregated prefill: pools of prefill and decode replicas, each with its GPU and TP degree
  // ("" / 0: --gpu / --tp), and the link their KV crosses (Gb/s; 0: the GPU's interconnect).
  int prefill_replicas = 0, decode_replicas = 0;
  Given<int> prefill_tp{0}, decode_tp{0};
  Given<std::string> prefill_gpu, decode_gpu;
  Given<double> kv_transfer_gbps{0}, kv_transfer_latency_s{1e-3};
  // Where the pools sit: "network" (different nodes: the prefill GPU's NIC) or "nvlink" (one
  // NVLink domain: its GPU-to-GPU link).
  Given<std::string> kv_transfer_link{"network"};
  Given<std::string> client_mix;  // --dataset-name mixture: the client classes (parse_client_mix)
  // --dataset-name servegen: client files (chunk-N-trace.csv, comma-separated) and the span.
  Given<std::string> servegen;
  Given<double> servegen_start_s{0}, servegen_duration_s{3600}, servegen_rate_scale{1};
  // An autoscaled fleet (sim/autoscaler.hpp): the metric ("" = a fixed fleet), its target per
  // replica, the bounds (--num-replicas: the count at the start), the HPA's timing and how long a
  // new replica takes to serve (NaN: start-up + weights / load bandwidth). capacity --over-time
  // sets a SCHEDULE (window start, replicas) instead of a metric.
  std::string autoscale;
  Given<double> autoscale_target{0};
  Given<int> min_replicas{1}, max_replicas{0};
  Given<double> autoscale_period_s{15}, scale_up_window_s{0}, scale_down_window_s{300};
  Given<double> provision_s{NAN}, engine_startup_s{60}, model_load_gb_per_s{2};
  std::vector<std::pair<double, int>> autoscale_schedule;
  // Mixed pools: colocated replicas of several GPUs (--replica-gpus h100-sxm:4,a100-80g:2).
  std::vector<GpuCount> replica_gpus;
  double gpu_memory_utilization = 0.9;
  Given<double> runtime_reserve_gib{0.5};  // not given: the engine's (MemoryPlanOptions)
  int64_t num_gpu_blocks = 0, max_model_len = 0;
  int block_size = 16;
  // Calibration files, comma-separated (models/calibration.hpp: each overlays the defaults).
  std::string cost_model = "roofline", calibration, profiles;
  // The engine the policy runs on: "" (the policy's: vllm-v1 on V1, the V0 policies on V0), v0
  // or v1; compare also takes per-policy.
  std::string engine;
  Given<double> frontend_latency_ms{NAN};  // the API server's latency (not given: sim/frontend's)
  // Scheduler: NAME[:MAX_NUM_BATCHED_TOKENS], "" for chunked; or vLLM's switch.
  std::string scheduler;
  Given<bool> enable_chunked_prefill{true};
  int64_t max_num_batched_tokens = 0;
  int64_t max_num_seqs = 0;  // 0 = vLLM's default for the policy and GPU
  // vLLM V1's scheduler options (vllm-v1), and the prefix cache (every policy; not given: the
  // engine's default).
  Given<std::string> scheduling_policy{"fcfs"};  // fcfs | priority
  Given<bool> enable_prefix_caching{true};
  Given<bool> no_enable_prefix_caching{false};
  Given<int64_t> long_prefill_token_threshold{0};
  Given<bool> async_scheduling{true};  // --async-scheduling [true|false]
  Given<bool> no_async_scheduling{false};
  Given<bool> scheduler_reserve_full_isl{true};
  // vLLM V1's speculative decoding: --speculative-config (vLLM's JSON) and the acceptance
  // servesim draws (analysis/engine_options.hpp).
  // Given: an empty or blank value given is refused, not taken as "off" (issue 44).
  Given<std::string> speculative_config;
  std::string spec_acceptance_rate;
  // vLLM V1's CPU KV offload (analysis/engine_options.hpp): --kv-offloading-size GiB (0 = off),
  // --kv-offloading-backend, --kv-transfer-config; the host link per GPU and direction (GB/s, 0:
  // the GPU's) and a copy's latency.
  double kv_offloading_size = 0;
  std::string kv_offloading_backend;
  Given<std::string> kv_transfer_config;
  Given<double> kv_offload_gb_per_s{0}, kv_offload_latency_s{10e-6};
  // LoRA adapters (vLLM --enable-lora, --max-loras, --max-lora-rank, --max-cpu-loras; servesim:
  // the adapters' own rank and how fast one loads from disk).
  Given<bool> enable_lora{false};
  Given<int64_t> max_loras{1}, max_lora_rank{16}, max_cpu_loras{0}, lora_rank{0};
  Given<double> lora_load_gb_per_s{2}, lora_load_latency_s{0.01};
  // A policy's choices made outside servesim (its Python module's policies; never a flag): the
  // admission order and preemption victim of vllm-v1, a router's scores. They outlive the run.
  const SchedulingHooks* scheduling_hooks = nullptr;
  RouterHook* router_hook = nullptr;
  // The adapters requests ask for: N drawn by Zipf's law of exponent S (0: uniform), for a
  // generated workload or a trace without --col-lora.
  Given<int64_t> lora_adapters{0};
  Given<double> lora_zipf{1};
  // Workload: a trace file, or the synthetic generator.
  std::string trace;
  Given<int64_t> num_requests{kDefaultNumRequests};
  Given<int64_t> num_prompts{0};  // --num-prompts, vLLM benchmark_serving's name for it
  int64_t max_concurrency = 0;    // closed loop: at most this many in flight (0 = open loop)
  // req/s, infinity = all at t = 0; given with a timed trace, the trace's mean rate becomes it.
  Given<double> request_rate{kDefaultRate};
  Given<double> burstiness{1.0};
  // The workload's rate times this, its shape over time kept (capacity --target-scale): a
  // generator draws RATE_SCALE x the requests at RATE_SCALE x the rate; a trace is superposed
  // or thinned (scale_trace_rate).
  double rate_scale = 1;
  std::string rate_pattern;  // generated arrivals: diurnal[:...] | spike:... (traces/rate_pattern)
  Given<LengthDist> input_len{LengthDist::parse(kDefaultInputLen, "input-len")};
  Given<LengthDist> output_len{LengthDist::parse(kDefaultOutputLen, "output-len")};
  Given<int64_t> seed{0};  // signed so that "-1" is an error, not 2^64 - 1
  // vLLM bench's --dataset-name: random (the generator above), prefix_repetition (shared
  // prefixes) or multi_turn (sessions whose turns extend the conversation).
  Given<std::string> dataset_name{"random"};
  Given<int64_t> prefix_repetition_prefix_len{256}, prefix_repetition_suffix_len{256},
      prefix_repetition_num_prefixes{10}, prefix_repetition_output_len{128};
  Given<int64_t> num_priorities{1};  // generated workloads: priorities drawn from 0..N-1
  Given<int64_t> num_turns{5};       // multi_turn: turns per session
  Given<double> think_time_s{10};    // multi_turn: mean gap between a turn's arrival and the next's
  // How to read the trace (a value other than ImportOptions' default needs --trace).
  ImportOptions import;
  // What-if transforms (window, max requests, scales, clips); the rate, burstiness and seed
  // above are added when they apply.
  TransformOptions what_if;
  // Metrics as vLLM's benchmark_serving.py reports them, and replicates over seeds.
  GoodputSlo goodput;
  std::vector<double> metric_percentiles;
  Given<int64_t> num_seeds{1};
  // Replicates of a timed trace (traces/resample.hpp): auto = bootstrap when num_seeds > 1,
  // none otherwise; none, bootstrap, jitter.
  std::string trace_replicates = "auto";
};

// A change to one field of a RunSpec, typed: a flag's value parsed once.
using RunPatch = std::function<void(RunSpec&)>;

// The files a command's runs read, loaded once and shared read-only between threads: traces
// (by path and import options), profile directories, calibration files, GPU and model files.
// Thread-safe; a file that fails to load is tried again by the next caller.
class Inputs {
 public:
  Inputs() = default;
  Inputs(const Inputs&) = delete;
  Inputs& operator=(const Inputs&) = delete;

  std::shared_ptr<const Trace> trace(const std::string& path, const ImportOptions& options);
  // The profiles under DIR of GPU's family (load_profiles).
  std::shared_ptr<const ProfileSet> profiles(const std::string& dir, const std::string& gpu);
  std::shared_ptr<const CalibrationFile> calibration(const std::string& path);
  // --gpu NAME / --gpu-file FILE and --model NAME / --model-file FILE: the file when given, else
  // the catalogue entry.
  GpuSpec gpu(const std::string& name, const std::string& file);
  ModelSpec model(const std::string& name, const std::string& file);

 private:
  template <class T, class Load>
  std::shared_ptr<const T> cached(std::map<std::string, std::shared_ptr<const T>>& cache,
                                  const std::string& key, Load load);

  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Trace>> traces_;
  std::map<std::string, std::shared_ptr<const ProfileSet>> profiles_;
  std::map<std::string, std::shared_ptr<const CalibrationFile>> calibrations_;
  std::map<std::string, std::shared_ptr<const GpuSpec>> gpus_;
  std::map<std::string, std::shared_ptr<const ModelSpec>> models_;
};

// The flags' own checks, first of all: aliases against their flags (--tp, --num-prompts,
// --enable-chunked-prefill), the seed and counts, and flags that would do nothing (Error naming
// the flag and why).
void check_flags(const RunSpec& s);
// A scheduler as `--scheduler NAME[:BUDGET]` names it, parsed once: its policy, the token budget
// it sets (0: none, the flag's or vLLM's default) and its text (for messages).
// Without --scheduler: vLLM V1's scheduler, the one vLLM runs today (on the V1 engine).
struct SchedulerChoice {
  Policy policy = Policy::kVllmV1;
  int64_t budget = 0;
  std::string text = "vllm-v1";
};

// Whether S names no scheduler (neither --scheduler nor --enable-chunked-prefill): it runs
// vllm-v1, vLLM V1's scheduler on the V1 engine, as vLLM runs today. Summaries say so
// (kDefaultSchedulerNote) where a user may not know which policy ran.
bool default_scheduler(const RunSpec& s);
inline constexpr const char* kDefaultSchedulerNote =
    "scheduler vllm-v1 by default: vLLM V1's scheduler on the V1 engine, as vLLM runs today "
    "(--scheduler names another)";
// The tensor-parallel degree, the number of requests and the scheduler the flags ask for.
int tensor_parallel_size(const RunSpec& s);
int pipeline_parallel_size(const RunSpec& s);
int64_t num_requests(const RunSpec& s);
SchedulerChoice scheduler_choice(const RunSpec& s);
// The simulation options the flags ask for (percentiles, goodput, concurrency).
SimulateOptions simulate_options(const RunSpec& s);
// The fleet of S for the policy SCHEDULER: disaggregated pools (--prefill-replicas,
// --decode-replicas) or mixed ones (--replica-gpus), each resolved as base_config and
// policy_config resolve the run, into O.fleet.groups. Nothing for a plain fleet; a fleet of one
// replica (--replica-gpus a100-80g:1) is a plain run, CONFIG becoming that replica's.
void add_fleet_groups(const RunSpec& s, const SchedulerChoice& scheduler, Inputs& inputs,
                      SimulateOptions& o, SimConfig& config);
// S with its seed shifted by K (replicate K of --num-seeds).
RunSpec with_seed(const RunSpec& s, int64_t k);

// "ttft:200 tpot:50 e2el:1000" (ms; vLLM --goodput): Error naming --goodput when malformed.
GoodputSlo parse_goodput(const std::string& text);
// "50,90,99.9" (vLLM --metric-percentiles): Error naming the flag when malformed.
std::vector<double> parse_percentiles(const std::string& text);

// "chunked:512" -> kChunked with budget 512; "vllm-v0" -> budget 0 (vLLM's default). Throws
// Error naming --scheduler.
SchedulerChoice parse_scheduler(const std::string& spec);

// The requests to replay, and how reports describe them.
struct LoadedWorkload {
  Workload requests;
  nlohmann::ordered_json json;
  std::string text;
};
LoadedWorkload load_workload(const RunSpec& s, Inputs& inputs);

// The run's configuration without its scheduler: model, GPU, memory plan, cost model.
SimConfig base_config(const RunSpec& s, Inputs& inputs);
// BASE with the policy of SCHEDULER, resolved the way vLLM resolves it.
SimConfig policy_config(const SimConfig& base, const RunSpec& s, const SchedulerChoice& scheduler);

// One simulated point of a sweep, a capacity search or a check scenario.
// The GPUs of one pool of a simulated configuration: REPLICAS instances of TP GPUs each (a
// single replica, a fleet's copies, a mixed fleet's group, a disaggregated prefill or decode pool).
struct GpuPool {
  std::string gpu, role;  // catalogue or file name; "colocated", "prefill", "decode"
  std::string quantization;
  int replicas = 1, tp = 1, pp = 1;
  double file_cost = NAN;  // the GPU file's cost_per_hour
  int64_t gpus() const { return int64_t(replicas) * tp * pp; }
};

struct PointRun {
  RunResult run;
  std::vector<GpuPool> pools;  // every GPU the run simulated
  nlohmann::ordered_json workload;
  double request_rate = NAN;  // req/s asked for; NaN when a trace kept its own timing
};
// The pools of GPUs configuration C simulates with options O (a fleet's groups, else its copies).
std::vector<GpuPool> gpu_pools(const SimConfig& c, const SimulateOptions& o);
// Checks, loads and simulates S, as `servesim run` does. Throws Error on a bad value.
PointRun run_point(const RunSpec& s, Inputs& inputs, const SimulateOptions& keep = {});
// Checks S as run_point would, without simulating: names, files, the workload (generated for
// one request; a trace is imported into INPUTS). What only the simulation finds (a model that
// does not fit a GPU) is left to run_point.
void check_point(const RunSpec& s, Inputs& inputs);

}  // namespace servesim
