#include "sim/replica_config.hpp"

#include <algorithm>
#include <cmath>

#include "models/lora.hpp"
#include "models/roofline.hpp"
#include "models/spec_decode_cost.hpp"
#include "models/table_model.hpp"
#include "scheduler/capabilities.hpp"
#include "scheduler/policy.hpp"
#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {

// The target's own cost model.
std::unique_ptr<CostModel> target_cost_model(const SimConfig& c) {
  if (c.cost_model == "table") {
    return std::make_unique<TableCostModel>(*c.profiles, c.gpu, c.model, c.tp);
  }
  return std::make_unique<RooflineCostModel>(c.gpu, c.model, c.tp, *c.hardware, *c.engine_params,
                                             c.pp, c.expert_parallel ? c.dp : 0, c.expert_skew);
}

}  // namespace

std::unique_ptr<CostModel> make_cost_model(const SimConfig& c) {
  std::unique_ptr<CostModel> target = target_cost_model(c);
  if (!c.drafter.on_gpu()) return target;
  // The drafter's passes on the roofline of the same hardware fit (a table's profiles measure
  // the target only), without the engine's per-step work, which the target's step pays.
  EngineParams passes{c.engine, 0, 0, 0, 0, c.engine_params->floor_fraction};
  auto draft =
      std::make_unique<RooflineCostModel>(c.gpu, c.drafter.model, c.tp, *c.hardware, passes);
  return std::make_unique<SpeculativeCostModel>(std::move(target), std::move(draft),
                                                c.scheduler.spec.num_speculative_tokens);
}

PowerModel make_power_model(const SimConfig& c) {
  return PowerModel(c.gpu, c.hardware ? *c.hardware : hardware_params(c.gpu.arch), c.gpus());
}

ServerShape server_shape(const SimConfig& c) {
  ServerShape s;
  s.tp = c.tp;
  s.pp = c.pp;
  s.ep = c.ep();
  s.block_size = c.scheduler.block_size;
  s.max_num_batched_tokens = c.scheduler.max_num_batched_tokens;
  s.max_num_seqs = c.scheduler.max_num_seqs;
  s.engine = c.engine;
  s.drafter_weight_bytes = double(c.drafter.weight_bytes) / c.tp;
  if (c.lora.enabled) {
    s.lora_bytes = lora_buffer_bytes_per_gpu(c.model, c.tp, c.lora.max_loras, c.lora.max_lora_rank);
  }
  s.drafter_kv_bytes_per_token = c.drafter.kv_bytes_per_token_per_gpu(c.tp);
  return s;
}

SchedulerConfig replica_scheduler_config(const SimConfig& c, const MemoryPlan& m) {
  SchedulerConfig s = c.scheduler;
  s.max_loras = c.lora.enabled ? c.lora.max_loras : 0;
  if (c.pp > 1) {
    // A batch a stage in flight. vLLM schedules no request whose last token is still in flight
    // (AsyncScheduler's constraint under PP, vLLM pull request 32359, in 0.15): V1's scheduler
    // without placeholders, as the synchronous one, whether or not async scheduling is on.
    s.batch_queue_size = c.pp;
    s.async_scheduling = false;
  }
  const KvOffloadOptions& o = c.offload;
  if (!o.enabled()) return s;
  KvOffloadConfig& k = s.offload;
  k.backend = o.backend;
  const int block_size = o.block_size > 0 ? o.block_size : s.block_size;
  k.block_size_factor = block_size / s.block_size;
  // Every KV layer of one offloaded block on one GPU (the drafter's included): one DMA copy.
  k.bytes_per_block = double(m.kv_bytes_per_block) * k.block_size_factor;
  // CPUOffloadingSpec: num_blocks = cpu_bytes_to_use // (bytes per block x world_size).
  const double ranks = o.per_rank ? 1.0 : double(c.tp);
  k.num_cpu_blocks = int64_t(std::floor(o.cpu_bytes / (k.bytes_per_block * ranks)));
  if (k.num_cpu_blocks < 1) {
    throw Error(
        o.backend == OffloadBackend::kLmcache ? field::kKvTransferConfig : field::kKvOffloadingSize,
        format("%.3g GiB of CPU memory holds no offloaded block of %.3g MiB on each of %d "
               "GPUs",
               o.cpu_bytes / 1073741824.0, k.bytes_per_block / 1048576.0, c.tp));
  }
  return s;
}

void set_host_link(Host& host, const SimConfig& c) {
  const double bytes_per_s =
      c.offload.link_gb_per_s > 0 ? c.offload.link_gb_per_s * 1e9 : c.gpu.host_dma_bytes_per_s();
  host.set_host_link(bytes_per_s, c.offload.link_latency_s);
  if (!c.lora.enabled) return;
  LoraManagerOptions o;
  o.max_loras = c.lora.max_loras;
  o.max_cpu_loras = c.lora.cpu_loras();
  o.adapter_bytes = lora_adapter_bytes(c.model, c.lora.adapter_rank());
  o.disk_bytes_per_s = c.lora.load_gb_per_s * 1e9;
  o.disk_latency_s = c.lora.load_latency_s;
  o.h2d_bytes_per_s = c.gpu.host_dma_bytes_per_s();
  // A table model's profiles have no LoRA kernels: the adapters' loads only.
  std::unique_ptr<LoraKernels> kernels;
  if (c.cost_model == "roofline") {
    kernels = std::make_unique<LoraKernels>(c.gpu, c.model, c.tp, *c.hardware, *c.engine_params,
                                            c.lora.adapter_rank());
  }
  host.enable_lora(std::move(kernels), o);
}

MemoryPlan checked_memory_plan(const SimConfig& c) {
  MemoryPlan m = plan_memory(c.gpu, c.model, c.memory, server_shape(c));
  if (m.num_gpu_blocks < min_num_gpu_blocks(c.scheduler.policy)) {
    throw Error(field::kNumGpuBlocks,
                format("%s needs at least %lld KV blocks (one is vLLM's null block)",
                       policy_name(c.scheduler.policy),
                       static_cast<long long>(min_num_gpu_blocks(c.scheduler.policy))));
  }
  // vLLM refuses to start when one request of max_model_len tokens cannot fit the KV cache (V1:
  // kv_cache_utils.check_enough_kv_cache_memory; V0: Worker's raise_if_cache_size_invalid),
  // rather than serve and reject every long request (issue 25: 70B at TP2 got 8 blocks and
  // rejected all). V1 checks the memory before --num-gpu-blocks-override, so an override is not
  // checked here.
  // With sliding-window layers the request also holds its window's blocks
  // (SlidingWindowSpec.max_memory_usage_bytes), with linear-attention layers a state block a
  // group (MambaSpec.max_memory_usage_bytes): the tokens are those of the blocks left.
  const int64_t max_len = c.scheduler.max_model_len;
  const int64_t other_group_blocks =
      (c.model.sliding() && max_len > 0
           ? sliding_window_max_blocks(c.model.sliding_window, c.scheduler.block_size,
                                       c.scheduler.max_num_batched_tokens, max_len)
           : 0) +
      c.scheduler.state_groups;
  const int64_t kv_tokens =
      std::max<int64_t>(m.num_gpu_blocks - other_group_blocks, 0) * int64_t(c.scheduler.block_size);
  if (!m.overridden && max_len > 0 && kv_tokens < max_len) {
    throw Error(
        field::kMaxModelLen,
        format("vLLM would not start: the model's max seq len (%lld) is larger than the "
               "maximum number of tokens that can be stored in KV cache (%lld: %lld "
               "blocks of %d on %s at TP%d%s, %.2f GiB per GPU); based on the available "
               "memory the estimated maximum model length is %lld. Lower {{model.max_model_len}}, "
               "or raise {{cache.gpu_memory_utilization}} or {{parallel.tp}} "
               "(or lower {{scheduler.max_num_seqs}}, which "
               "sizes the activation reserve)",
               static_cast<long long>(max_len), static_cast<long long>(kv_tokens),
               static_cast<long long>(m.num_gpu_blocks), c.scheduler.block_size, c.gpu.name.c_str(),
               c.tp, c.pp > 1 ? format(" x PP%d", c.pp).c_str() : "",
               m.kv_cache_bytes / double(1 << 30), static_cast<long long>(kv_tokens)));
  }
  return m;
}

}  // namespace servesim
