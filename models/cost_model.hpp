// CostModel: what one engine step (one forward pass over a batch) costs on one replica.
// Given the batch shape, it returns the step's wall time and the FLOPs and HBM bytes that explain
// it, summed over every GPU of the tensor-parallel group. Implementations are pure functions of the
// shape: the same shape always costs the same, which keeps simulations deterministic.
#pragma once

#include <algorithm>
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

// The sums over a batch that a step's cost rests on, kept as the batch is built (Batch::add) so
// that costing a step reads a few numbers instead of every sequence's shape. Integers: summed in
// any order they are the same, and exactly the doubles a pass over the shapes summed.
struct BatchTotals {
  // Index 1: sequences in their prefill stage (SeqShape::prefill), 0: decodes.
  int64_t seqs[2] = {0, 0}, tokens[2] = {0, 0};
  // Token i of a chunk attends to the c cached tokens and to tokens 0..i of the chunk: n c +
  // n (n + 1) / 2 (query, key) pairs; an attention kernel reads a sequence's KV once (c + n).
  int64_t pairs[2] = {0, 0}, kv_tokens[2] = {0, 0};
  int64_t emitting = 0;     // positions the LM head scores: each sampled one and its drafts
  int32_t max_context = 0;  // of any sequence, its context and new tokens
  void add(const SeqShape& s) {
    const int64_t n = s.new_tokens, c = s.context_tokens;
    const int p = s.prefill ? 1 : 0;
    ++seqs[p];
    tokens[p] += n;
    pairs[p] += n * c + n * (n + 1) / 2;
    kv_tokens[p] += c + n;
    emitting += s.emits_token ? 1 + s.draft_tokens : 0;
    max_context = std::max(max_context, s.context_tokens + s.new_tokens);
  }
  static BatchTotals of(std::span<const SeqShape> batch) {
    BatchTotals t;
    for (const SeqShape& s : batch)
      t.add(s);
    return t;
  }
};

// Seconds of each part of a step, in the order they run; seconds is their sum.
struct StepCost {
  double seconds = 0;
  double flops = 0;  // floating-point operations, all GPUs
  // The same at BF16's rate: an FP8 (NVFP4) GEMM's FLOPs count for the BF16 peak over the FP8
  // (FP4) one of theirs, as the step's compute time does. The power model's compute load; 0 (a
  // cost model that does not say): flops.
  double bf16_flops = 0;
  double bytes = 0;  // HBM bytes read and written, all GPUs
  double linear_s = 0, attention_s = 0, elementwise_s = 0, lm_head_s = 0, allreduce_s = 0,
         cpu_overhead_s = 0;
  double engine_s = 0;  // the engine's GPU-side step work outside the model
  // Expert parallelism across data-parallel ranks: each MoE layer's dispatch (all-gather) and
  // combine (reduce-scatter) between the ranks (models/parallel.hpp).
  double all_to_all_s = 0;
  double draft_s = 0;  // a speculative drafter's passes after sampling (models/spec_decode_cost)
  double kv_transfer_s = 0;  // KV copies to and from the CPU tier the step waits for (LMCache)
  double lora_s = 0;         // LoRA adapters' kernels (models/lora.hpp)
  double lora_load_s = 0;    // LoRA adapters loaded from disk and copied to the GPU for the step
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual StepCost cost(std::span<const SeqShape> batch) const = 0;
  // The same, given also BATCH's totals (BatchTotals::of(batch)), which a model that needs no
  // more than the sums costs without reading the shapes.
  virtual StepCost cost(std::span<const SeqShape> batch, const BatchTotals& /*totals*/) const {
    return cost(batch);
  }
  virtual std::string name() const = 0;
  // Pipeline parallelism: the stages a step passes through one after the other, each a TP
  // group of its own (1: none).
  virtual int pipeline_stages() const { return 1; }
  // The seconds of each stage of a step that COST costed (the whole model's, from TOTALS) and of
  // each send between stages: OUT[2 s] stage s's GPU work, OUT[2 s + 1] the send from stage s
  // to s + 1; 2 x pipeline_stages() - 1 values. Without a pipeline, the step's GPU work.
  virtual void pipeline_seconds(const StepCost& cost, const BatchTotals& /*totals*/,
                                std::span<double> out) const {
    out[0] = cost.seconds - cost.cpu_overhead_s;
  }
};

}  // namespace servesim
