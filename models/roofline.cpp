#include "models/roofline.hpp"

#include <algorithm>
#include <cmath>

namespace servesim {

RooflineCostModel::RooflineCostModel(const GpuSpec& gpu, const ModelSpec& m, int tp,
                                     const RooflineParams& params)
    : gpu_(gpu), model_(m), tp_(tp), p_(params) {
  inverse_knee_ = p_.knee_sharpness > 0 ? 1.0 / p_.knee_sharpness : 0;
  layers_ = m.num_layers;
  dtype_ = m.dtype_bytes;
  const double h = m.hidden_size, q = double(m.num_heads) * m.head_dim,
               kv = double(m.num_kv_heads) * m.head_dim, inter = m.intermediate_size,
               k = m.experts_per_token;
  linear_flops_per_token_ = 2.0 * double(m.active_linear_params_per_layer()) * layers_;
  const double router = m.num_experts > 1 ? h * m.num_experts : 0;
  dense_weight_bytes_ = (double(m.attention_params_per_layer()) + router) * layers_ * dtype_;
  expert_weight_bytes_ = double(m.expert_params()) * layers_ * dtype_;
  // q/k/v in and out, o in and out, gate/up in and out, down in and out.
  linear_act_bytes_per_token_ =
      (h + (q + 2 * kv) + q + h + h + 2 * inter * k + inter * k + h) * layers_ * dtype_;
  // Two RMSNorms (read, write) and two residual adds (two reads, a write) run on the full hidden
  // state on every GPU of the TP group; rotary embedding on q and k (read, write) and SiLU x mul
  // (two reads, a write) on each GPU's shard.
  elementwise_replicated_bytes_per_token_ = (2 * 2 * h + 2 * 3 * h) * layers_ * dtype_;
  elementwise_sharded_bytes_per_token_ = (2 * (q + kv) + 3 * inter * k) * layers_ * dtype_;
  attn_flops_per_pair_ = 4.0 * q * layers_;  // QK^T and PV, 2 FLOPs per multiply-add
  // K and V over the whole group: KV heads are replicated when there are fewer than GPUs.
  kv_bytes_per_token_ = double(m.kv_bytes_per_token_per_gpu(tp)) * tp;
  qo_bytes_per_token_ = 2.0 * q * layers_ * dtype_;
  lm_head_bytes_ = double(m.lm_head_params()) * dtype_;
}

double RooflineCostModel::allreduce_seconds(double bytes) const {
  if (tp_ <= 1) return 0;
  const double tp = tp_;
  const double latency = p_.allreduce_switch_bytes > 0 && bytes > p_.allreduce_switch_bytes
                             ? p_.allreduce_large_latency_s
                             : p_.allreduce_latency_s;
  return latency + 2.0 * (tp - 1) / tp * bytes /
                       (gpu_.interconnect_bytes_per_s() * p_.interconnect_efficiency);
}

RooflineParams a100_fitted_params() {
  RooflineParams p;
  p.knee_sharpness = 1.36004;
  p.linear_tile_tokens = 64;
  p.linear_compute_efficiency = 0.737817;
  p.linear_memory_efficiency = 0.854668;
  p.elementwise_memory_efficiency = 0.592348;
  p.elementwise_floor_s_per_layer = 2.09352e-05;
  p.attention_compute_efficiency = 0.278258;
  p.attention_memory_efficiency = 0.816055;
  p.attention_floor_s_per_layer = 1.34185e-05;
  p.interconnect_efficiency = 0.264215;
  p.allreduce_latency_s = 2.82129e-05;
  p.allreduce_switch_bytes = 524288;
  p.allreduce_large_latency_s = 3.80909e-05;
  p.cpu_overhead_s = 0.000868045;
  p.cpu_overhead_s_per_seq = 3.61964e-05;
  return p;
}

RooflineParams default_roofline_params(const GpuSpec&) {
  return a100_fitted_params();
}

std::string default_roofline_source(const GpuSpec& gpu) {
  if (gpu.name == "a100-80g") return "fitted on Vidur's A100-80GB profiles";
  if (gpu.name == "a100-40g") return "the A100-80GB fit (same chip), datasheet memory";
  return "datasheet only: the A100 fit's efficiencies against this GPU's datasheet peaks";
}

const std::vector<RooflineParamField>& roofline_param_fields() {
  using P = RooflineParams;
  static const std::vector<RooflineParamField> fields = {
      {"knee_sharpness", &P::knee_sharpness, 0, 100},  // 0 (a hard max) or >= 1
      {"linear_tile_tokens", &P::linear_tile_tokens, 0, 4096},
      {"linear_compute_efficiency", &P::linear_compute_efficiency, 1e-3, 1},
      {"linear_memory_efficiency", &P::linear_memory_efficiency, 1e-3, 1},
      {"elementwise_memory_efficiency", &P::elementwise_memory_efficiency, 1e-3, 1},
      {"elementwise_floor_s_per_layer", &P::elementwise_floor_s_per_layer, 0, 0.1},
      {"attention_compute_efficiency", &P::attention_compute_efficiency, 1e-3, 1},
      {"attention_memory_efficiency", &P::attention_memory_efficiency, 1e-3, 1},
      {"attention_floor_s_per_layer", &P::attention_floor_s_per_layer, 0, 0.1},
      {"interconnect_efficiency", &P::interconnect_efficiency, 1e-3, 1},
      {"allreduce_latency_s", &P::allreduce_latency_s, 0, 0.1},
      {"allreduce_switch_bytes", &P::allreduce_switch_bytes, 0, 1e12},
      {"allreduce_large_latency_s", &P::allreduce_large_latency_s, 0, 0.1},
      {"cpu_overhead_s", &P::cpu_overhead_s, 0, 1},
      {"cpu_overhead_s_per_seq", &P::cpu_overhead_s_per_seq, 0, 0.1},
  };
  return fields;
}

StepCost RooflineCostModel::cost(std::span<const SeqShape> batch) const {
  // One pass over the batch gathers the sums the parts need.
  double tokens = 0, emitting = 0;
  double prefill_pairs = 0, prefill_kv_tokens = 0, prefill_tokens = 0;
  double decode_pairs = 0, decode_seqs = 0;
  for (const SeqShape& s : batch) {
    const double n = s.new_tokens, c = s.context_tokens;
    tokens += n;
    emitting += s.emits_token ? 1 : 0;
    // Token i of the chunk attends to the c cached tokens and to tokens 0..i of the chunk.
    const double pairs = n * c + n * (n + 1) / 2;
    if (s.prefill) {
      prefill_pairs += pairs;
      prefill_kv_tokens += c + n;
      prefill_tokens += n;
    } else {
      decode_pairs += pairs;
      decode_seqs += 1;
    }
  }
  const double decode_tokens = tokens - prefill_tokens;

  const double tp = tp_;
  const double flops_s = gpu_.peak_flops() * tp;  // whole TP group
  const double bytes_s = gpu_.hbm_bytes_per_s() * tp;
  auto part = [&](double flops, double bytes, double compute_eff, double memory_eff) {
    const double tc = flops / (flops_s * compute_eff), tm = bytes / (bytes_s * memory_eff);
    if (p_.knee_sharpness <= 0) return std::max(tc, tm);
    const double hi = std::max(tc, tm), lo = std::min(tc, tm);
    if (hi <= 0) return 0.0;
    const double r = lo / hi;  // in [0, 1]: (1 + r^k)^(1/k) is within 0.1% of 1 below 1e-3
    if (r < 1e-3) return hi;
    return hi * std::pow(1.0 + std::pow(r, p_.knee_sharpness), inverse_knee_);
  };

  StepCost c;
  // Linear layers. A MoE layer reads an expert's weights only if some token is routed to it:
  // E x (1 - (1 - k/E)^T) experts in expectation under uniform routing.
  const double experts_read =
      model_.num_experts > 1
          ? model_.num_experts *
                (1.0 -
                 std::pow(1.0 - double(model_.experts_per_token) / model_.num_experts, tokens))
          : 1.0;
  const double linear_flops = linear_flops_per_token_ * tokens;
  // Compute time counts the tokens the tiles process; FLOPs (for MFU) count the real ones.
  const double tile = p_.linear_tile_tokens;
  const double padded = tile > 0 ? std::ceil(tokens / tile) * tile : tokens;
  const double linear_bytes = dense_weight_bytes_ + experts_read * expert_weight_bytes_ +
                              linear_act_bytes_per_token_ * tokens;
  c.linear_s = part(linear_flops_per_token_ * padded, linear_bytes, p_.linear_compute_efficiency,
                    p_.linear_memory_efficiency);

  // Attention: the prefill kernel and the decode kernel each read the K and V they attend to and
  // write the new tokens' K and V.
  const double floor_attn = layers_ * p_.attention_floor_s_per_layer;
  const double prefill_flops = attn_flops_per_pair_ * prefill_pairs;
  const double prefill_bytes = kv_bytes_per_token_ * (prefill_kv_tokens + prefill_tokens) +
                               qo_bytes_per_token_ * prefill_tokens;
  const double decode_flops = attn_flops_per_pair_ * decode_pairs;
  const double decode_bytes =
      kv_bytes_per_token_ * (decode_pairs + decode_tokens) + qo_bytes_per_token_ * decode_tokens;
  // Each kernel pays its launch latency on top of its work (measured decode kernels at small
  // batches are latency plus transfer, not the larger of the two).
  if (prefill_tokens > 0) {
    c.attention_s +=
        floor_attn + part(prefill_flops, prefill_bytes, p_.attention_compute_efficiency,
                          p_.attention_memory_efficiency);
  }
  if (decode_seqs > 0) {
    c.attention_s += floor_attn + part(decode_flops, decode_bytes, p_.attention_compute_efficiency,
                                       p_.attention_memory_efficiency);
  }

  // Per GPU: the replicated part whole, the sharded part split; over the group: tp copies of
  // the replicated part.
  const double elementwise_gpu_bytes = tokens * (elementwise_replicated_bytes_per_token_ +
                                                 elementwise_sharded_bytes_per_token_ / tp);
  const double elementwise_bytes = elementwise_gpu_bytes * tp;
  c.elementwise_s =
      std::max(layers_ * p_.elementwise_floor_s_per_layer,
               elementwise_gpu_bytes / (gpu_.hbm_bytes_per_s() * p_.elementwise_memory_efficiency));

  double lm_flops = 0, lm_bytes = 0;
  if (emitting > 0) {
    lm_flops = 2.0 * double(model_.lm_head_params()) * emitting;
    lm_bytes = lm_head_bytes_ + emitting * model_.vocab_size * 4.0;  // float32 logits out
    c.lm_head_s =
        part(lm_flops, lm_bytes, p_.linear_compute_efficiency, p_.linear_memory_efficiency);
  }

  // Ring all-reduce of the hidden states after attention and after the MLP.
  c.allreduce_s = 2.0 * layers_ * allreduce_seconds(tokens * model_.hidden_size * dtype_);

  c.cpu_overhead_s = p_.cpu_overhead_s + p_.cpu_overhead_s_per_seq * double(batch.size());

  c.flops = linear_flops + prefill_flops + decode_flops + lm_flops;
  c.bytes = linear_bytes + prefill_bytes + decode_bytes + elementwise_bytes + lm_bytes;
  c.seconds =
      c.linear_s + c.attention_s + c.elementwise_s + c.lm_head_s + c.allreduce_s + c.cpu_overhead_s;
  return c;
}

}  // namespace servesim
