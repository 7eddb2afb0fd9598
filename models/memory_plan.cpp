#include "models/memory_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/parallel.hpp"
#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim {

double activation_peak_bytes(const ModelSpec& m, int tp, int64_t num_tokens, int64_t num_seqs) {
  // The widest layer's MLP (a MoE layer's routed and shared experts, or a dense layer's).
  const double inter = std::max(
      m.experts_per_token * double(m.intermediate_size) + m.shared_expert_intermediate_size,
      double(m.dense_intermediate_size));
  const double per_token = 4.0 * m.hidden_size + 3.0 * inter / tp;
  const double logits = double(std::min(num_tokens, num_seqs)) * m.vocab_size * 4.0 * 2.0;
  return double(num_tokens) * per_token * m.dtype_bytes + logits;
}

double v1_activation_peak_bytes(const ModelSpec& m, int64_t num_tokens, int64_t num_seqs) {
  const double rows = double(std::min(num_tokens, num_seqs));
  return 38.0 * rows * m.vocab_size + 4.0 * double(num_tokens) * m.hidden_size;
}

double runtime_reserve_gib(const MemoryPlanOptions& opt, const ServerShape& shape) {
  if (!std::isnan(opt.runtime_reserve_gib)) return opt.runtime_reserve_gib;
  if (!v1_memory_profile(shape.engine)) return 0.5;
  return std::max(shape.tp * shape.pp, shape.ep) > 1 ? 0.64 : 0.49;
}

namespace {
std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}
// "TP4", or "TP4 x PP2 (stage 2 of 2)": the stage whose plan P is.
std::string layout(const ServerShape& shape, const MemoryPlan& p) {
  std::string s = "TP" + std::to_string(shape.tp);
  if (shape.pp > 1) {
    s += " x PP" + std::to_string(shape.pp) + " (stage " + std::to_string(p.stage + 1) + " of " +
         std::to_string(shape.pp) + ")";
  }
  return s;
}
std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}
}  // namespace

namespace {

// One stage's plan, of LAYERS layers from FIRST_LAYER (all of them without a pipeline), before
// its block count.
MemoryPlan plan_stage(const GpuSpec& gpu, const ModelSpec& model, const MemoryPlanOptions& opt,
                      const ServerShape& shape, int stage, int first_layer, int layers) {
  MemoryPlan p;
  const bool first = stage == 0, last = stage == shape.pp - 1;
  p.stage = stage;
  p.stages = shape.pp;
  p.usable_bytes = gpu.hbm_bytes() * opt.gpu_memory_utilization;
  p.drafter_weight_bytes = shape.drafter_weight_bytes;
  p.lora_bytes = shape.lora_bytes;
  p.weight_bytes = (shape.pp > 1   ? model.stage_weight_bytes_per_gpu(shape.tp, layers, first, last)
                    : shape.ep > 1 ? model.ep_weight_bytes_per_gpu(shape.tp, shape.ep)
                                   : model.weight_bytes_per_gpu(shape.tp)) +
                   p.drafter_weight_bytes + p.lora_bytes;
  if (v1_memory_profile(shape.engine)) {
    // request_memory: ceil(total x utilization); RotaryEmbedding's cos_sin_cache on every GPU
    // (MLA's rotates only the qk_rope_head_dim part, a partial rotary factor its share of a head).
    p.usable_bytes = std::ceil(p.usable_bytes);
    const int rotary_dim =
        model.mla() ? model.qk_rope_head_dim : int(model.head_dim * model.partial_rotary_factor);
    p.weight_bytes += double(model.max_position) * rotary_dim * model.dtype_bytes;
    p.activation_bytes =
        last ? v1_activation_peak_bytes(model, shape.max_num_batched_tokens, shape.max_num_seqs)
             : v1_activation_peak_bytes(model, shape.max_num_batched_tokens, 0);
  } else {
    p.activation_bytes =
        last ? activation_peak_bytes(model, shape.tp, shape.max_num_batched_tokens,
                                     shape.max_num_seqs)
             : activation_peak_bytes(model, shape.tp, shape.max_num_batched_tokens, 0);
  }
  p.reserve_bytes = runtime_reserve_gib(opt, shape) * 1024.0 * 1024.0 * 1024.0;
  p.kv_cache_bytes = p.usable_bytes - p.weight_bytes - p.activation_bytes - p.reserve_bytes;
  // A block holds block_size tokens of the layers of one KV cache group: all of them, or with
  // sliding-window layers one group's (each kind its own blocks of the shared pool).
  const int64_t kv_per_token = model.kv_bytes_per_token_per_layer(shape.tp) *
                               model.kv_cache_layers_per_block(first_layer, layers);
  p.kv_bytes_per_block =
      int64_t(shape.block_size) * (kv_per_token + shape.drafter_kv_bytes_per_token);
  return p;
}

double blocks_of(const MemoryPlan& p) {
  return p.kv_cache_bytes > 0 ? std::floor(p.kv_cache_bytes / p.kv_bytes_per_block) : 0.0;
}

}  // namespace

MemoryPlan plan_memory(const GpuSpec& gpu, const ModelSpec& model, const MemoryPlanOptions& opt,
                       const ServerShape& shape) {
  MemoryPlan p;
  if (shape.pp <= 1) {
    p = plan_stage(gpu, model, opt, shape, 0, 0, model.num_layers);
  } else {
    const std::vector<int> layers = pp_layer_partition(model.num_layers, shape.pp);
    for (int s = 0, first = 0; s < shape.pp; first += layers[size_t(s)], ++s) {
      MemoryPlan stage = plan_stage(gpu, model, opt, shape, s, first, layers[size_t(s)]);
      // The fewest blocks; among stages with none, the least room (the one to name).
      const double b = blocks_of(stage), best = blocks_of(p);
      if (s == 0 || b < best || (b == best && stage.kv_cache_bytes < p.kv_cache_bytes)) p = stage;
    }
  }
  if (opt.num_gpu_blocks_override > 0) {
    if (opt.num_gpu_blocks_override > kMaxKvBlocks) {
      throw Error(field::kNumGpuBlocks, std::to_string(opt.num_gpu_blocks_override) + ": at most " +
                                            std::to_string(kMaxKvBlocks));
    }
    p.num_gpu_blocks = opt.num_gpu_blocks_override;
    p.overridden = true;
    return p;
  }
  const double blocks = blocks_of(p);
  if (blocks > double(kMaxKvBlocks)) {
    throw Error(field::kGpu, gpu.name + " leaves room for " + format("%.3g", blocks) +
                                 " KV blocks of " + model.name + ", more than the " +
                                 std::to_string(kMaxKvBlocks) + " a replica may have");
  }
  p.num_gpu_blocks = static_cast<int64_t>(blocks);
  if (p.num_gpu_blocks < 1) {
    // Issue 44: the target alone would fit, a speculative drafter or LoRA buffers do not: blame
    // them, not the model (a 70B draft on a 1B target was "llama-3.2-1b does not fit").
    const double extra = p.drafter_weight_bytes + p.lora_bytes;
    const double without = p.kv_cache_bytes + extra;
    if (extra > 0 &&
        without >= double(int64_t(shape.block_size) * model.kv_bytes_per_token_per_gpu(shape.tp))) {
      const bool draft = p.drafter_weight_bytes >= p.lora_bytes;
      throw Error(
          draft ? field::kSpeculativeModel : field::kMaxLoras,
          model.name + " fits on " + gpu.name + " at " + layout(shape, p) +
              " alone, but not with " +
              (draft
                   ? "the speculative drafter's weights (" + gib(p.drafter_weight_bytes) + " a GPU)"
                   : "the LoRA adapters' buffers (" + gib(p.lora_bytes) + " a GPU)") +
              ": " + gib(p.kv_cache_bytes) + " would be left for the KV cache (give a smaller " +
              (draft ? "draft model"
                     : field::ref(field::kMaxLoras) + " or " + field::ref(field::kMaxLoraRank)) +
              ")");
    }
    throw Error(field::kModel,
                model.name + " does not fit on " + gpu.name + " at " + layout(shape, p) +
                    ": usable " + gib(p.usable_bytes) + " (" + gib(gpu.hbm_bytes()) + " x " +
                    fixed2(opt.gpu_memory_utilization) + ") - weights " + gib(p.weight_bytes) +
                    " - activations " + gib(p.activation_bytes) + " - runtime reserve " +
                    gib(p.reserve_bytes) + " leaves " + gib(p.kv_cache_bytes) +
                    " for the KV cache, less than one " + std::to_string(p.kv_bytes_per_block) +
                    "-byte block (raise " + field::ref(field::kTp) + " or " +
                    field::ref(field::kGpuMemoryUtilization) + ", or lower " +
                    (v1_memory_profile(shape.engine) ? field::ref(field::kMaxNumSeqs) + " or " +
                                                           field::ref(field::kMaxNumBatchedTokens) +
                                                           ", which size the activation reserve"
                                                     : field::ref(field::kMaxNumBatchedTokens)) +
                    ")");
  }
  return p;
}

}  // namespace servesim
