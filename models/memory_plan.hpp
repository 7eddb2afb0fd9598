// MemoryPlan: how one GPU's memory is split, the way vLLM sizes its KV cache: the KV cache gets
//   total x gpu_memory_utilization - weights/TP - activation peak - non-torch runtime memory,
// where total is the capacity CUDA reports and the activation peak is that of the profiling run,
// a step of max_num_batched_tokens tokens spread over max_num_seqs sequences; num_gpu_blocks =
// KV bytes / (block_size x KV bytes per token per GPU). The two engines differ:
//  - V0 (Worker.determine_num_available_blocks, v0.6-v0.8): the peak of the hidden states and MLP
//    activations of every token, and float32 logits; a runtime reserve of 0.5 GiB.
//  - V1 (gpu_worker.py determine_available_memory and gpu_model_runner.profile_run, v0.15.1): the
//    profile run skips attention and ends in _dummy_sampler_run, whose sort-based top-k/top-p
//    over min(max_num_seqs, tokens) rows of logits is the peak (38 bytes per logit: float32
//    logits, sorted values, int64 indices, masks and probabilities), with two bf16 hidden-state
//    tensors of every token still held; weights include RoPE's cos/sin cache (max_position x
//    head_dim, bf16); NCCL, the custom all-reduce and the CUDA context are created before the
//    baseline snapshot, so only what grows during the profile counts: 0.49 GiB, 0.64 GiB under
//    tensor parallelism. CUDA-graph memory is not subtracted in v0.15 (it comes out of the
//    1 - gpu_memory_utilization headroom).
// The V1 constants were read off the KV block counts vLLM 0.15.1 logged on H100
// (../shared/groundtruth): 38 B/logit and 4 B/(token x hidden) from the sampler's tensors, the two
// reserves fitted; every dense model of that file is then within 0.6% (docs/design/memory-plan.md).
// Promises: num_gpu_blocks >= 1, or plan_memory throws an Error stating the bytes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "models/engine.hpp"
#include "models/gpu.hpp"
#include "models/model.hpp"

namespace servesim {

// The memory flags a vLLM user sets (SimConfig::memory is their one owner).
struct MemoryPlanOptions {
  double gpu_memory_utilization = 0.9;
  // Memory outside PyTorch's allocator that vLLM subtracts (CUDA context, cuBLAS workspace,
  // NCCL buffers): vLLM >= 0.6.4 logs "non_torch_memory" of 0.2-0.6 GiB on one GPU. NaN: the
  // engine's default (V0 0.5 GiB; V1 0.49 GiB, 0.64 GiB with TP > 1).
  double runtime_reserve_gib = NAN;
  int64_t num_gpu_blocks_override = 0;  // vLLM --num-gpu-blocks-override; 0 = computed
};

// What the plan reads of the server's configuration, whose owners are elsewhere (SimConfig's tp,
// scheduler and engine: sim/replica_config.hpp server_shape builds one): the plan only reads it.
struct ServerShape {
  int tp = 1;
  // Pipeline stages (models/parallel.hpp), each a TP group: vLLM sizes every worker's KV cache
  // from its own memory and layers, and the engine takes the fewest blocks of any
  // (kv_cache_utils.get_kv_cache_configs).
  int pp = 1;
  // GPUs the routed experts are spread over (vLLM --enable-expert-parallel: TP x the DP ranks);
  // 1: split by TP as the rest of the weights.
  int ep = 1;
  int block_size = 16;
  int64_t max_num_batched_tokens = 2048;
  int64_t max_num_seqs = 256;
  Engine engine = Engine::kV0;  // whose profile run sizes the KV cache (v1_memory_profile)
  // Weights and KV beyond the target model's, per GPU: a speculative drafter's (models/drafter.hpp:
  // its attention layers share the KV cache's blocks) and LoRA adapters' buffers.
  double drafter_weight_bytes = 0;
  int64_t drafter_kv_bytes_per_token = 0;
  double lora_bytes = 0;
};

// The most KV blocks a replica may have: V1's free queue keeps a block's id in 30 bits
// (scheduler/kv_cache_manager.hpp). A billion blocks is terabytes of KV on any GPU.
inline constexpr int64_t kMaxKvBlocks = (int64_t(1) << 30) - 1;

// The most blocks a request holds in a sliding-window KV cache group, WINDOW tokens wide (vLLM's
// SlidingWindowSpec.max_admission_blocks_per_request): the last window - 1 computed tokens and a
// step's new ones, at most max_model_len, in blocks, and one more for a window that starts inside
// a block. Both the start-up check and the admission gate count it.
inline int64_t sliding_window_max_blocks(int64_t window, int block_size,
                                         int64_t max_num_batched_tokens, int64_t max_model_len) {
  const int64_t tokens = std::min(window - 1 + max_num_batched_tokens, max_model_len);
  return (tokens + block_size - 1) / block_size + 1;
}

struct MemoryPlan {
  double usable_bytes = 0;  // total x gpu_memory_utilization
  double weight_bytes = 0;  // per GPU, the drafter's and the LoRA buffers included
  double drafter_weight_bytes = 0, lora_bytes = 0;  // per GPU, of weight_bytes
  double activation_bytes = 0;                      // per GPU, profiling-run peak
  double reserve_bytes = 0;
  double kv_cache_bytes = 0;  // per GPU, what is left for blocks
  int64_t kv_bytes_per_block = 0;
  int64_t num_gpu_blocks = 0;
  bool overridden = false;
  // With pipeline stages, the figures above are those of the stage with the fewest blocks.
  int stage = 0, stages = 1;
};

// Of a pipeline (ServerShape::pp > 1), each stage's GPUs hold their layers' weights and KV (the
// first the embedding, the last the LM head: ModelSpec::stage_weight_bytes_per_gpu); the last alone
// runs the sampler, so the others' activation peak is the hidden states' alone; every GPU of a
// pipeline has the runtime reserve of tensor parallelism (NCCL is set up). Under expert
// parallelism (ServerShape::ep > 1) a GPU holds ceil(E / EP) whole routed experts a MoE layer
// (ModelSpec::ep_weight_bytes_per_gpu) and has the same reserve: its EP group's NCCL; each
// data-parallel rank has its own KV cache, sized by its own profile run.
// Activation peak of vLLM's profiling run: hidden states, the MLP's gate/up and activation
// outputs for every token, and float32 logits and probabilities for one token per sequence.
double activation_peak_bytes(const ModelSpec& m, int tp, int64_t num_tokens, int64_t num_seqs);
// V1's profile-run peak (see above).
double v1_activation_peak_bytes(const ModelSpec& m, int64_t num_tokens, int64_t num_seqs);
// The runtime reserve OPT asks for, or the default of SHAPE's engine, in GiB.
double runtime_reserve_gib(const MemoryPlanOptions& opt, const ServerShape& shape);

MemoryPlan plan_memory(const GpuSpec& gpu, const ModelSpec& model, const MemoryPlanOptions& opt,
                       const ServerShape& shape = {});

}  // namespace servesim
