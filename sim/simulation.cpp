#include "sim/simulation.hpp"

#include <cmath>

#include "models/parallel.hpp"
#include "models/table_model.hpp"
#include "scheduler/capabilities.hpp"
#include "scheduler/policy.hpp"
#include "sim/event_loop.hpp"
#include "sim/frontend.hpp"
#include "sim/gateway.hpp"
#include "sim/host.hpp"
#include "sim/replica_config.hpp"
#include "sim/run_summaries.hpp"
#include "sim/workload_block_hasher.hpp"
#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {
// Far above any real deployment; keeps per-step buffers and counters sane.
constexpr int64_t kMaxNumSeqs = int64_t(1) << 20;
}  // namespace

namespace {

// The model's shape against the TP degree, and max_model_len against the model.
void resolve_model(SimConfig& c) {
  if (c.tp < 1) throw Error(field::kTensorParallelSize, "must be >= 1");
  if (c.pp < 1 || c.pp > c.model.num_layers || c.pp > kMaxBatchesInFlight) {
    // vLLM's get_pp_indices gives every stage a layer at least; servesim keeps up to
    // kMaxBatchesInFlight batches in flight.
    const int most = std::min(c.model.num_layers, kMaxBatchesInFlight);
    throw Error(field::kPipelineParallelSize,
                "must be in [1, " + std::to_string(most) + "] (" + c.model.name + " has " +
                    std::to_string(c.model.num_layers) + " layers; servesim models up to " +
                    std::to_string(kMaxBatchesInFlight) + " stages)");
  }
  if (c.expert_parallel) {
    require(c.scheduler.policy, Feature::kExpertParallel);
    if (c.engine_given && c.engine != Engine::kV1) {
      throw Error(field::kEngine, "expert parallelism is modelled on the v1 engine");
    }
    if (c.model.num_experts <= 1) {
      throw Error(field::kEnableExpertParallel,
                  "spreads a MoE model's experts; " + c.model.name + " is dense");
    }
    if (c.dp < 1) throw Error(field::kDataParallelSize, "must be >= 1");
    if (c.pp > 1) {
      throw Error(field::kEnableExpertParallel,
                  "servesim does not model it with {{parallel.pipeline_parallel_size}} > 1");
    }
    if (c.cost_model != "roofline") {
      throw Error(field::kEnableExpertParallel, "is modelled on the roofline cost model");
    }
  }
  if (!(c.expert_skew >= 0 && c.expert_skew <= 4)) {
    throw Error(field::kExpertSkew, "must be in [0, 4]");
  }
  if (c.expert_skew > 0 && c.ep() <= 1) {
    // Without expert parallelism every GPU holds every expert's share: skew moves no GPU's load
    // (the experts read a step stay those of uniform routing).
    throw Error(field::kExpertSkew,
                "loads the busiest GPU of an expert-parallel group of more than one GPU: give "
                "{{parallel.enable_expert_parallel}} over TP x DP > 1");
  }
  if (c.model.num_heads % c.tp != 0) {
    // vLLM: "Total number of attention heads (X) must be divisible by tensor parallel size (Y)."
    throw Error(field::kTensorParallelSize, "must divide " + c.model.name + "'s " +
                                                std::to_string(c.model.num_heads) +
                                                " attention heads");
  }
  SchedulerConfig& s = c.scheduler;
  if (s.max_model_len == 0) s.max_model_len = c.model.max_position;
  if (s.max_model_len < 2) throw Error(field::kMaxModelLen, "must be >= 2");
  if (s.max_model_len > c.model.max_position) {
    // vLLM refuses a max_model_len above the model's max_position_embeddings.
    throw Error(field::kMaxModelLen, std::to_string(s.max_model_len) + " exceeds " + c.model.name +
                                         "'s max_position_embeddings " +
                                         std::to_string(c.model.max_position));
  }
  // models/lora.hpp sizes adapters on q/k/v/o and every layer's experts or MLP alike.
  if (c.lora.enabled && (c.model.mla() || c.model.dense_layers > 0)) {
    throw Error(field::kEnableLora,
                "servesim models LoRA adapters on standard attention and uniform MLP layers; " +
                    c.model.name + " has " +
                    (c.model.mla() ? "multi-head latent attention" : "dense and MoE layers mixed"));
  }
}

// Speculative decoding: vLLM V1's, with its drafter; a draft model's own slots come out of the
// token budget (VllmConfig: max_num_scheduled_tokens = max_num_batched_tokens -
// max_num_new_slots_for_drafting x max_num_seqs, one slot per request for a draft model).
void resolve_speculative(SimConfig& c) {
  SchedulerConfig& s = c.scheduler;
  if (!s.spec.enabled()) {
    s.max_num_scheduled_tokens = 0;
    return;
  }
  require(s.policy, Feature::kSpeculativeDecoding);
  if (s.spec.num_speculative_tokens > kMaxSpecTokens) {
    throw Error(field::kNumSpeculativeTokens,
                "must be in [1, " + std::to_string(kMaxSpecTokens) + "]");
  }
  if (c.drafter.method != s.spec.method) throw Error(field::kSpeculativeConfig, "has no drafter");
  // A draft model's KV shares the target's blocks as one more group of full attention
  // (models/drafter.hpp): one with linear-attention or sliding-window layers would be groups of
  // its own, which servesim does not model.
  if (c.drafter.model.hybrid() || c.drafter.model.sliding()) {
    throw Error(field::kSpeculativeConfig,
                "a draft model with " +
                    std::string(c.drafter.model.hybrid() ? "linear-attention" : "sliding-window") +
                    " layers (" + c.drafter.model.name + ") is not modelled");
  }
  s.max_num_scheduled_tokens = s.max_num_batched_tokens;
  if (s.spec.method == SpecMethod::kDraftModel) {
    s.max_num_scheduled_tokens -= s.max_num_seqs;
    if (s.max_num_scheduled_tokens <= 0) {
      throw Error(field::kMaxNumBatchedTokens,
                  "a draft model drafts in one slot per sequence: max_num_batched_tokens must "
                  "exceed max_num_seqs (vLLM refuses it)");
    }
  }
}

// CPU KV offload: vLLM V1's connectors; an offloaded block is whole GPU blocks.
void resolve_offload(SimConfig& c) {
  const KvOffloadOptions& o = c.offload;
  if (!o.enabled()) return;
  const char* flag = o.backend == OffloadBackend::kLmcache && o.per_rank ? field::kKvTransferConfig
                                                                         : field::kKvOffloadingSize;
  require(c.scheduler.policy, Feature::kKvConnector, flag);
  if (o.block_size % c.scheduler.block_size != 0) {
    throw Error(flag, "an offloaded block of " + std::to_string(o.block_size) +
                          " tokens is not a whole number of GPU blocks of " +
                          std::to_string(c.scheduler.block_size));
  }
  if (!(o.cpu_bytes > 0) || !(o.link_gb_per_s >= 0) || !(o.link_latency_s >= 0)) {
    throw Error(flag, "needs a size > 0, a link of >= 0 GB/s and a latency >= 0");
  }
}

// Pipeline parallelism: V1's scheduler on the V1 engine, whose batch queue holds a batch a stage
// (vLLM 0.15.1 MultiprocExecutor.max_concurrent_batches = pp; the replica's scheduler:
// replica_scheduler_config). The features servesim does not model through a pipeline are
// refused.
void resolve_pipeline(SimConfig& c) {
  if (c.pp == 1) return;
  SchedulerConfig& s = c.scheduler;
  require(s.policy, Feature::kPipelineParallel);
  if (c.engine != Engine::kV1) {
    throw Error(field::kEngine, "pipeline parallelism is modelled on the v1 engine");
  }
  const char* unmodelled = s.spec.enabled()             ? field::kSpeculativeConfig
                           : c.offload.enabled()        ? field::kKvOffloadingSize
                           : c.lora.enabled             ? field::kEnableLora
                           : c.cost_model != "roofline" ? field::kCostModel
                                                        : nullptr;
  if (unmodelled != nullptr) {
    throw Error(unmodelled,
                "servesim does not model it with {{parallel.pipeline_parallel_size}} > 1");
  }
  for (int s = 0; s < c.pp; ++s) {
    if (pp_stage_straddles_nodes(s, c.tp, c.gpu.gpus_per_node)) {
      throw Error(field::kPipelineParallelSize,
                  format("stage %d's TP group of %d GPUs would straddle two nodes of %d (%s): "
                         "servesim models a TP group inside a node or over whole nodes; give a "
                         "{{parallel.tp}} that divides the node",
                         s + 1, c.tp, c.gpu.gpus_per_node, c.gpu.name.c_str()));
    }
  }
}

// A model whose KV V1's hybrid KV cache manager keeps in more than one group of blocks
// (scheduler/kv_cache_manager.hpp), its LAYERS ("sliding-window layers") needing FEATURE: on the
// v1 engine (vLLM serves such models on V1 only), without the features whose KV or cost servesim
// does not model with them (speculative decoding, KV offload, the table cost model, and those
// MORE names: a setting's path when it is asked for, else null), refused naming WHY.
void require_hybrid_kv(const SimConfig& c, Feature feature, const std::string& layers,
                       const char* more, const std::string& why) {
  require(c.scheduler.policy, feature);
  if (c.engine != Engine::kV1) {
    throw Error(field::kEngine, c.model.name + "'s " + layers +
                                    " are modelled on the v1 engine (vLLM serves them on V1 "
                                    "only)");
  }
  const char* unmodelled = c.scheduler.spec.enabled()   ? field::kSpeculativeConfig
                           : c.offload.enabled()        ? field::kKvOffloadingSize
                           : c.cost_model != "roofline" ? field::kCostModel
                                                        : more;
  if (unmodelled != nullptr) {
    throw Error(unmodelled, "servesim does not model it with " + c.model.name + "'s " + layers +
                                " (" + why + ")");
  }
}

// Sliding-window layers: a second group of blocks, freed as the window moves.
void resolve_sliding_window(SimConfig& c) {
  SchedulerConfig& s = c.scheduler;
  s.sliding_window = 0;
  if (!c.model.sliding()) return;
  require_hybrid_kv(c, Feature::kSlidingWindow, "sliding-window layers", nullptr,
                    "a second group of KV blocks");
  s.sliding_window = c.model.sliding_window;
}

// Linear-attention layers (a hybrid model: Qwen3-Next): a state block a request in each of
// their groups, without the prefix cache (vLLM's default for hybrid models, arg_utils.py; its
// align mode is not modelled), in the attention block size vLLM raises to hold a state
// (ModelSpec::hybrid_block_size).
void resolve_linear_attention(SimConfig& c) {
  SchedulerConfig& s = c.scheduler;
  s.state_groups = 0;
  if (!c.model.hybrid()) return;
  const char* more = c.pp > 1                  ? field::kPipelineParallelSize
                     : c.lora.enabled          ? field::kEnableLora
                     : s.enable_prefix_caching ? field::kEnablePrefixCaching
                                               : nullptr;
  require_hybrid_kv(c, Feature::kLinearAttention, "linear-attention layers", more,
                    "vLLM's hybrid KV cache manager keeps their state in blocks of its own "
                    "groups; with the prefix cache, in its align mode");
  // vLLM's Gated DeltaNet splits its key and value heads over the TP group.
  const int heads[] = {c.model.linear_num_key_heads, c.model.linear_num_value_heads};
  for (int h : heads) {
    if (h % c.tp != 0) {
      throw Error(field::kTensorParallelSize, "must divide " + c.model.name + "'s " +
                                                  std::to_string(h) + " linear-attention heads");
    }
  }
  // HybridAttentionMambaModelConfig: a block size below the one that holds a state is raised to
  // it ("Setting attention block size to N tokens").
  const int64_t block = c.model.hybrid_block_size(
      c.tp, c.model.hybrid_block_alignment(c.gpu.arch == GpuArch::kBlackwell));
  if (block > kMaxBlockSize) {  // check_scheduler_values' bound
    throw Error(field::kModel,
                format("%s's linear-attention state needs attention blocks of %lld "
                       "tokens at TP%d (servesim models up to %d)",
                       c.model.name.c_str(), static_cast<long long>(block), c.tp, kMaxBlockSize));
  }
  s.block_size = std::max(s.block_size, int(block));
  s.state_groups = c.model.kv_cache_state_groups();
}

// The token budget's default, max_num_seqs's, and the budgets' ranges. vLLM's start-up checks
// of the budget against max_model_len and max_num_seqs are made where a user's flags become a
// configuration (analysis/run_config.cpp): hand-built configurations run them, as tests do.
void resolve_scheduler(SimConfig& c) {
  SchedulerConfig& s = c.scheduler;
  if (!c.engine_given) c.engine = default_engine(s.policy);
  // Async scheduling is the V1 engine's (EngineCore.step_with_batch_queue), under any policy.
  if (!has_batch_queue(c.engine)) s.async_scheduling = false;
  const bool large = v1_large_defaults(c.gpu);
  if (s.max_num_batched_tokens == 0) {
    s.max_num_batched_tokens =
        default_max_num_batched_tokens(s.policy, c.engine, s.max_model_len, large);
  }
  if (s.max_num_seqs == 0) {
    s.max_num_seqs = default_max_num_seqs(c.engine, large, s.max_num_batched_tokens);
  }
  check_scheduler_values(s);
  resolve_speculative(c);
  resolve_offload(c);
  if (s.hooks != nullptr) {
    require(s.policy, Feature::kSchedulingHooks);
    if (s.hooks->orders_admission() && s.scheduling_policy == WaitingOrder::kPriority) {
      throw Error(field::kSchedulingPolicy,
                  "an admission key orders waiting requests itself: drop "
                  "{{scheduler.scheduling_policy}} priority");
    }
  }
  if (c.lora.enabled) require(s.policy, Feature::kLora);
  resolve_pipeline(c);
  resolve_sliding_window(c);
  resolve_linear_attention(c);
}

// The roofline's parameters: the GPU architecture's hardware fit and the engine's, each overlaid
// with the calibration files that apply; or a table model's profiles. The API server's latency.
void resolve_cost_model(SimConfig& c) {
  if (!c.hardware) {
    c.hardware = hardware_params(c.gpu.arch);
    c.hardware_source = hardware_source(c.gpu);
  } else if (c.hardware_source.empty()) {
    c.hardware_source = "given by the caller";
  }
  if (!c.engine_params || c.engine_params->engine != c.engine) {
    c.engine_params = engine_params(c.engine);
    c.engine_source = engine_source(c.engine);
  } else if (c.engine_source.empty()) {
    c.engine_source = "given by the caller";
  }
  for (const auto& cal : c.calibrations) {
    if (!cal->applies_to(c.gpu)) {
      throw Error(field::kCalibration, cal->path + " was fitted for " +
                                           (cal->gpu.empty() ? cal->arch : cal->gpu) + ", not " +
                                           c.gpu.name + " (efficiencies differ between GPUs)");
    }
    apply_calibration(*cal, *c.hardware, *c.engine_params);
    if (cal->has_hardware()) c.hardware_source = cal->describe();
    if (!cal->values.empty()) c.engine_source += "; " + cal->describe();
    if (cal->frontend_latency_s && std::isnan(c.frontend_latency_s)) {
      c.frontend_latency_s = *cal->frontend_latency_s;
    }
  }
  if (std::isnan(c.frontend_latency_s)) c.frontend_latency_s = kDefaultFrontendLatencyS;
  if (!(c.frontend_latency_s >= 0 && c.frontend_latency_s <= 10)) {
    throw Error(field::kFrontendLatencyMs, "must be in [0, 10000] ms");
  }
  if (c.cost_model != "roofline" && c.cost_model != "table") {
    throw Error(field::kCostModel, "expected roofline or table, got '" + c.cost_model + "'");
  }
  if (c.cost_model == "table") {
    if (!c.profiles) throw Error(field::kCostModel, "the table model needs {{cost.profiles}} DIR");
    TableCostModel check(*c.profiles, c.gpu, c.model, c.tp);  // the profiles cover this model
  }
}

// The memory flags, checked, with the runtime reserve's engine default filled in (the plan
// reads the TP degree, budgets and engine from the config's own fields: server_shape).
void resolve_memory(SimConfig& c) {
  check_memory_values(c.memory);
  c.memory.runtime_reserve_gib = runtime_reserve_gib(c.memory, server_shape(c));
}

}  // namespace

void check_scheduler_values(const SchedulerConfig& s) {
  if (s.max_num_batched_tokens < 0) throw Error(field::kMaxNumBatchedTokens, "must be >= 1");
  if (s.max_num_seqs < 0 || s.max_num_seqs > kMaxNumSeqs) {
    throw Error(field::kMaxNumSeqs, "must be in [1, " + std::to_string(kMaxNumSeqs) + "]");
  }
  if (s.block_size < 1 || s.block_size > kMaxBlockSize) {
    throw Error(field::kBlockSize, "must be in [1, 65536]");
  }
  if (s.long_prefill_token_threshold < 0) {
    throw Error(field::kLongPrefillTokenThreshold, "must be >= 0");
  }
}

void check_memory_values(const MemoryPlanOptions& m) {
  if (!(m.gpu_memory_utilization > 0 && m.gpu_memory_utilization <= 1)) {
    throw Error(field::kGpuMemoryUtilization, "must be in (0, 1]");
  }
  if (!std::isnan(m.runtime_reserve_gib) &&
      (!(m.runtime_reserve_gib >= 0) || !std::isfinite(m.runtime_reserve_gib))) {
    throw Error(field::kRuntimeReserveGib, "must be >= 0");
  }
  if (m.num_gpu_blocks_override < 0) throw Error(field::kNumGpuBlocks, "must be >= 1");
}

SimConfig resolve(SimConfig c) {
  resolve_model(c);
  resolve_scheduler(c);
  resolve_cost_model(c);
  resolve_memory(c);
  return c;
}

void check_loras(const SimConfig& c, const Workload& w) {
  if (c.lora.enabled) return;
  for (const RequestSpec& r : w) {
    if (r.lora != 0) {
      throw Error(field::kEnableLora,
                  "the workload's requests ask for LoRA adapters: serve them with "
                  "{{lora.enable}}");
    }
  }
}

std::shared_ptr<const SimulateOptions> recorded_options(const SimulateOptions& options) {
  auto copy = std::make_shared<SimulateOptions>(options);
  copy->progress = nullptr;
  return copy;
}

namespace {

// Pipeline stages and expert parallelism against the fleet that runs them: data-parallel ranks
// sharing experts are the fleet's replicas, one fixed group of like ones; pipeline stages do not
// serve disaggregated pools.
void check_parallel_fleet(const SimConfig& c, const FleetOptions& f) {
  for (const ReplicaGroup& g : f.groups) {
    if (g.config.pp > 1 && g.role != ReplicaRole::kColocated) {
      throw Error(field::kPipelineParallelSize,
                  "servesim does not model disaggregated pools with pipeline stages");
    }
    if ((g.config.model.sliding() || g.config.model.hybrid()) &&
        g.role != ReplicaRole::kColocated) {
      throw Error(field::kModel, g.config.model.name + "'s " +
                                     (g.config.model.hybrid() ? "linear-attention state blocks are"
                                                              : "sliding-window KV group is") +
                                     " not modelled in disaggregated pools (its KV transfer)");
    }
  }
  if (!c.expert_parallel) return;
  if (!f.groups.empty() || f.autoscale.enabled) {
    throw Error(field::kEnableExpertParallel,
                std::string("spreads the experts over a fixed group of like replicas: drop ") +
                    (f.autoscale.enabled ? "{{autoscale.metric}}"
                                         : "the prefill/decode pools and {{fleet.replica_gpus}}"));
  }
  if (c.dp != f.num_replicas) {
    throw Error(field::kDataParallelSize,
                format("%d data-parallel ranks share the experts, but the fleet has %d replicas",
                       c.dp, f.num_replicas));
  }
}

}  // namespace

RunResult simulate(const SimConfig& c, const Workload& w, const CostModel* cost_override,
                   const SimulateOptions& options) {
  check_loras(c, w);
  check_parallel_fleet(c, options.fleet);
  if (options.fleet.num_replicas != 1 || !options.fleet.groups.empty() ||
      options.fleet.autoscale.enabled) {
    if (cost_override != nullptr)
      throw Error(field::kNumReplicas, "a fleet takes its own cost model");
    return simulate_fleet(c, w, options);
  }
  RunResult result;
  result.config = c;
  result.options = recorded_options(options);
  result.memory = checked_memory_plan(c);
  std::unique_ptr<CostModel> own;
  if (cost_override == nullptr) own = make_cost_model(c);
  const CostModel& cost = cost_override ? *cost_override : *own;
  const WorkloadBlockHasher hasher(w, c.scheduler.block_size);
  const std::unique_ptr<Scheduler> scheduler = make_scheduler(
      replica_scheduler_config(c, result.memory), result.memory.num_gpu_blocks, w.size(), &hasher);
  MetricsCollector metrics(w, options.keep_steps, options.metrics);
  metrics.set_power({make_power_model(c)});
  EventLoop loop;
  Gateway arrivals(w, options, metrics, c.frontend_latency_s, nullptr, c.scheduler.block_size,
                   &hasher);
  // The gateway hears of every request that leaves: a closed loop sends the next, progress
  // counts them, and the overload verdict counts the requests in the system.
  Host host(loop, *scheduler, cost, metrics, &arrivals);
  set_host_link(host, c);
  arrivals.start(loop, {ReplicaLink{&host}});
  loop.run();

  result.requests = metrics.records(scheduler->seqs());
  result.summary = metrics.summary(result.requests, c.gpu.peak_flops() * c.gpus(),
                                   c.gpu.hbm_bytes_per_s() * c.gpus(), scheduler->usable_blocks());
  summarize_features(c, *scheduler, host, result.requests, result.summary);
  if (loop.stopped()) mark_stopped_at_last_arrival(result.summary);
  result.steps = metrics.take_steps();
  if (options.keep_histogram) keep_histogram(metrics, result);
  result.discarded_tokens = scheduler->discarded_tokens();
  return result;
}

}  // namespace servesim
