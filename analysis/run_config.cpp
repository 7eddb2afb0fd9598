// A RunSpec's configuration (run_spec.hpp): the engine's SimConfig for a policy, the fleet's
// pools and autoscaler, and the simulation's options.
#include "analysis/run_spec.hpp"
#include "analysis/run_spec_internal.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include "analysis/engine_options.hpp"
#include "analysis/workload_report.hpp"
#include "models/calibration.hpp"
#include "models/lora.hpp"
#include "scheduler/capabilities.hpp"
#include "scheduler/policy.hpp"
#include "traces/datasets.hpp"
#include "traces/rate_pattern.hpp"
#include "traces/servegen.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/text_input.hpp"

namespace servesim {

using nlohmann::ordered_json;

namespace {

// The autoscaler the flags ask for, into F.autoscale (Error naming the flag).
void autoscale_options(const RunSpec& s, bool pools, FleetOptions& f) {
  const bool scheduled = !s.autoscale_schedule.empty();
  if (s.autoscale.empty() && !scheduled) {
    refuse_given({{field::kAutoscaleTarget, s.autoscale_target.given()},
                  {field::kMinReplicas, s.min_replicas.given()},
                  {field::kMaxReplicas, s.max_replicas.given()},
                  {field::kAutoscalePeriodS, s.autoscale_period_s.given()},
                  {field::kScaleUpWindowS, s.scale_up_window_s.given()},
                  {field::kScaleDownWindowS, s.scale_down_window_s.given()},
                  {field::kProvisionS, s.provision_s.given()},
                  {field::kEngineStartupS, s.engine_startup_s.given()},
                  {field::kModelLoadGbPerS, s.model_load_gb_per_s.given()}},
                 "needs {{autoscale.metric}} METRIC");
    return;
  }
  AutoscaleOptions& a = f.autoscale;
  a.enabled = true;
  if (scheduled) {
    a.metric = ScaleMetric::kSchedule;
    a.schedule = s.autoscale_schedule;
  } else {
    a.metric = parse_scale_metric(s.autoscale);
    if (!s.autoscale_target.given()) throw Error(field::kAutoscale, "needs {{autoscale.target}} X");
    if (!s.max_replicas.given())
      throw Error(field::kAutoscale, "needs {{autoscale.max_replicas}} N");
  }
  if (pools) {
    throw Error(field::kAutoscale,
                "scales a fleet of one configuration (not {{fleet.replica_gpus}} or prefill/decode "
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
  const bool counted = s.num_replicas.given() || s.data_parallel_size.given();
  if (!counted) f.num_replicas = a.min_replicas;
  if (!scheduled && (f.num_replicas < a.min_replicas || f.num_replicas > a.max_replicas)) {
    throw Error(field::kNumReplicas,
                "must be in [{{autoscale.min_replicas}}, {{autoscale.max_replicas}}] with "
                "{{autoscale.metric}}");
  }
}

// --enable-lora and its flags, onto C (vLLM's LoRAConfig checks).
void lora(const RunSpec& s, SimConfig& c) {
  if (!s.enable_lora) {
    refuse_given({{field::kMaxLoras, s.max_loras.given()},
                  {field::kMaxLoraRank, s.max_lora_rank.given()},
                  {field::kMaxCpuLoras, s.max_cpu_loras.given()},
                  {field::kLoraRank, s.lora_rank.given()},
                  {field::kLoraLoadGbPerS, s.lora_load_gb_per_s.given()},
                  {field::kLoraLoadLatencyS, s.lora_load_latency_s.given()}},
                 "needs {{lora.enable}}");
    return;
  }
  LoraOptions& l = c.lora;
  l.enabled = true;
  if (s.max_loras < 1 || s.max_loras > 4096) throw Error(field::kMaxLoras, "must be in [1, 4096]");
  l.max_loras = int(*s.max_loras);
  if (!valid_max_lora_rank(int(std::clamp<int64_t>(s.max_lora_rank, 0, 1 << 20)))) {
    throw Error(field::kMaxLoraRank, "must be one of 1, 8, 16, 32, 64, 128, 256, 320, 512");
  }
  l.max_lora_rank = int(*s.max_lora_rank);
  if (s.max_cpu_loras.given() && (*s.max_cpu_loras < *s.max_loras || s.max_cpu_loras > 65535)) {
    throw Error(field::kMaxCpuLoras,
                "must be >= {{lora.max_loras}} (vLLM's LoRAConfig) and <= 65535");
  }
  l.max_cpu_loras = int(*s.max_cpu_loras);
  if (s.lora_rank.given() && (s.lora_rank < 1 || *s.lora_rank > *s.max_lora_rank)) {
    throw Error(field::kLoraRank,
                "must be in [1, {{lora.max_lora_rank}}]: vLLM refuses an adapter of a "
                "larger rank");
  }
  l.rank = int(*s.lora_rank);
  if (!(s.lora_load_gb_per_s > 0 && s.lora_load_gb_per_s <= 1e5)) {
    throw Error(field::kLoraLoadGbPerS, "must be in (0, 1e5] GB/s");
  }
  if (!(s.lora_load_latency_s >= 0 && s.lora_load_latency_s <= 3600)) {
    throw Error(field::kLoraLoadLatencyS, "must be in [0, 3600] seconds");
  }
  l.load_gb_per_s = s.lora_load_gb_per_s;
  l.load_latency_s = s.lora_load_latency_s;
}

// The CPU KV tier and its link, onto C.
void kv_offload(const RunSpec& s, SimConfig& c) {
  if (s.kv_transfer_config.given() && trim(*s.kv_transfer_config).empty()) {
    throw Error(field::kKvTransferConfig,
                "is empty: give vLLM's JSON ({\"kv_connector\": \"OffloadingConnector\", ...}) "
                "or leave the flag out");
  }
  c.offload = parse_kv_offload(s.kv_offloading_size, s.kv_offloading_backend, s.kv_transfer_config);
  if (!c.offload.enabled()) {
    refuse_given({{field::kKvOffloadGbPerS, s.kv_offload_gb_per_s.given()},
                  {field::kKvOffloadLatencyS, s.kv_offload_latency_s.given()}},
                 "needs {{kv_transfer.offloading_size_gib}} or {{kv_transfer.config}}");
    return;
  }
  if (!(s.kv_offload_gb_per_s >= 0 && s.kv_offload_gb_per_s <= 1e5)) {
    throw Error(field::kKvOffloadGbPerS, "must be in [0, 1e5] GB/s (0: the GPU's host link)");
  }
  if (!(s.kv_offload_latency_s >= 0 && s.kv_offload_latency_s <= 10)) {
    throw Error(field::kKvOffloadLatencyS, "must be in [0, 10] seconds");
  }
  c.offload.link_gb_per_s = s.kv_offload_gb_per_s;
  c.offload.link_latency_s = s.kv_offload_latency_s;
}

// --speculative-config: the drafter and the drafts' acceptance, onto C.
void speculative_decoding(const RunSpec& s, Inputs& inputs, SimConfig& c) {
  if (s.speculative_config.given() && trim(*s.speculative_config).empty()) {
    throw Error(field::kSpeculativeConfig,
                "is empty: give vLLM's JSON ({\"method\": \"ngram\", \"num_speculative_tokens\": "
                "3, ...}) or leave the flag out");
  }
  const SpeculativeOptions o =
      parse_speculative_config(s.speculative_config, s.spec_acceptance_rate);
  if (!o.enabled()) return;
  // vLLM V1 runs a draft model at the target's TP and refuses another
  // (DraftModelProposer._raise_if_draft_tp_mismatch); servesim costs every drafter at it.
  if (o.draft_tp > 0 && o.draft_tp != c.tp) {
    throw Error(field::kDraftTensorParallelSize,
                format("%d is not the target's TP %d: vLLM V1 runs the drafter at the target's TP "
                       "and refuses another",
                       o.draft_tp, c.tp));
  }
  SpecDecodeConfig& spec = c.scheduler.spec;
  spec.method = o.method;
  spec.num_speculative_tokens = o.num_speculative_tokens;
  std::copy(o.acceptance_rates.begin(), o.acceptance_rates.end(), spec.acceptance_rates.begin());
  spec.seed = uint64_t(*s.seed);
  if (o.method == SpecMethod::kDraftModel) {
    const ModelSpec draft = inputs.model(o.model, "");
    c.drafter = make_drafter(o.method, c.model, &draft);
  } else {
    c.drafter = make_drafter(o.method, c.model);
  }
}

}  // namespace

SimulateOptions simulate_options(const RunSpec& s) {
  SimulateOptions o;
  o.metrics.percentiles = s.metric_percentiles;
  o.metrics.goodput = s.goodput;
  o.max_concurrency = s.max_concurrency;
  if (s.num_replicas.given() && s.data_parallel_size.given() &&
      s.num_replicas != s.data_parallel_size) {
    throw Error(field::kDataParallelSize, "contradicts {{fleet.num_replicas}}");
  }
  o.fleet.num_replicas = s.data_parallel_size.given() ? s.data_parallel_size : s.num_replicas;
  if (o.fleet.num_replicas < 1 || o.fleet.num_replicas > kMaxReplicas) {
    throw Error(s.data_parallel_size.given() ? field::kDataParallelSize : field::kNumReplicas,
                "must be in [1, " + std::to_string(kMaxReplicas) + "]");
  }
  o.fleet.router.kind = parse_router(*s.router);
  o.fleet.router.signal_delay_s = s.router_signal_delay_s;
  if (*s.prefix_index != "kv-events" && *s.prefix_index != "per-replica") {
    throw Error(field::kPrefixIndex, "'" + *s.prefix_index + "': expected per-replica | kv-events");
  }
  if (s.prefix_index.given() && o.fleet.router.kind != RouterKind::kPrefixAware) {
    throw Error(field::kPrefixIndex,
                "only {{fleet.router}} prefix-aware asks the replicas' prefix caches");
  }
  o.fleet.router.prefix_kv_index = *s.prefix_index == "kv-events";
  o.fleet.router.hook = s.router_hook;
  if (!(s.router_signal_delay_s >= 0) || !std::isfinite(s.router_signal_delay_s)) {
    throw Error(field::kRouterSignalDelayS, "must be a number of seconds >= 0");
  }
  const bool pools = s.prefill_replicas > 0 || s.decode_replicas > 0 || !s.replica_gpus.empty();
  autoscale_options(s, pools, o.fleet);
  // --num-replicas 1 --router X is a fleet of one (a loop over 1, 2, 4 replicas, issue 25): its
  // router sends everything to it. A router without any replica count is a mistake.
  const bool counted = s.num_replicas.given() || s.data_parallel_size.given();
  if (o.fleet.num_replicas == 1 && !pools && !counted && !o.fleet.autoscale.enabled &&
      (s.router.given() || s.router_signal_delay_s.given())) {
    throw Error(s.router.given() ? field::kRouter : field::kRouterSignalDelayS,
                "routes between replicas: give {{fleet.num_replicas}} N (1 for a fleet of one)");
  }
  return o;
}

namespace {

// One pool of the fleet: S on GPU and TP (as given when empty or 0), resolved for SCHEDULER.
ReplicaGroup fleet_group(const RunSpec& s, const SchedulerChoice& scheduler, Inputs& inputs,
                         const std::string& gpu, int tp, int count, ReplicaRole role) {
  RunSpec g = s;
  if (!gpu.empty()) {
    g.gpu = gpu;
    g.gpu_file.clear();
  }
  if (tp > 0) {
    g.tensor_parallel_size = tp;
    g.tp.forget();
  }
  return {policy_config(base_config(g, inputs), g, scheduler), count, role};
}

}  // namespace

void add_fleet_groups(const RunSpec& s, const SchedulerChoice& scheduler, Inputs& inputs,
                      SimulateOptions& o, SimConfig& config) {
  const bool disaggregated = s.prefill_replicas > 0 || s.decode_replicas > 0;
  if (disaggregated) {
    if (s.prefill_replicas < 1 || s.decode_replicas < 1) {
      throw Error(s.prefill_replicas < 1 ? field::kPrefillReplicas : field::kDecodeReplicas,
                  "a disaggregated fleet needs both pools: >= 1 each");
    }
    if (s.num_replicas.given() || s.data_parallel_size.given() || !s.replica_gpus.empty()) {
      throw Error(field::kPrefillReplicas,
                  "sizes the fleet itself: drop {{fleet.num_replicas}} and "
                  "{{fleet.replica_gpus}}");
    }
    if (s.prefill_tp < 0 || s.decode_tp < 0) {
      throw Error(s.prefill_tp < 0 ? field::kPrefillTp : field::kDecodeTp,
                  "must be >= 1 (0: {{parallel.tp}})");
    }
    o.fleet.groups = {fleet_group(s, scheduler, inputs, s.prefill_gpu, s.prefill_tp,
                                  s.prefill_replicas, ReplicaRole::kPrefill),
                      fleet_group(s, scheduler, inputs, s.decode_gpu, s.decode_tp,
                                  s.decode_replicas, ReplicaRole::kDecode)};
  } else if (!s.replica_gpus.empty()) {
    if (s.num_replicas.given() || s.data_parallel_size.given()) {
      throw Error(field::kReplicaGpus, "sizes the fleet itself: drop {{fleet.num_replicas}}");
    }
    for (const GpuCount& g : s.replica_gpus) {
      o.fleet.groups.push_back(
          fleet_group(s, scheduler, inputs, g.gpu, 0, g.count, ReplicaRole::kColocated));
    }
  } else {
    if (s.prefill_gpu.given() || s.decode_gpu.given() || s.prefill_tp.given() ||
        s.decode_tp.given() || s.kv_transfer_gbps.given() || s.kv_transfer_latency_s.given() ||
        s.kv_transfer_link.given()) {
      throw Error(field::kPrefillReplicas,
                  "the prefill and decode flags need {{fleet.prefill_replicas}} and "
                  "{{fleet.decode_replicas}}");
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
    throw Error(field::kKvTransferGbps,
                "must be 0 (the link {{fleet.kv_transfer_link}} names) or in [0.001, 1e6] Gb/s");
  }
  if (s.kv_transfer_link != "network" && s.kv_transfer_link != "nvlink") {
    throw Error(field::kKvTransferLink,
                "expected network or nvlink, got '" + *s.kv_transfer_link + "'");
  }
  o.fleet.kv_transfer_nvlink = s.kv_transfer_link == "nvlink";
  if (o.fleet.kv_transfer_nvlink) {
    // NVLink joins the GPUs of one node: the pools must fit in the smallest node among them.
    int gpus = 0;
    const GpuSpec* smallest = nullptr;
    for (const ReplicaGroup& g : o.fleet.groups) {
      gpus += g.count * g.config.tp;
      if (smallest == nullptr || g.config.gpu.gpus_per_node < smallest->gpus_per_node) {
        smallest = &g.config.gpu;
      }
    }
    if (smallest != nullptr && gpus > smallest->gpus_per_node) {
      throw Error(field::kKvTransferLink, "nvlink joins the GPUs of one node: the pools hold " +
                                              std::to_string(gpus) + " GPUs, a node of " +
                                              smallest->name + " " +
                                              std::to_string(smallest->gpus_per_node) +
                                              " (network: the prompts' KV crosses the NICs)");
    }
  }
  if (!(s.kv_transfer_latency_s >= 0 && s.kv_transfer_latency_s <= 3600)) {
    throw Error(field::kKvTransferLatencyS, "must be in [0, 3600] seconds");
  }
}

SimConfig base_config(const RunSpec& s, Inputs& inputs) {
  SimConfig c;
  c.model = inputs.model(s.model, s.model_file);
  apply_serving_dtypes(c.model, s.quantization, s.kv_cache_dtype);
  c.gpu = inputs.gpu(s.gpu, s.gpu_file);
  c.tp = tensor_parallel_size(s);
  c.pp = pipeline_parallel_size(s);
  c.expert_parallel = s.enable_expert_parallel;
  c.expert_skew = s.expert_skew;
  // The ranks sharing the experts are the fleet's: vLLM's --data-parallel-size.
  if (c.expert_parallel)
    c.dp = s.data_parallel_size.given() ? s.data_parallel_size : s.num_replicas;
  c.scheduler.max_model_len = s.max_model_len;
  c.scheduler.max_num_seqs = s.max_num_seqs;
  c.scheduler.block_size = s.block_size;
  c.memory.gpu_memory_utilization = s.gpu_memory_utilization;
  c.memory.runtime_reserve_gib = s.runtime_reserve_gib.given() ? *s.runtime_reserve_gib : NAN;
  c.memory.num_gpu_blocks_override = s.num_gpu_blocks;
  c.cost_model = s.cost_model;
  if (!s.calibration.empty()) {
    if (s.cost_model != "roofline")
      throw Error(field::kCalibration, "only the roofline model takes one");
    std::istringstream files(s.calibration);
    for (std::string path; std::getline(files, path, ',');) {
      if (!path.empty()) c.calibrations.push_back(inputs.calibration(path));
    }
  }
  if (!s.engine.empty()) {
    c.engine = parse_engine(s.engine);
    c.engine_given = true;
  }
  if (s.frontend_latency_ms.given()) {
    if (!(s.frontend_latency_ms >= 0 && s.frontend_latency_ms <= 10000)) {
      throw Error(field::kFrontendLatencyMs, "must be in [0, 10000] ms");
    }
    c.frontend_latency_s = s.frontend_latency_ms * 1e-3;
  }
  if (!s.profiles.empty()) {
    if (s.cost_model != "table")
      throw Error(field::kProfiles, "only {{cost.model}} table reads profiles");
    c.profiles = inputs.profiles(s.profiles, c.gpu.name);
  }
  speculative_decoding(s, inputs, c);
  kv_offload(s, c);
  lora(s, c);
  c.scheduler.hooks = s.scheduling_hooks;
  return c;
}

namespace {

// --enable-prefix-caching, vLLM V1's scheduler flags and its engine's async scheduling, onto a
// policy's configuration on ENGINE. The V1 scheduler's flags on a V0 policy, and async
// scheduling on the V0 engine, would do nothing, so they are errors.
void apply_cache_and_v1_flags(SchedulerConfig& c, const RunSpec& s, Engine engine) {
  if (s.enable_prefix_caching.given() && s.no_enable_prefix_caching.given()) {
    throw Error(field::kNoEnablePrefixCaching, "contradicts {{cache.enable_prefix_caching}}");
  }
  // vLLM's defaults: on where the policy has a prefix cache (V1, v0.8+), off in V0.
  c.enable_prefix_caching = supports(c.policy, Feature::kPrefixCache);
  if (s.enable_prefix_caching.given()) c.enable_prefix_caching = s.enable_prefix_caching;
  if (s.no_enable_prefix_caching.given()) c.enable_prefix_caching = !s.no_enable_prefix_caching;
  if (c.enable_prefix_caching) {
    require(c.policy, Feature::kPrefixCache,
            s.enable_prefix_caching.given() ? field::kEnablePrefixCaching : field::kScheduler);
  }
  if (!supports(c.policy, Feature::kV1SchedulerOptions)) {
    refuse_given({{field::kSchedulingPolicy, s.scheduling_policy.given()},
                  {field::kLongPrefillTokenThreshold, s.long_prefill_token_threshold.given()},
                  {field::kSchedulerReserveFullIsl, s.scheduler_reserve_full_isl.given()}},
                 refusal(c.policy, Feature::kV1SchedulerOptions));
  }
  if (!has_batch_queue(engine)) {
    refuse_given({{field::kAsyncScheduling, s.async_scheduling.given()},
                  {field::kNoAsyncScheduling, s.no_async_scheduling.given()}},
                 std::string("is the V1 engine's (EngineCore's batch queue); ") +
                     policy_name(c.policy) +
                     " runs on the V0 engine here ({{scheduler.engine}} v1)");
  }
  if (s.scheduling_policy == "fcfs") {
    c.scheduling_policy = WaitingOrder::kFcfs;
  } else if (s.scheduling_policy == "priority") {
    c.scheduling_policy = WaitingOrder::kPriority;
  } else {
    throw Error(field::kSchedulingPolicy,
                "expected fcfs or priority, got '" + *s.scheduling_policy + "'");
  }
  c.long_prefill_token_threshold = s.long_prefill_token_threshold;
  if (s.async_scheduling.given() && s.no_async_scheduling.given()) {
    throw Error(field::kNoAsyncScheduling, "contradicts {{scheduler.async_scheduling}}");
  }
  c.async_scheduling = has_batch_queue(engine) && s.async_scheduling && !s.no_async_scheduling;
  // VllmConfig: a drafter that cannot run under async scheduling turns it off by default: the
  // CPU n-gram proposer always, a draft model unless async scheduling is asked for.
  const bool asked = s.async_scheduling.given() && *s.async_scheduling;
  if (c.spec.method == SpecMethod::kNgram && asked) {
    throw Error(field::kAsyncScheduling,
                "vLLM's CPU n-gram proposer does not run under async "
                "scheduling");
  }
  if (c.spec.method == SpecMethod::kNgram || (c.spec.method == SpecMethod::kDraftModel && !asked)) {
    c.async_scheduling = false;
  }
  c.reserve_full_isl = s.scheduler_reserve_full_isl;
}

// vLLM's start-up checks of the resolved token budget, which refuse to start a server (issue 42;
// servesim ran such configurations before): SchedulerConfig.verify_max_model_len (vllm/config/
// scheduler.py at the V1 revision of scheduler/vllm_revision.hpp; SchedulerConfig._verify_args
// in V0's vllm/config.py, v0.6.3 and v0.8.5), with vLLM's reason and the flag that fixes it,
// named as the user gave it (--max-num-batched-tokens, else the flag that set the other side).
void check_vllm_budget(const SchedulerConfig& c, const RunSpec& s, const SchedulerChoice& choice) {
  const auto n = [](int64_t v) { return std::to_string(v); };
  const bool budget_given = s.max_num_batched_tokens > 0 || choice.budget > 0;
  if (!chunked_prefill(c.policy) && c.max_num_batched_tokens < c.max_model_len) {
    throw Error(budget_given          ? field::kMaxNumBatchedTokens
                : s.max_model_len > 0 ? field::kMaxModelLen
                                      : field::kScheduler,
                "max_num_batched_tokens (" + n(c.max_num_batched_tokens) +
                    ") is smaller than max_model_len (" + n(c.max_model_len) +
                    ") without chunked prefill (" + policy_name(c.policy) +
                    "): vLLM refuses to start, since it would reject every longer sequence "
                    "(SchedulerConfig). Raise {{scheduler.max_num_batched_tokens}}, lower "
                    "{{model.max_model_len}}, "
                    "or chunk prefills ({{scheduler.policy}} chunked or vllm-v1)");
  }
  if (c.max_num_batched_tokens < c.max_num_seqs) {
    throw Error(
        budget_given || s.max_num_seqs == 0 ? field::kMaxNumBatchedTokens : field::kMaxNumSeqs,
        "max_num_batched_tokens (" + n(c.max_num_batched_tokens) +
            ") must be greater than or equal to max_num_seqs (" + n(c.max_num_seqs) +
            "): vLLM refuses to start (SchedulerConfig). Raise "
            "{{scheduler.max_num_batched_tokens}} or lower {{scheduler.max_num_seqs}}");
  }
}

}  // namespace

SimConfig policy_config(const SimConfig& base, const RunSpec& s, const SchedulerChoice& scheduler) {
  const Policy policy = scheduler.policy;
  const int64_t budget = scheduler.budget;
  SimConfig c = base;
  c.scheduler.policy = policy;
  if (budget > 0 && s.max_num_batched_tokens > 0 && budget != s.max_num_batched_tokens) {
    throw Error(field::kScheduler, "'" + scheduler.text +
                                       "' sets a token budget that contradicts "
                                       "{{scheduler.max_num_batched_tokens}} " +
                                       std::to_string(s.max_num_batched_tokens));
  }
  c.scheduler.max_num_batched_tokens = budget > 0 ? budget : s.max_num_batched_tokens;
  apply_cache_and_v1_flags(c.scheduler, s, c.engine_given ? c.engine : default_engine(policy));
  // vLLM turns the prefix cache off by default for a hybrid model ("Disable prefix caching
  // default for hybrid models since the feature is still experimental", arg_utils.py, v0.11 to
  // 0.15); asked for, it runs in its align mode, which servesim does not model
  // (resolve_linear_attention refuses it).
  if (c.model.hybrid() && !s.enable_prefix_caching.given())
    c.scheduler.enable_prefix_caching = false;
  SimConfig resolved = resolve(c);
  check_vllm_budget(resolved.scheduler, s, scheduler);
  return resolved;
}

std::vector<GpuPool> gpu_pools(const SimConfig& c, const SimulateOptions& o) {
  auto pool = [](const SimConfig& g, int replicas, const char* role) {
    GpuPool p;
    p.gpu = g.gpu.name;
    p.role = role;
    p.quantization = g.model.quantization();
    p.replicas = replicas;
    p.tp = g.tp;
    p.pp = g.pp;
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

}  // namespace servesim
