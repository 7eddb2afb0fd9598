// LoRA adapters on a served model (vLLM --enable-lora; vllm/lora/): their bytes, the buffers vLLM
// reserves for them on each GPU, and what their kernels add to a step.
//  - An adapter of rank r adds A (in x r) and B (r x out) to each target module of every layer:
//    vLLM's default targets, the attention's qkv and o projections and the MLP's gate_up and
//    down (every expert's for a mixture of experts), in the model's dtype.
//  - vLLM preallocates stacked A/B buffers for max_loras adapters of max_lora_rank
//    (LoRAModelManager, create_lora_weights) on each GPU: a column-parallel module (qkv, gate_up)
//    keeps A whole and B split over the TP group, a row-parallel one (o, down) the reverse.
//  - The punica kernels (lora_shrink, lora_expand; vllm/lora/ops/triton_ops) run over the tokens
//    of sequences with an adapter: shrink reads the activations x (in wide) and writes x A (r
//    wide), expand reads that and adds (x A) B into the module's output (out wide, read and
//    written); each reads the weights of the batch's distinct adapters once. 2 r (in + out)
//    FLOPs per token per module. Each layer's eight launches cost one linear-layer floor of the
//    hardware fit (replayed as a CUDA graph, V1), the work its roofline at the GEMMs' efficiency.
// Not modelled: LoRA on the LM head and embeddings, fully_sharded_loras, DoRA.
#pragma once

#include <cstdint>

#include "models/cost_model.hpp"
#include "models/engine.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"
#include "models/model.hpp"

namespace servesim {

// vLLM's --max-lora-rank values (LoRAConfig): 1, 8, 16, 32, 64, 128, 256, 320, 512.
bool valid_max_lora_rank(int rank);

// One layer's target modules, summed: their inputs' widths and their outputs' widths.
struct LoraWidths {
  double in = 0, out = 0;          // all four modules
  double col_in = 0, col_out = 0;  // qkv and gate_up (column-parallel)
  double row_in = 0, row_out = 0;  // o and down (row-parallel)
};
LoraWidths lora_widths(const ModelSpec& m);

// The bytes of one adapter of rank RANK on M, all layers, in M's dtype.
double lora_adapter_bytes(const ModelSpec& m, int rank);
// The A/B buffers vLLM reserves on each GPU of a TP group of TP for MAX_LORAS adapters of
// MAX_RANK.
double lora_buffer_bytes_per_gpu(const ModelSpec& m, int tp, int max_loras, int max_rank);

// The LoRA kernels of a step of M on TP GPUs of GPU with adapters of rank RANK, on the hardware
// fit HW and the engine ENGINE (for the CUDA-graph floor).
class LoraKernels {
 public:
  LoraKernels(const GpuSpec& gpu, const ModelSpec& m, int tp, const HardwareParams& hw,
              const EngineParams& engine, int rank);
  // TOKENS tokens of sequences with an adapter, ADAPTERS distinct adapters in the batch: its
  // seconds (lora_s), FLOPs and bytes; nothing without an adapter.
  StepCost cost(double tokens, int adapters) const;
  double adapter_bytes() const { return adapter_bytes_; }

 private:
  double flops_per_token_ = 0;  // all layers, all GPUs
  double act_bytes_per_token_ = 0;
  double adapter_bytes_ = 0;
  double floor_s_ = 0;
  double flops_s_ = 0, bytes_s_ = 0;  // the TP group's, at the GEMMs' efficiency
};

}  // namespace servesim
