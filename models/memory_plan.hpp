// MemoryPlan: how one GPU's memory is split, the way vLLM V0 sizes its KV cache
// (Worker.determine_num_available_blocks, v0.6-v0.8): the KV cache gets
//   total x gpu_memory_utilization - weights/TP - activation peak - non-torch runtime memory,
// where the activation peak is that of the profiling run, a step of max_num_batched_tokens tokens
// spread over max_num_seqs sequences; num_gpu_blocks = KV bytes / (block_size x KV bytes per
// token per GPU). Promises: num_gpu_blocks >= 1, or plan_memory throws an Error stating the bytes.
#pragma once

#include <cstdint>

#include "models/gpu.hpp"
#include "models/model.hpp"

namespace servesim {

struct MemoryPlanOptions {
  int tp = 1;
  double gpu_memory_utilization = 0.9;
  int block_size = 16;
  int64_t max_num_batched_tokens = 2048;
  int64_t max_num_seqs = 256;
  // Memory outside PyTorch's allocator that vLLM subtracts (CUDA context, cuBLAS workspace,
  // NCCL buffers): vLLM >= 0.6.4 logs "non_torch_memory" of 0.2-0.6 GiB on one GPU.
  double runtime_reserve_gib = 0.5;
  int64_t num_gpu_blocks_override = 0;  // vLLM --num-gpu-blocks-override; 0 = computed
};

struct MemoryPlan {
  double usable_bytes = 0;      // total x gpu_memory_utilization
  double weight_bytes = 0;      // per GPU
  double activation_bytes = 0;  // per GPU, profiling-run peak
  double reserve_bytes = 0;
  double kv_cache_bytes = 0;  // per GPU, what is left for blocks
  int64_t kv_bytes_per_block = 0;
  int64_t num_gpu_blocks = 0;
  bool overridden = false;
};

// Activation peak of vLLM's profiling run: hidden states, the MLP's gate/up and activation
// outputs for every token, and float32 logits and probabilities for one token per sequence.
double activation_peak_bytes(const ModelSpec& m, int tp, int64_t num_tokens, int64_t num_seqs);

MemoryPlan plan_memory(const GpuSpec& gpu, const ModelSpec& model, const MemoryPlanOptions& opt);

}  // namespace servesim
