#include "models/roofline.hpp"

#include <algorithm>
#include <cmath>

#include "models/parallel.hpp"

namespace servesim {

namespace {
// NCCL between nodes: NCCL's rings leave each node through its GPUs' NICs (one channel a NIC), at
// what an NDR NIC carries in a two-node ring (nccl-tests issue 290, NVIDIA: 46-48 of 50 GB/s);
// each call pays an inter-node latency (nccl-tests issue 150: 19-20 us for 8 bytes between two
// nodes over InfiniBand).
constexpr double kNicBusEfficiency = 0.94, kInterNodeLatencyS = 20e-6;
}  // namespace

RooflineCostModel::RooflineCostModel(const GpuSpec& gpu, const ModelSpec& m, int tp,
                                     const HardwareParams& hw, const EngineParams& engine, int pp,
                                     int ep_dp, double expert_skew)
    : gpu_(gpu),
      model_(m),
      tp_(tp),
      hw_(hw),
      engine_(engine),
      stage_layers_(pp > 1 ? pp_layer_partition(m.num_layers, pp)
                           : std::vector<int>{m.num_layers}) {
  inverse_knee_ = hw_.knee_sharpness > 0 ? 1.0 / hw_.knee_sharpness : 0;
  // FP8 experts run through another fused-MoE kernel than BF16 ones: each has its efficiency.
  const double moe_eff =
      m.mlp_weight_bytes == 1 ? hw_.moe_fp8_memory_efficiency : hw_.moe_memory_efficiency;
  moe_time_factor_ =
      m.num_experts > 1 && moe_eff > 0 ? hw_.linear_memory_efficiency / moe_eff : 1.0;
  elementwise_floor_s_ = hw_.elementwise_floor_s_per_layer * m.num_layers;
  attention_floor_s_ = hw_.attention_floor_s_per_layer * m.num_layers;
  decode_attention_latency_s_ = hw_.attention_decode_latency_s_per_layer * m.num_layers;
  linear_floor_s_ = hw_.linear_latency_s_per_layer * m.num_layers;
  graph_linear_floor_s_ = linear_floor_s_ * engine_.floor_fraction;
  graph_elementwise_floor_s_ = elementwise_floor_s_ * engine_.floor_fraction;
  graph_attention_floor_s_ = attention_floor_s_ * engine_.floor_fraction;
  layers_ = m.num_layers;
  dtype_ = m.dtype_bytes;
  if (m.sliding()) {
    sliding_share_ = double(m.sliding_layers) / m.num_layers;
    window_ = m.sliding_window;
  }
  const double h = m.hidden_size, heads = m.num_heads;
  // The MLP widths a token passes through, summed over the layers (a MoE layer's top-k experts
  // and shared expert; a dense layer's MLP).
  const double moe_width =
      double(m.intermediate_size) * m.experts_per_token + m.shared_expert_intermediate_size;
  const double inter_sum =
      (layers_ - m.dense_layers) * moe_width + double(m.dense_layers) * m.dense_intermediate_size;
  linear_flops_per_token_ = 2.0 * double(m.active_linear_params());
  // FP8 GEMMs run at the FP8 peak, NVFP4 ones at the FP4 peak: their FLOPs count for bf16 / fp8
  // (fp4) of a BF16 FLOP in time. (MXFP4 experts run at the BF16 rate: weight-only kernels.)
  const double fp8_time = gpu.peak_flops() / gpu.fp8_peak_flops();
  const double fp4_time = gpu.peak_flops() / gpu.fp4_peak_flops();
  const auto gemm_time = [&](double weight_bytes) {
    return weight_bytes == 1 ? fp8_time : weight_bytes == kNvfp4WeightBytes ? fp4_time : 1.0;
  };
  // Per layer (averages over the layers where dense and MoE layers mix).
  const double router = double(m.router_params()) / layers_;
  // Attention's projections, the linear-attention layers' included, as an average layer's.
  const double attention = double(m.mixer_params()) / layers_,
               mlp = double(m.active_mlp_params()) / layers_;
  linear_time_flops_per_token_ = 2.0 * layers_ *
                                 (attention * gemm_time(m.attention_weight_bytes) +
                                  mlp * gemm_time(m.mlp_weight_bytes) + router);
  dense_weight_bytes_ = attention * m.attention_weight_bytes * layers_ +
                        double(m.router_params()) * dtype_ +
                        (double(m.shared_expert_params()) * (layers_ - m.dense_layers) +
                         double(m.dense_mlp_params()) * m.dense_layers) *
                            m.mlp_weight_bytes;
  // MLA's down projections are whole on every GPU of the group (ReplicatedLinear): each of the
  // tp GPUs reads them and multiplies every token by them, tp - 1 copies beyond the split work
  // (0 without MLA).
  const double replicated = double(m.replicated_attention_params_per_layer()) * layers_ * (tp - 1);
  if (replicated > 0) {
    dense_weight_bytes_ += replicated * m.attention_weight_bytes;
    linear_time_flops_per_token_ += 2.0 * replicated * gemm_time(m.attention_weight_bytes);
  }
  // A dense model's MLP counts as its one expert, in every layer.
  const double expert_layers = m.num_experts > 1 ? m.moe_layers() : layers_;
  expert_weight_bytes_ = m.expert_bytes() * expert_layers;
  // Each GEMM's input and output: gate/up in and out, down in and out; then attention's.
  const double mlp_io = 2 * h * layers_ + 3 * inter_sum;
  double attention_io = 0, rope_width = 0;
  if (m.mla()) {
    // q_a (or q_proj), q_b, kv_a, kv_b, o: each one's input and output.
    const double qk = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim);
    const double q_io = m.q_lora_rank > 0 ? h + 2.0 * m.q_lora_rank + qk : h + qk;
    attention_io = q_io + h + (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank +
                   heads * (m.qk_nope_head_dim + m.v_head_dim) + heads * m.v_head_dim + h;
    rope_width = heads * m.qk_rope_head_dim + m.qk_rope_head_dim;
  } else {
    const double q = heads * m.head_dim, kv = double(m.num_kv_heads) * m.head_dim;
    // q/k/v in and out (with the output gate, q twice), o in and out.
    attention_io = h + (q * (m.attn_output_gate ? 2 : 1) + 2 * kv) + q + h;
    rope_width = (q + kv) * m.partial_rotary_factor;
  }
  // The layers with (full or sliding-window) attention; a hybrid model's others are linear.
  const double full_layers = m.full_attention_layers(), linear_layers = m.linear_attention_layers();
  double mixer_io = attention_io * full_layers;
  if (m.hybrid()) {
    // Gated DeltaNet: in_proj_qkvz and in_proj_ba in and out, out_proj in and out.
    const double key = double(m.linear_num_key_heads) * m.linear_key_head_dim;
    const double value = double(m.linear_num_value_heads) * m.linear_value_head_dim;
    const double nv = m.linear_num_value_heads, dk = m.linear_key_head_dim,
                 dv = m.linear_value_head_dim;
    mixer_io += (h + 2 * key + 2 * value + 2 * nv + value + h) * linear_layers;
    recurrent_state_bytes_ = 2.0 * double(m.linear_state_bytes_per_layer(1)) * linear_layers;
    // A token: the causal convolution over q, k and v; the state's decay and delta-rule update
    // (about 4 x dk x dv a value head) and its read-out by q (2 x dk x dv). A prefill's chunked
    // form (FLA's chunk_gated_delta_rule, chunks of 64) adds q.k and p.v within the chunk.
    const double conv = 2.0 * (2 * key + value) * m.linear_conv_kernel_dim;
    recurrent_flops_per_token_ = (conv + 6.0 * nv * dk * dv) * linear_layers;
    recurrent_prefill_flops_per_token_ =
        recurrent_flops_per_token_ + 2.0 * 64 * nv * (dk + dv) * linear_layers;
  }
  linear_act_bytes_per_token_ = (mixer_io + mlp_io) * dtype_;
  // Two RMSNorms (read, write) and two residual adds (two reads, a write) run on the full hidden
  // state on every GPU of the TP group (and MLA's two latent norms); rotary embedding on q and k
  // (read, write) and SiLU x mul (two reads, a write) on each GPU's shard.
  elementwise_replicated_bytes_per_token_ =
      (2 * 2 * h + 2 * 3 * h + 2.0 * double(m.latent_norm_params_per_layer())) * layers_ * dtype_;
  elementwise_sharded_bytes_per_token_ = (2 * rope_width * full_layers + 3 * inter_sum) * dtype_;
  if (m.mla()) {
    // vLLM's MLA (v0.15 mla/common.py): a prefill up-projects the latents (kv_b_proj) and
    // attends with heads of qk_nope + qk_rope for q.k and v_head_dim for p.v, the cached context
    // up-projected the same way, chunk by chunk; a decode absorbs kv_b_proj into q and o and
    // attends in the latent: q.k over kv_lora_rank + qk_rope, p.v over kv_lora_rank, every head.
    attn_flops_per_pair_ =
        2.0 * heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * layers_;
    decode_attn_flops_per_pair_ =
        2.0 * heads * (2.0 * m.kv_lora_rank + m.qk_rope_head_dim) * layers_;
    context_flops_per_token_ =
        2.0 * m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim) * layers_;
    qo_bytes_per_token_ =
        heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * layers_ * dtype_;
    // The absorbed decode's q is in the latent (kv_lora + qk_rope a head), its o too (kv_lora).
    decode_qo_bytes_per_token_ =
        heads * (2.0 * m.kv_lora_rank + m.qk_rope_head_dim) * layers_ * dtype_;
  } else {
    const double q = heads * m.head_dim;
    attn_flops_per_pair_ = 4.0 * q * full_layers;  // QK^T and PV, 2 FLOPs per multiply-add
    decode_attn_flops_per_pair_ = attn_flops_per_pair_;
    qo_bytes_per_token_ = 2.0 * q * full_layers * dtype_;
    decode_qo_bytes_per_token_ = qo_bytes_per_token_;
  }
  // K and V over the whole group: KV heads are replicated when there are fewer than GPUs (MLA's
  // latent is whole on every GPU).
  kv_bytes_per_token_ = double(m.kv_bytes_per_token_per_gpu(tp)) * tp;
  lm_head_bytes_ = double(m.lm_head_params()) * dtype_;
  if (ep_dp > 0 && m.num_experts > 1 && tp * ep_dp > 1) {
    ep_dp_ = ep_dp;
    ep_gpus_ = tp * ep_dp;
    const double moe_layers = m.moe_layers();
    pair_flops_ = 2.0 * double(m.expert_params()) * moe_layers;
    pair_time_flops_ = pair_flops_ * gemm_time(m.mlp_weight_bytes);
    // gate/up in (h) and out (2 x inter), down in (inter) and out (h), as mlp_io counts them.
    pair_act_bytes_ = (2.0 * h + 3.0 * m.intermediate_size) * moe_layers * dtype_;
    pair_inner_act_bytes_ = 3.0 * m.intermediate_size * moe_layers * dtype_;
    ep_local_ = local_experts(m.num_experts, ep_gpus_);
    // Skewed routing, or experts that do not divide over the GPUs: the busiest GPU's share of
    // the pairs (uniform routing over an even split keeps the mean, 1 / EP, as before).
    if (expert_skew > 0 || m.num_experts % ep_gpus_ != 0) {
      busiest_share_ = ep_busiest_share(m.num_experts, ep_gpus_, expert_skew);
    }
    two_log_ep_ = 2.0 * std::log(double(ep_gpus_));
    log_miss_ = std::log1p(-double(m.experts_per_token) / m.num_experts);
    // The DP group of each TP rank: NVLink inside a node, the NICs when the ranks span nodes.
    const bool nodes = ep_gpus_ > gpu.gpus_per_node;
    a2a_bus_ = nodes ? nic_bus_bytes_per_s() : nvlink_bus_bytes_per_s();
    a2a_latency_s_ = nodes ? kInterNodeLatencyS : hw_.allreduce_latency_s;
  }
  for (size_t s = 0; s + 1 < stage_layers_.size(); ++s) {
    const bool leaves = pp_send_crosses_node(int(s), tp, gpu.gpus_per_node);
    send_latency_s_.push_back(leaves ? kInterNodeLatencyS : hw_.allreduce_latency_s);
    send_bytes_per_s_.push_back(leaves ? nic_bus_bytes_per_s() : nvlink_bus_bytes_per_s());
  }
}

double RooflineCostModel::nic_bus_bytes_per_s() const {
  return gpu_.network_gb_per_s * 1e9 * kNicBusEfficiency;
}

double RooflineCostModel::nvlink_bus_bytes_per_s() const {
  return gpu_.interconnect_bytes_per_s() * hw_.interconnect_efficiency;
}

double RooflineCostModel::nccl_ring_seconds(double bytes, double passes) const {
  const double tp = tp_;
  const int per_node = gpu_.gpus_per_node;
  if (tp_ > per_node) {
    // A TP group across nodes: the group's bus bandwidth is the NICs of its emptiest node, never
    // above the NVLink ring's.
    const int nodes = (tp_ + per_node - 1) / per_node;
    const int emptiest = tp_ - (nodes - 1) * per_node;
    const double bus = std::min(emptiest * gpu_.network_gb_per_s * 1e9 * kNicBusEfficiency,
                                gpu_.interconnect_bytes_per_s() * hw_.interconnect_efficiency);
    return kInterNodeLatencyS + passes * (tp - 1) / tp * bytes / bus;
  }
  const double latency = hw_.allreduce_switch_bytes > 0 && bytes > hw_.allreduce_switch_bytes
                             ? hw_.allreduce_large_latency_s
                             : hw_.allreduce_latency_s;
  return latency + passes * (tp - 1) / tp * bytes /
                       (gpu_.interconnect_bytes_per_s() * hw_.interconnect_efficiency);
}

double RooflineCostModel::allreduce_seconds(double bytes) const {
  if (tp_ <= 1) return 0;
  // A TP group across nodes is NCCL's only (vLLM's custom all-reduce is disabled when a group
  // spans nodes, custom_all_reduce.py).
  if (tp_ <= gpu_.gpus_per_node && bytes < hw_.custom_allreduce_max_bytes) {
    const double tp = tp_;
    return hw_.custom_allreduce_latency_s +
           2.0 * (tp - 1) / tp * bytes /
               (gpu_.interconnect_bytes_per_s() * hw_.custom_allreduce_efficiency);
  }
  return nccl_ring_seconds(bytes, 2.0);
}

double RooflineCostModel::all_to_all_bytes(double tokens) const {
  if (ep_dp_ <= 1) return 0;
  // AgRsAll2AllManager: all_gatherv of the hidden states and router logits over the DP group,
  // then reduce_scatterv of the experts' outputs; a ring moves (D - 1) / D of each.
  const double d = ep_dp_;
  const double h = model_.hidden_size, e = model_.num_experts;
  return (d - 1) / d * tokens * ((h + e) + h) * dtype_;
}

double RooflineCostModel::all_to_all_seconds(double tokens) const {
  if (ep_dp_ <= 1) return 0;
  return 2.0 * a2a_latency_s_ + all_to_all_bytes(tokens) / a2a_bus_;
}

double RooflineCostModel::pipeline_send_seconds(int stage, double bytes) const {
  const double send =
      send_latency_s_[size_t(stage)] + bytes / tp_ / send_bytes_per_s_[size_t(stage)];
  return send + (tp_ > 1 ? nccl_ring_seconds(bytes, 1.0) : 0.0);
}

void RooflineCostModel::pipeline_seconds(const StepCost& c, const BatchTotals& totals,
                                         std::span<double> out) const {
  const int stages = pipeline_stages();
  const double layer_s =
      c.linear_s + c.attention_s + c.elementwise_s + c.allreduce_s + c.all_to_all_s;
  const double tokens = double(totals.tokens[0] + totals.tokens[1]);
  const double send_bytes = 2.0 * tokens * model_.hidden_size * dtype_;
  for (int s = 0; s < stages; ++s) {
    out[size_t(2 * s)] = layer_s * stage_layers_[size_t(s)] / layers_ + c.engine_s +
                         (s == stages - 1 ? c.lm_head_s : 0.0);
    if (s + 1 < stages) out[size_t(2 * s + 1)] = pipeline_send_seconds(s, send_bytes);
  }
}

namespace {

// A batch's totals as the parts of a step use them (exact: integers below 2^53).
struct BatchSums {
  explicit BatchSums(const BatchTotals& t)
      : tokens(double(t.tokens[0] + t.tokens[1])),
        emitting(double(t.emitting)),
        prefill_pairs(double(t.pairs[1])),
        prefill_kv_tokens(double(t.kv_tokens[1])),
        prefill_tokens(double(t.tokens[1])),
        decode_pairs(double(t.pairs[0])),
        decode_kv_tokens(double(t.kv_tokens[0])),
        decode_seqs(double(t.seqs[0])),
        seqs(double(t.seqs[0] + t.seqs[1])),
        max_context(t.max_context) {}
  double tokens, emitting;
  double prefill_pairs, prefill_kv_tokens, prefill_tokens;
  double decode_pairs, decode_kv_tokens, decode_seqs;
  double seqs;
  int32_t max_context;
};

// A sliding-window layer's attention: token p of a chunk attends to the last WINDOW positions up
// to its own, min(p + 1, window) keys, and the kernel reads the KV of the window before the chunk
// and the chunk's own. The sums, blended with the full layers' by the sliding layers' SHARE,
// replace the batch's (the per-pair and per-token work is the same in both kinds of layer).
void apply_window(std::span<const SeqShape> batch, int64_t window, double share, BatchSums& b) {
  double pairs[2] = {0, 0}, kv[2] = {0, 0};
  for (const SeqShape& s : batch) {
    const int64_t n = s.new_tokens, c = s.context_tokens, first = c + 1, last = c + n;
    int64_t p = 0;
    if (last <= window) {
      p = (first + last) * n / 2;
    } else if (first >= window) {
      p = n * window;
    } else {
      p = (first + window) * (window - first + 1) / 2 + (last - window) * window;
    }
    pairs[s.prefill ? 1 : 0] += double(p);
    kv[s.prefill ? 1 : 0] += double(std::min(c, window - 1) + n);
  }
  auto blend = [&](double& full, double sliding) { full += share * (sliding - full); };
  blend(b.decode_pairs, pairs[0]);
  blend(b.prefill_pairs, pairs[1]);
  blend(b.decode_kv_tokens, kv[0]);
  blend(b.prefill_kv_tokens, kv[1]);
}

struct Efficiency {
  double compute, memory;  // fractions of the peak FLOP/s and HBM bandwidth
};

// The knee factor (1 + r^k)^(1/k) of one part of the step, remembered for the last (r, k): a
// part whose shape did not change since the last step (the linear layers and the LM head of a
// decode batch that neither grew nor shrank) costs no pow() (two of them took a third of a
// low-load run). Per thread, so a cost model stays safe to share; exact, so results are too.
struct KneeMemo {
  double r = -1, k = 0, factor = 1;
  double of(double ratio, double sharpness, double inverse) {
    if (ratio != r || sharpness != k) {
      r = ratio;
      k = sharpness;
      factor = std::pow(1.0 + std::pow(ratio, sharpness), inverse);
    }
    return factor;
  }
};
enum Part { kLinearPart, kPrefillPart, kDecodePart, kLmHeadPart, kExpertPart, kNumParts };
thread_local KneeMemo knee_memo[kNumParts];

// The roofline of a TP group. Its member functions are defined in the class so that cost()
// inlines them.
struct Roof {
  double flops_s, bytes_s;  // peak FLOP/s and HBM bytes/s, whole TP group
  double knee_sharpness, inverse_knee;

  // Seconds of PART: the larger of its compute and memory time, or the smooth knee.
  double seconds(double flops, double bytes, Efficiency e, Part part) const {
    const double tc = flops / (flops_s * e.compute), tm = bytes / (bytes_s * e.memory);
    if (knee_sharpness <= 0) return std::max(tc, tm);
    const double hi = std::max(tc, tm), lo = std::min(tc, tm);
    if (hi <= 0) return 0.0;
    const double r = lo / hi;  // in [0, 1]: (1 + r^k)^(1/k) is within 0.1% of 1 below 1e-3
    if (r < 1e-3) return hi;
    return hi * knee_memo[part].of(r, knee_sharpness, inverse_knee);
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
  const double tile = hw_.linear_tile_tokens;
  return tile > 0 ? std::ceil(tokens / tile) * tile : tokens;
}

RooflineCostModel::Work RooflineCostModel::attention_work(double pairs, double kv_tokens,
                                                          double new_tokens, bool decode) const {
  const double flops =
      decode ? decode_attn_flops_per_pair_ * pairs
             : attn_flops_per_pair_ * pairs + context_flops_per_token_ * (kv_tokens - new_tokens);
  const double qo = decode ? decode_qo_bytes_per_token_ : qo_bytes_per_token_;
  return {flops, kv_bytes_per_token_ * (kv_tokens + new_tokens) + qo * new_tokens};
}

// Per GPU: the replicated part whole, the sharded part split.
double RooflineCostModel::elementwise_gpu_bytes(double tokens) const {
  return tokens * (elementwise_replicated_bytes_per_token_ +
                   elementwise_sharded_bytes_per_token_ / double(tp_));
}

double RooflineCostModel::elementwise_seconds(double gpu_bytes, bool graph) const {
  return std::max(graph ? graph_elementwise_floor_s_ : elementwise_floor_s_,
                  gpu_bytes / (gpu_.hbm_bytes_per_s() * hw_.elementwise_memory_efficiency));
}

RooflineCostModel::Work RooflineCostModel::lm_head_work(double emitting) const {
  return {2.0 * double(model_.lm_head_params()) * emitting,
          lm_head_bytes_ + emitting * model_.vocab_size * 4.0};  // float32 logits out
}

StepCost RooflineCostModel::cost(std::span<const SeqShape> batch) const {
  return cost(batch, BatchTotals::of(batch));
}

StepCost RooflineCostModel::cost(std::span<const SeqShape> batch, const BatchTotals& totals) const {
  BatchSums b(totals);
  // Sliding-window layers attend to less: summed from the shapes (the calibration's fits pass
  // totals alone, and have none).
  if (window_ > 0 && !batch.empty()) apply_window(batch, window_, sliding_share_, b);
  const double tp = tp_;
  const Roof roof{gpu_.peak_flops() * tp, gpu_.hbm_bytes_per_s() * tp, hw_.knee_sharpness,
                  inverse_knee_};
  const Efficiency linear_eff{hw_.linear_compute_efficiency, hw_.linear_memory_efficiency};
  const Efficiency attention_eff{hw_.attention_compute_efficiency, hw_.attention_memory_efficiency};
  // V1 replays every step as a (piecewise) CUDA graph; V0 its decode-only steps.
  const bool graph = graphs_every_step(engine_.engine) ||
                     (b.prefill_tokens == 0 && b.max_context <= kV0MaxSeqLenToCapture);
  StepCost c;
  // Compute time counts the tokens the tiles process; FLOPs (for MFU) count the real ones.
  Work linear;
  double linear_bf16_flops = 0;
  if (ep_dp_ > 0) {
    // Expert parallelism: the TP group runs the linear layers but the routed experts, as above;
    // each GPU runs its own whole experts on the (token, expert) pairs routed to them from every
    // rank, the ranks taken to carry batches of this one's tokens (vLLM's load balancer keeps
    // them even; the lockstep wait for a slower rank is not modelled), and the MoE layer waits
    // for the busiest GPU (uniform routing: ep_imbalance).
    const double k = model_.experts_per_token;
    const double all_tokens = b.tokens * ep_dp_;
    const double mean_pairs = all_tokens * k / ep_gpus_;
    // Skewed routing or an uneven split: the busiest GPU's expected share of the pairs, with the
    // spread of the largest of EP counts on top (an upper bound at small batches).
    const double busiest_mean = busiest_share_ > 0 ? all_tokens * k * busiest_share_ : mean_pairs;
    const double pairs = std::min(busiest_mean * ep_imbalance(busiest_mean, ep_gpus_, two_log_ep_),
                                  all_tokens * std::min(k, double(ep_local_)));
    // Experts some token reaches, E x (1 - (1 - k/E)^T) in expectation, as experts_read.
    const double hit = 1.0 - std::exp(all_tokens * log_miss_);
    const double expert_weights = ep_local_ * hit * expert_weight_bytes_;
    const double dense_flops = linear_flops_per_token_ - k * pair_flops_;
    const double dense_time_flops = linear_time_flops_per_token_ - k * pair_time_flops_;
    // The TP group's GEMMs in and out, less the routed experts' MLP widths (the hidden state in
    // and out stays: the shared expert and the MoE layer's own input and output).
    const double dense_bytes =
        dense_weight_bytes_ + (linear_act_bytes_per_token_ - k * pair_inner_act_bytes_) * b.tokens;
    const Roof one{gpu_.peak_flops(), gpu_.hbm_bytes_per_s(), hw_.knee_sharpness, inverse_knee_};
    c.linear_s = (graph ? graph_linear_floor_s_ : linear_floor_s_) +
                 roof.seconds(dense_time_flops * padded_tokens(b.tokens), dense_bytes, linear_eff,
                              kLinearPart) +
                 one.seconds(pair_time_flops_ * pairs,
                             expert_weights * moe_time_factor_ + pair_act_bytes_ * pairs,
                             linear_eff, kExpertPart);
    // This rank's share: its tokens' FLOPs, and what its TP group's GPUs read on an average
    // GPU (its own tokens' pairs in all).
    linear = {dense_flops * b.tokens + k * pair_flops_ * b.tokens,
              dense_bytes + tp * (expert_weights + pair_act_bytes_ * mean_pairs)};
    linear_bf16_flops = (dense_time_flops + k * pair_time_flops_) * b.tokens;
  } else {
    linear = linear_work(b.tokens);
    linear_bf16_flops = linear_time_flops_per_token_ * b.tokens;
    // Expert weights stream at the MoE kernels' efficiency: their bytes count for more time.
    const double expert_bytes = experts_read(b.tokens) * expert_weight_bytes_;
    const double linear_time_bytes = linear.bytes + expert_bytes * (moe_time_factor_ - 1.0);
    c.linear_s = (graph ? graph_linear_floor_s_ : linear_floor_s_) +
                 roof.seconds(linear_time_flops_per_token_ * padded_tokens(b.tokens),
                              linear_time_bytes, linear_eff, kLinearPart);
  }

  // Attention: the prefill kernel and the decode kernel each read the K and V they attend to and
  // write the new tokens' K and V. Each pays its launch latency on top of its work (measured
  // decode kernels at small batches are latency plus transfer, not the larger of the two).
  Work prefill =
      attention_work(b.prefill_pairs, b.prefill_kv_tokens, b.prefill_tokens, /*decode=*/false);
  Work decode = attention_work(b.decode_pairs, b.decode_kv_tokens, b.tokens - b.prefill_tokens,
                               /*decode=*/true);
  if (recurrent_state_bytes_ > 0) {
    // Linear-attention layers: each sequence's state in and out, the recurrence a token.
    prefill.flops += recurrent_prefill_flops_per_token_ * b.prefill_tokens;
    prefill.bytes += recurrent_state_bytes_ * (b.seqs - b.decode_seqs);
    decode.flops += recurrent_flops_per_token_ * (b.tokens - b.prefill_tokens);
    decode.bytes += recurrent_state_bytes_ * b.decode_seqs;
  }
  const double floor_attn = graph ? graph_attention_floor_s_ : attention_floor_s_;
  if (b.prefill_tokens > 0) {
    c.attention_s +=
        floor_attn + roof.seconds(prefill.flops, prefill.bytes, attention_eff, kPrefillPart);
  }
  if (b.decode_seqs > 0) {
    c.attention_s += floor_attn + decode_attention_latency_s_ +
                     roof.seconds(decode.flops, decode.bytes, attention_eff, kDecodePart);
  }

  const double elementwise_gpu = elementwise_gpu_bytes(b.tokens);
  const double elementwise_bytes = elementwise_gpu * tp;  // tp copies of the replicated part
  c.elementwise_s = elementwise_seconds(elementwise_gpu, graph);

  Work lm;
  if (b.emitting > 0) {
    lm = lm_head_work(b.emitting);
    c.lm_head_s = roof.seconds(lm.flops, lm.bytes, linear_eff, kLmHeadPart);
  }

  // Ring all-reduce of the hidden states after attention and after the MLP.
  c.allreduce_s = 2.0 * layers_ * allreduce_seconds(b.tokens * model_.hidden_size * dtype_);
  const double seqs = b.seqs;
  c.cpu_overhead_s = engine_.cpu_s + engine_.cpu_s_per_seq * seqs;
  c.engine_s = engine_.step_s + engine_.step_s_per_seq * seqs;

  c.flops = linear.flops + prefill.flops + decode.flops + lm.flops;
  c.bf16_flops = linear_bf16_flops + prefill.flops + decode.flops + lm.flops;
  c.bytes = linear.bytes + prefill.bytes + decode.bytes + elementwise_bytes + lm.bytes;
  c.seconds = c.linear_s + c.attention_s + c.elementwise_s + c.lm_head_s + c.allreduce_s +
              c.engine_s + c.cpu_overhead_s;
  if (ep_dp_ > 1) {
    c.all_to_all_s = model_.moe_layers() * all_to_all_seconds(b.tokens * ep_dp_);
    c.seconds += c.all_to_all_s;
  }
  return c;
}

}  // namespace servesim
