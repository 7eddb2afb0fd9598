// RooflineCostModel: an analytic step-time model. A step is the sum of parts that run one after
// the other; each part takes the larger of its compute time, FLOPs / (peak x compute efficiency),
// and its memory time, bytes / (HBM bandwidth x memory efficiency), never less than its
// per-layer kernel floor. "The larger" is max(), or with knee_sharpness p > 0 the smooth
// (t_c^p + t_m^p)^(1/p), which measured kernels follow near the ridge point:
//  - linear: the GEMMs (2 x active linear params x tokens FLOPs; weights read once per step,
//    MoE experts only if some token is routed to them, plus activations in and out; FP8 weights
//    are read at one byte and, on GPUs with FP8 tensor cores, multiplied at the FP8 peak; NVFP4
//    weights at 4.5 bits, multiplied at the FP4 peak where there are FP4 tensor cores);
//  - attention: prefill chunks (quadratic in the chunk, linear in cached context) and decodes
//    (linear in context, KV bytes read at the KV cache's dtype) as two kernels;
//  - elementwise: RMSNorms, rotary embedding, SiLU x mul, residual adds (memory-bound);
//  - lm_head: logits for the sequences that emit a token this step;
//  - allreduce: two per layer under tensor parallelism, ring formula plus a per-call latency (a
//    group larger than the GPU's node: over the nodes' NICs, with an inter-node latency);
//  - cpu_overhead: the engine's per-step CPU work (schedule, prepare inputs, process outputs);
//  - engine: the engine's GPU-side work around the model (input copies, the sampler).
// Each kernel's floor shrinks to the engine's floor_fraction in a step replayed as a CUDA graph
// (V0: decode-only steps; V1: every step). Work is split evenly over the TP group. A pipeline's
// stages split the per-layer parts by their layers (pipeline_seconds). Not counted: embedding
// lookup, the LM head's gather, overlap between parts.
#pragma once

#include <vector>

#include "models/cost_model.hpp"
#include "models/engine.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"
#include "models/model.hpp"

namespace servesim {

// What one roofline runs on: the hardware's parameters (per GPU architecture) and the engine's
// (per vLLM engine). A scheduling policy never chooses either (ARCHITECTURE.md, models/).
// The defaults are the uncalibrated baseline (HardwareParams' own defaults, and the V0 engine,
// eager, with its CPU line read off Vidur's cpu_overheads.csv: the sum of the medians of schedule,
// sampler, prepare_inputs and process_model_outputs per iteration, least-squares in batch size
// 8-128, 0.806 ms + 0.0375 ms per sequence, max residual 6%): what calibrate fits from.
struct RooflineParams {
  HardwareParams hw;
  EngineParams engine{Engine::kV0, 0.806e-3, 0.0375e-3, 0, 0, 1};
};

// vLLM V0 replays decode-only steps as CUDA graphs up to max_seq_len_to_capture tokens of
// context (vllm/config.py, v0.6-v0.8); longer ones run eager.
inline constexpr int32_t kV0MaxSeqLenToCapture = 8192;

class RooflineCostModel final : public CostModel {
 public:
  // PP > 1: pipeline stages of TP GPUs each (models/parallel.hpp); cost() is the whole model's.
  // EP_DP > 0: expert parallelism over the TP GPUs of each of EP_DP data-parallel ranks, this
  // replica one of them (a MoE model; one GPU in all runs as without it); EXPERT_SKEW > 0: the
  // routing's Zipf skew (models/parallel.hpp ep_busiest_share), which loads the busiest GPU.
  RooflineCostModel(const GpuSpec& gpu, const ModelSpec& model, int tp,
                    const HardwareParams& hw = {}, const EngineParams& engine = {}, int pp = 1,
                    int ep_dp = 0, double expert_skew = 0);
  RooflineCostModel(const GpuSpec& gpu, const ModelSpec& model, int tp, const RooflineParams& p)
      : RooflineCostModel(gpu, model, tp, p.hw, p.engine) {}
  StepCost cost(std::span<const SeqShape> batch) const override;
  // Reads TOTALS only.
  StepCost cost(std::span<const SeqShape> batch, const BatchTotals& totals) const override;
  std::string name() const override { return "roofline"; }
  const HardwareParams& hardware() const { return hw_; }
  const EngineParams& engine() const { return engine_; }
  // One ring all-reduce of BYTES over this model's TP group, seconds (0 without TP).
  double allreduce_seconds(double bytes) const;
  int pipeline_stages() const override { return int(stage_layers_.size()); }
  // Each stage runs its layers' share of the step's per-layer parts (linear, attention,
  // element-wise, all-reduce: exact when the layers are alike, as every part scales with them; a
  // MoE model's dense layers are spread evenly, not placed on their stages), and the engine's
  // GPU-side work (each worker copies its inputs; taken to cost the same on every stage, not
  // measured); the last also the LM head. A send is one NCCL point-to-point of 1/TP of the
  // hidden states and residual from each GPU to its peer (over NVLink, or the NICs when it
  // leaves a node), then an all-gather across the receiving TP group.
  void pipeline_seconds(const StepCost& cost, const BatchTotals& totals,
                        std::span<double> out) const override;
  // One send from stage STAGE to the next of BYTES (the whole hidden states and residual).
  double pipeline_send_seconds(int stage, double bytes) const;
  // Expert parallelism: one MoE layer's dispatch and combine between the data-parallel ranks for
  // TOKENS tokens in all, seconds (0 with one rank), and the bytes each GPU receives in them.
  double all_to_all_seconds(double tokens) const;
  double all_to_all_bytes(double tokens) const;

 private:
  // FLOPs and HBM bytes of one part of a step, all GPUs.
  struct Work {
    double flops = 0, bytes = 0;
  };

  // Experts a MoE layer reads for TOKENS tokens (1 for a dense model).
  double experts_read(double tokens) const;
  Work linear_work(double tokens) const;
  double padded_tokens(double tokens) const;  // to whole GEMM tiles
  // One attention kernel: PAIRS (query, key) pairs; reads the K and V of KV_TOKENS tokens,
  // writes NEW_TOKENS tokens' K and V, reads their Q and writes their O.
  // DECODE: the decode kernel (MLA attends in the latent there).
  Work attention_work(double pairs, double kv_tokens, double new_tokens, bool decode) const;
  double elementwise_gpu_bytes(double tokens) const;  // on each GPU
  double elementwise_seconds(double gpu_bytes, bool graph) const;
  // NCCL's ring over the TP group moving PASSES x (tp - 1) / tp x BYTES per GPU (2: all-reduce,
  // 1: all-gather), with its latency.
  double nccl_ring_seconds(double bytes, double passes) const;
  // What one GPU's NCCL traffic reaches over its NIC to another node, and over NVLink.
  double nic_bus_bytes_per_s() const;
  double nvlink_bus_bytes_per_s() const;
  Work lm_head_work(double emitting) const;

  GpuSpec gpu_;
  ModelSpec model_;
  int tp_;
  HardwareParams hw_;
  EngineParams engine_;
  // All layers' kernel floors, eager and replayed as a CUDA graph.
  double elementwise_floor_s_ = 0, attention_floor_s_ = 0, linear_floor_s_ = 0;
  double graph_elementwise_floor_s_ = 0, graph_attention_floor_s_ = 0, graph_linear_floor_s_ = 0;
  double decode_attention_latency_s_ = 0;  // all layers, in every step with a decode
  double inverse_knee_ = 0;                // 1 / knee_sharpness
  double moe_time_factor_ = 1;             // linear / MoE memory efficiency: an expert byte's time
  // Per-model constants, precomputed once.
  double layers_;
  double dtype_;
  // Sliding-window layers (ModelSpec::sliding_window): their share of the layers and the window.
  double sliding_share_ = 0;
  int64_t window_ = 0;
  // Linear-attention layers (a hybrid model), all of them, the whole TP group: a sequence's state
  // read and written once a step, and the recurrence's FLOPs a token, decoding and prefilling
  // (the chunked form adds the intra-chunk products). 0 without.
  double recurrent_state_bytes_ = 0;
  double recurrent_flops_per_token_ = 0, recurrent_prefill_flops_per_token_ = 0;
  double linear_flops_per_token_;                  // all layers
  double linear_time_flops_per_token_;             // the same, FP8 GEMMs' scaled to BF16 time
  double dense_weight_bytes_;                      // attention + router weights, all layers
  double expert_weight_bytes_;                     // one expert, all layers
  double linear_act_bytes_per_token_;              // GEMM inputs and outputs, all layers
  double elementwise_replicated_bytes_per_token_;  // norms, residual adds: every GPU, full width
  double elementwise_sharded_bytes_per_token_;     // rope, SiLU x mul: split over the TP group
  double attn_flops_per_pair_;                     // per (query token, key token) pair, all layers
  double decode_attn_flops_per_pair_;              // the same in the decode kernel (MLA: latent)
  double context_flops_per_token_ = 0;             // MLA: a prefill's up-projection of its context
  double kv_bytes_per_token_;                      // K and V, all layers, whole model
  double qo_bytes_per_token_;                      // Q read and O written, all layers
  double decode_qo_bytes_per_token_;               // the same in the decode kernel (MLA: latent)
  double lm_head_bytes_;
  std::vector<int> stage_layers_;  // layers of each pipeline stage (one stage: all)
  // Expert parallelism (ep_dp_ > 0): the data-parallel ranks, the EP group's GPUs and the most
  // experts a GPU holds, the routed experts' FLOPs (and FP8-scaled time FLOPs) per (token,
  // expert) pair, all MoE layers; a pair's GEMM bytes on the GPU that runs it (the token's
  // hidden state in and out, and its MLP widths) and the MLP widths alone (what the TP group's
  // count holds per pair); 2 ln EP, ln(1 - k / E); the exchange's bus and latency.
  int ep_dp_ = 0, ep_gpus_ = 1, ep_local_ = 0;
  double pair_flops_ = 0, pair_time_flops_ = 0, pair_act_bytes_ = 0, pair_inner_act_bytes_ = 0;
  double two_log_ep_ = 0, log_miss_ = 0, a2a_bus_ = 0, a2a_latency_s_ = 0;
  // With skewed routing, the busiest GPU's expected share of the pairs (0: uniform routing).
  double busiest_share_ = 0;
  // Pipeline sends, per stage: latency and one GPU's bandwidth, and whether the next stage must
  // all-gather (TP > 1).
  std::vector<double> send_latency_s_, send_bytes_per_s_;
};

}  // namespace servesim
