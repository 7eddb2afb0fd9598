// CostModel: what one engine step (one forward pass over a batch) costs on one replica.
// Given the batch shape, it returns the step's wall time and the FLOPs and HBM bytes that explain
// it, summed over every GPU of the tensor-parallel group. Implementations are pure functions of the
// shape: the same shape always costs the same, which keeps simulations deterministic.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace servesim {

// One sequence's part of a step.
struct SeqShape {
  int32_t new_tokens = 0;      // tokens whose KV this step computes (prefill chunk, or 1 to decode)
  int32_t context_tokens = 0;  // tokens already in the KV cache that those tokens attend to
  bool prefill = false;        // still in its prefill stage (prompt or recompute); else a decode
  bool emits_token = false;    // the step ends its pending tokens, so the sampler emits one
  // Speculative decoding: of the new tokens, the drafts this step verifies (new_tokens - 1 of a
  // decode's). The LM head scores each of them and the token before them.
  uint16_t draft_tokens = 0;
};

// Seconds of each part of a step, in the order they run; seconds is their sum.
struct StepCost {
  double seconds = 0;
  double flops = 0;  // floating-point operations, all GPUs
  double bytes = 0;  // HBM bytes read and written, all GPUs
  double linear_s = 0, attention_s = 0, elementwise_s = 0, lm_head_s = 0, allreduce_s = 0,
         cpu_overhead_s = 0;
  double engine_s = 0;  // the engine's GPU-side step work outside the model
  double draft_s = 0;   // a speculative drafter's passes after sampling (models/spec_decode_cost)
  double kv_transfer_s = 0;  // KV copies to and from the CPU tier the step waits for (LMCache)
  double lora_s = 0;         // LoRA adapters' kernels (models/lora.hpp)
  double lora_load_s = 0;    // LoRA adapters loaded from disk and copied to the GPU for the step
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual StepCost cost(std::span<const SeqShape> batch) const = 0;
  virtual std::string name() const = 0;
};

}  // namespace servesim
