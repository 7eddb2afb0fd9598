#include "models/roofline.hpp"

#include <algorithm>
#include <cmath>

namespace servesim {

RooflineCostModel::RooflineCostModel(const GpuSpec& gpu, const ModelSpec& m, int tp,
                                     const RooflineParams& params, bool v1_engine)
    : gpu_(gpu), model_(m), tp_(tp), p_(params), v1_engine_(v1_engine) {
  inverse_knee_ = p_.knee_sharpness > 0 ? 1.0 / p_.knee_sharpness : 0;
  moe_time_factor_ = m.num_experts > 1 && p_.moe_memory_efficiency > 0
                         ? p_.linear_memory_efficiency / p_.moe_memory_efficiency
                         : 1.0;
  const double floors = v1_engine ? p_.v1_floor_fraction : 1.0;
  elementwise_floor_s_ = p_.elementwise_floor_s_per_layer * floors * m.num_layers;
  attention_floor_s_ = p_.attention_floor_s_per_layer * floors * m.num_layers;
  layers_ = m.num_layers;
  dtype_ = m.dtype_bytes;
  const double h = m.hidden_size, q = double(m.num_heads) * m.head_dim,
               kv = double(m.num_kv_heads) * m.head_dim,
               inter = double(m.intermediate_size) * m.experts_per_token +
                       m.shared_expert_intermediate_size;  // MLP width a token passes through
  linear_flops_per_token_ = 2.0 * double(m.active_linear_params_per_layer()) * layers_;
  // FP8 GEMMs run at the FP8 peak: their FLOPs count for bf16 / fp8 of a BF16 FLOP in time.
  const double fp8_time = gpu.peak_flops() / gpu.fp8_peak_flops();
  const double router = m.num_experts > 1 ? h * m.num_experts : 0;
  const double attention = double(m.attention_params_per_layer()),
               mlp = double(m.active_linear_params_per_layer()) - attention - router;
  linear_time_flops_per_token_ = 2.0 * layers_ *
                                 (attention * (m.attention_weight_bytes == 1 ? fp8_time : 1.0) +
                                  mlp * (m.mlp_weight_bytes == 1 ? fp8_time : 1.0) + router);
  dense_weight_bytes_ = (attention * m.attention_weight_bytes + router * dtype_ +
                         double(m.shared_expert_params()) * m.mlp_weight_bytes) *
                        layers_;
  expert_weight_bytes_ = double(m.expert_params()) * layers_ * m.mlp_weight_bytes;
  // q/k/v in and out, o in and out, gate/up in and out, down in and out.
  linear_act_bytes_per_token_ =
      (h + (q + 2 * kv) + q + h + h + 2 * inter + inter + h) * layers_ * dtype_;
  // Two RMSNorms (read, write) and two residual adds (two reads, a write) run on the full hidden
  // state on every GPU of the TP group; rotary embedding on q and k (read, write) and SiLU x mul
  // (two reads, a write) on each GPU's shard.
  elementwise_replicated_bytes_per_token_ = (2 * 2 * h + 2 * 3 * h) * layers_ * dtype_;
  elementwise_sharded_bytes_per_token_ = (2 * (q + kv) + 3 * inter) * layers_ * dtype_;
  attn_flops_per_pair_ = 4.0 * q * layers_;  // QK^T and PV, 2 FLOPs per multiply-add
  // K and V over the whole group: KV heads are replicated when there are fewer than GPUs.
  kv_bytes_per_token_ = double(m.kv_bytes_per_token_per_gpu(tp)) * tp;
  qo_bytes_per_token_ = 2.0 * q * layers_ * dtype_;
  lm_head_bytes_ = double(m.lm_head_params()) * dtype_;
}

double RooflineCostModel::allreduce_seconds(double bytes) const {
  if (tp_ <= 1) return 0;
  const double tp = tp_;
  if (bytes < p_.custom_allreduce_max_bytes) {
    return p_.custom_allreduce_latency_s +
           2.0 * (tp - 1) / tp * bytes /
               (gpu_.interconnect_bytes_per_s() * p_.custom_allreduce_efficiency);
  }
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

RooflineParams h100_params() {
  RooflineParams p = a100_fitted_params();
  // NCCL on H100 NVLink (../shared/profiles-h100 all_reduce.csv, 2 GPUs): 0.028 ms up to 1 MiB,
  // a bus bandwidth of 207 GB/s at 64 MiB, 0.23 of the catalogue's 900 GB/s.
  p.interconnect_efficiency = 0.23;
  p.allreduce_latency_s = 28e-6;
  // vLLM's custom all-reduce below 8 MiB (custom_all_reduce.py max_size): about 9 us per call
  // and a bus bandwidth of 50-57 GB/s on H100 at TP2 and TP4 (published kernel timings, 512 B to
  // 1 MB).
  p.custom_allreduce_max_bytes = 8 * 1024 * 1024;
  p.custom_allreduce_latency_s = 9e-6;
  p.custom_allreduce_efficiency = 0.06;
  // Fitted on vLLM 0.15.1's end-to-end TPOT, E2E and TTFT on H100 SXM (../shared/groundtruth,
  // 9 experiments of 5 dense models at TP1-4; `servesim validate`, README "Validation"):
  p.linear_memory_efficiency = 0.95;      // decode GEMMs under CUDA graphs: weights at 3.2 TB/s
  p.attention_memory_efficiency = 0.466;  // paged decode attention: KV read at 1.6 TB/s
  p.v1_floor_fraction = 0.3625;           // compiled, graph-replayed kernels: a third of eager
  p.v1_step_s = 0.59375e-3;               // per step: input copies, sampler, synchronisation
  p.v1_step_s_per_seq = 0;
  p.v1_cpu_s = 5e-3;  // the engine core's Python per step, hidden behind the GPU when async
  p.v1_cpu_s_per_seq = 175e-6;
  p.frontend_latency_s = 5.625e-3;  // the API server: HTTP, tokenization, IPC, detokenization
  // Fitted on the 4 experiments of Llama-4-Scout FP8 at TP2 in the same file (leave-one-out E2E
  // within 10.4%): vLLM's fused MoE kernels stream FP8 expert weights at 2.6 TB/s, 0.81 of what
  // the dense GEMMs reach.
  p.moe_memory_efficiency = 0.77;
  return p;
}

namespace {
bool hopper_or_later(const GpuSpec& gpu) {
  return gpu.name == "h100-sxm" || gpu.name == "h100-pcie" || gpu.name == "h200-sxm" ||
         gpu.name == "b200";
}
}  // namespace

RooflineParams default_roofline_params(const GpuSpec& gpu, bool v1_engine) {
  if (!hopper_or_later(gpu)) return a100_fitted_params();
  if (v1_engine) return h100_params();
  // The V0 engine keeps the A100 fit; its API server costs what V1's does, so that the engines'
  // client-side latencies compare.
  RooflineParams p = a100_fitted_params();
  p.frontend_latency_s = h100_params().frontend_latency_s;
  return p;
}

std::string default_roofline_source(const GpuSpec& gpu, bool v1_engine) {
  if (gpu.name == "a100-80g") return "fitted on Vidur's A100-80GB profiles";
  if (gpu.name == "a100-40g") return "the A100-80GB fit (same chip), datasheet memory";
  if (v1_engine && gpu.name == "h100-sxm") {
    return "fitted on real vLLM 0.15.1 runs on H100 SXM and the H100 all-reduce profile, over "
           "the A100 operator fit";
  }
  if (v1_engine && hopper_or_later(gpu)) {
    return "the H100 SXM fit's efficiencies and engine costs against this GPU's datasheet peaks";
  }
  if (hopper_or_later(gpu)) {
    return "datasheet only: the A100 fit's efficiencies against this GPU's datasheet peaks, with "
           "the H100 fit's API-server latency";
  }
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
      {"custom_allreduce_max_bytes", &P::custom_allreduce_max_bytes, 0, 1e12, true},
      {"custom_allreduce_latency_s", &P::custom_allreduce_latency_s, 0, 0.1, true},
      {"custom_allreduce_efficiency", &P::custom_allreduce_efficiency, 1e-3, 1, true},
      {"v1_step_s", &P::v1_step_s, 0, 1, true},
      {"v1_step_s_per_seq", &P::v1_step_s_per_seq, 0, 0.1, true},
      {"v1_floor_fraction", &P::v1_floor_fraction, 0, 1, true},
      {"v1_cpu_s", &P::v1_cpu_s, 0, 1, true},
      {"v1_cpu_s_per_seq", &P::v1_cpu_s_per_seq, 0, 0.1, true},
      {"frontend_latency_s", &P::frontend_latency_s, 0, 10, true},
      {"moe_memory_efficiency", &P::moe_memory_efficiency, 0, 1, true},
  };
  return fields;
}

namespace {

// The sums over a batch that the parts of a step need, gathered in one pass.
struct BatchSums {
  double tokens = 0, emitting = 0;
  double prefill_pairs = 0, prefill_kv_tokens = 0, prefill_tokens = 0;
  double decode_pairs = 0, decode_seqs = 0;
};

BatchSums sum_batch(std::span<const SeqShape> batch) {
  BatchSums b;
  for (const SeqShape& s : batch) {
    const double n = s.new_tokens, c = s.context_tokens;
    b.tokens += n;
    b.emitting += s.emits_token ? 1 : 0;
    // Token i of the chunk attends to the c cached tokens and to tokens 0..i of the chunk.
    const double pairs = n * c + n * (n + 1) / 2;
    if (s.prefill) {
      b.prefill_pairs += pairs;
      b.prefill_kv_tokens += c + n;
      b.prefill_tokens += n;
    } else {
      b.decode_pairs += pairs;
      b.decode_seqs += 1;
    }
  }
  return b;
}

struct Efficiency {
  double compute, memory;  // fractions of the peak FLOP/s and HBM bandwidth
};

// The roofline of a TP group. Its member functions are defined in the class so that cost()
// inlines them.
struct Roof {
  double flops_s, bytes_s;  // peak FLOP/s and HBM bytes/s, whole TP group
  double knee_sharpness, inverse_knee;

  // Seconds of one part: the larger of its compute and memory time, or the smooth knee.
  double seconds(double flops, double bytes, Efficiency e) const {
    const double tc = flops / (flops_s * e.compute), tm = bytes / (bytes_s * e.memory);
    if (knee_sharpness <= 0) return std::max(tc, tm);
    const double hi = std::max(tc, tm), lo = std::min(tc, tm);
    if (hi <= 0) return 0.0;
    const double r = lo / hi;  // in [0, 1]: (1 + r^k)^(1/k) is within 0.1% of 1 below 1e-3
    if (r < 1e-3) return hi;
    return hi * std::pow(1.0 + std::pow(r, knee_sharpness), inverse_knee);
  }
};

}  // namespace

// A MoE layer reads an expert's weights only if some token is routed to it: E x (1 - (1 - k/E)^T)
// experts in expectation under uniform routing.
double RooflineCostModel::experts_read(double tokens) const {
  if (model_.num_experts <= 1) return 1.0;
  return model_.num_experts *
         (1.0 - std::pow(1.0 - double(model_.experts_per_token) / model_.num_experts, tokens));
}

// Weights read once per step, activations in and out.
RooflineCostModel::Work RooflineCostModel::linear_work(double tokens) const {
  return {linear_flops_per_token_ * tokens, dense_weight_bytes_ +
                                                experts_read(tokens) * expert_weight_bytes_ +
                                                linear_act_bytes_per_token_ * tokens};
}

double RooflineCostModel::padded_tokens(double tokens) const {
  const double tile = p_.linear_tile_tokens;
  return tile > 0 ? std::ceil(tokens / tile) * tile : tokens;
}

RooflineCostModel::Work RooflineCostModel::attention_work(double pairs, double kv_tokens,
                                                          double new_tokens) const {
  return {attn_flops_per_pair_ * pairs,
          kv_bytes_per_token_ * (kv_tokens + new_tokens) + qo_bytes_per_token_ * new_tokens};
}

// Per GPU: the replicated part whole, the sharded part split.
double RooflineCostModel::elementwise_gpu_bytes(double tokens) const {
  return tokens * (elementwise_replicated_bytes_per_token_ +
                   elementwise_sharded_bytes_per_token_ / double(tp_));
}

double RooflineCostModel::elementwise_seconds(double gpu_bytes) const {
  return std::max(elementwise_floor_s_,
                  gpu_bytes / (gpu_.hbm_bytes_per_s() * p_.elementwise_memory_efficiency));
}

RooflineCostModel::Work RooflineCostModel::lm_head_work(double emitting) const {
  return {2.0 * double(model_.lm_head_params()) * emitting,
          lm_head_bytes_ + emitting * model_.vocab_size * 4.0};  // float32 logits out
}

StepCost RooflineCostModel::cost(std::span<const SeqShape> batch) const {
  const BatchSums b = sum_batch(batch);
  const double tp = tp_;
  const Roof roof{gpu_.peak_flops() * tp, gpu_.hbm_bytes_per_s() * tp, p_.knee_sharpness,
                  inverse_knee_};
  const Efficiency linear_eff{p_.linear_compute_efficiency, p_.linear_memory_efficiency};
  const Efficiency attention_eff{p_.attention_compute_efficiency, p_.attention_memory_efficiency};
  StepCost c;
  // Compute time counts the tokens the tiles process; FLOPs (for MFU) count the real ones.
  const Work linear = linear_work(b.tokens);
  // Expert weights stream at the MoE kernels' efficiency: their bytes count for more time.
  const double expert_bytes = experts_read(b.tokens) * expert_weight_bytes_;
  const double linear_time_bytes = linear.bytes + expert_bytes * (moe_time_factor_ - 1.0);
  c.linear_s = roof.seconds(linear_time_flops_per_token_ * padded_tokens(b.tokens),
                            linear_time_bytes, linear_eff);

  // Attention: the prefill kernel and the decode kernel each read the K and V they attend to and
  // write the new tokens' K and V. Each pays its launch latency on top of its work (measured
  // decode kernels at small batches are latency plus transfer, not the larger of the two).
  const Work prefill = attention_work(b.prefill_pairs, b.prefill_kv_tokens, b.prefill_tokens);
  const Work decode = attention_work(b.decode_pairs, b.decode_pairs, b.tokens - b.prefill_tokens);
  const double floor_attn = attention_floor_s_;
  if (b.prefill_tokens > 0) {
    c.attention_s += floor_attn + roof.seconds(prefill.flops, prefill.bytes, attention_eff);
  }
  if (b.decode_seqs > 0) {
    c.attention_s += floor_attn + roof.seconds(decode.flops, decode.bytes, attention_eff);
  }

  const double elementwise_gpu = elementwise_gpu_bytes(b.tokens);
  const double elementwise_bytes = elementwise_gpu * tp;  // tp copies of the replicated part
  c.elementwise_s = elementwise_seconds(elementwise_gpu);

  Work lm;
  if (b.emitting > 0) {
    lm = lm_head_work(b.emitting);
    c.lm_head_s = roof.seconds(lm.flops, lm.bytes, linear_eff);
  }

  // Ring all-reduce of the hidden states after attention and after the MLP.
  c.allreduce_s = 2.0 * layers_ * allreduce_seconds(b.tokens * model_.hidden_size * dtype_);
  const double seqs = double(batch.size());
  if (v1_engine_) {
    c.cpu_overhead_s = p_.v1_cpu_s + p_.v1_cpu_s_per_seq * seqs;
    c.engine_s = p_.v1_step_s + p_.v1_step_s_per_seq * seqs;
  } else {
    c.cpu_overhead_s = p_.cpu_overhead_s + p_.cpu_overhead_s_per_seq * seqs;
  }

  c.flops = linear.flops + prefill.flops + decode.flops + lm.flops;
  c.bytes = linear.bytes + prefill.bytes + decode.bytes + elementwise_bytes + lm.bytes;
  c.seconds = c.linear_s + c.attention_s + c.elementwise_s + c.lm_head_s + c.allreduce_s +
              c.engine_s + c.cpu_overhead_s;
  return c;
}

}  // namespace servesim
