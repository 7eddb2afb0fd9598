// RooflineCostModel: an analytic step-time model. A step is the sum of parts that run one after
// the other; each part takes the larger of its compute time, FLOPs / (peak x compute efficiency),
// and its memory time, bytes / (HBM bandwidth x memory efficiency), never less than its
// per-layer kernel floor. "The larger" is max(), or with knee_sharpness p > 0 the smooth
// (t_c^p + t_m^p)^(1/p), which measured kernels follow near the ridge point:
//  - linear: the GEMMs (2 x active linear params x tokens FLOPs; weights read once per step,
//    MoE experts only if some token is routed to them, plus activations in and out; FP8 weights
//    are read at one byte and, on GPUs with FP8 tensor cores, multiplied at the FP8 peak);
//  - attention: prefill chunks (quadratic in the chunk, linear in cached context) and decodes
//    (linear in context, KV bytes read at the KV cache's dtype) as two kernels;
//  - elementwise: RMSNorms, rotary embedding, SiLU x mul, residual adds (memory-bound);
//  - lm_head: logits for the sequences that emit a token this step;
//  - allreduce: two per layer under tensor parallelism, ring formula plus a per-call latency;
//  - cpu_overhead: vLLM's per-step CPU work (schedule, prepare inputs, sample, process outputs).
// Work is split evenly over the TP group. Not counted: embedding lookup, the LM head's gather,
// pipeline parallelism, CUDA-graph capture, overlap between parts.
#pragma once

#include <vector>

#include "models/cost_model.hpp"
#include "models/gpu.hpp"
#include "models/model.hpp"

namespace servesim {

// Free parameters. These struct defaults are the uncalibrated baseline, each read off one range
// of measured A100-80GB operator timings from the Vidur project (MLSys'24), kept in
// ../shared/profiles (simulations use default_roofline_params() below, a least-squares fit):
// mlp.csv of Llama-2-7B, Llama-3-8B and Llama-2-70B at TP1-8 (vidur@7d47513), and the legacy
// attention.csv, cpu_overheads.csv and all_reduce.csv (vidur@e2d00e9). Efficiencies are fractions
// of the datasheet peak, so they carry over to other GPUs as ratios; no other GPU's profile was at
// hand to check that.
struct RooflineParams {
  // 0: max(compute, memory), the textbook roofline. p > 0: (t_c^p + t_m^p)^(1/p).
  double knee_sharpness = 0;
  // GEMM tiles: cuBLAS pads the token dimension to whole tiles, so compute time steps up every
  // this many tokens (0 = no padding).
  double linear_tile_tokens = 0;
  // GEMMs at num_tokens >= 1024: 63-80% of 312 TFLOP/s across the three models and TP1-8.
  double linear_compute_efficiency = 0.72;
  // GEMMs at num_tokens <= 8, TP1: weights read at 66-81% of 2039 GB/s.
  double linear_memory_efficiency = 0.75;
  // Norms, rope, SiLU x mul and add at 4096 tokens, TP1: 31-88% of HBM bandwidth per op; 53-56%
  // for the bytes this model counts (two residual adds per layer) over the time of the five ops.
  double elementwise_memory_efficiency = 0.54;
  // The element-wise kernels of one layer at num_tokens = 1: 0.021-0.027 ms.
  double elementwise_floor_s_per_layer = 24e-6;
  // attn_prefill at kv_cache_size 2048, chunks of 128-2048 tokens: 27-33% of peak.
  double attention_compute_efficiency = 0.30;
  // attn_decode at batch >= 32 and kv_cache_size >= 1024, less the launch latency below: KV
  // read at 67-90% of HBM bandwidth (10th-90th percentile), median 80%.
  double attention_memory_efficiency = 0.80;
  // Launch latency of each attention kernel, added to its work: attn_decode at batch 1 and
  // attn_prefill of 128 tokens take 0.015-0.018 ms per layer.
  double attention_floor_s_per_layer = 16e-6;
  // all_reduce on a DGX A100 at >= 32 MiB: bus bandwidth 136-174 GB/s, ~0.28 of the 600 GB/s
  // NVLink figure in the GPU catalogue.
  double interconnect_efficiency = 0.28;
  // Per call: 0.010 ms measured for 2 GPUs at 2 KiB; Vidur adds 0.02 ms per NCCL call.
  double allreduce_latency_s = 20e-6;
  // NCCL switches protocol for larger messages (from LL to LL128/Simple): above this many bytes
  // a call costs allreduce_large_latency_s instead (0 = one latency for all sizes).
  double allreduce_switch_bytes = 0;
  double allreduce_large_latency_s = 0;
  // Sum of the medians of schedule, sampler, prepare_inputs and process_model_outputs per
  // iteration (cpu_overheads.csv, vLLM/Sarathi V0), least-squares line in batch size 8-128:
  // 0.806 ms + 0.0375 ms per sequence (max residual 6%).
  double cpu_overhead_s = 0.806e-3;
  double cpu_overhead_s_per_seq = 0.0375e-3;
  // vLLM's custom all-reduce (custom_all_reduce.py, v0.15): messages under this many bytes on a
  // fully NVLink-connected node go through vLLM's own kernel, not NCCL (8 MiB; 0 = NCCL only).
  double custom_allreduce_max_bytes = 0;
  // Its per-call latency and its bus bandwidth as a fraction of the interconnect figure.
  double custom_allreduce_latency_s = 0;
  double custom_allreduce_efficiency = 1;
  // vLLM V1 (vllm-v1): GPU-side work of each step outside the model's kernels that no CPU/GPU
  // overlap hides (input and sampling-metadata copies, the sampler, the step's synchronisation),
  // per step and per sequence. V1's CPU work itself (scheduling, preparing inputs, processing
  // outputs) is cpu_overhead_s above, overlapped by async scheduling.
  double v1_step_s = 0;
  double v1_step_s_per_seq = 0;
  // vLLM V1's CPU work of a step (schedule, prepare inputs, update from the outputs), per step and
  // per sequence: overlapped with the GPU by async scheduling. The defaults are the V0 fit's.
  double v1_cpu_s = 0.868045e-3;
  double v1_cpu_s_per_seq = 3.61964e-05;
  // vLLM V1 compiles the model (torch.compile fuses the norms, activations and residual adds)
  // and replays it as CUDA graphs, so the per-layer kernel floors shrink to this fraction of the
  // eager floors above (1 = as eager).
  double v1_floor_fraction = 1;
  // The fused MoE kernels' HBM bandwidth reading expert weights, as a fraction of the peak (0 =
  // linear_memory_efficiency, as dense GEMMs): grouped GEMMs over many small per-expert tiles
  // stream weights less well than one dense GEMM.
  double moe_memory_efficiency = 0;
  // The API server's part of every request's latency (HTTP, tokenization, the IPC to the engine
  // and back, detokenization): added to TTFT and end-to-end latency as the client measures them.
  double frontend_latency_s = 0;
};

// The parameters fit_profiles() (models/calibration.hpp) finds on Vidur's A100-80GB profiles:
// the default for a100-80g. A [shared] test refits them from ../shared/profiles.
RooflineParams a100_fitted_params();
// The H100 SXM defaults: the A100 fit, with the all-reduce of the H100 NVLink profile and vLLM's
// custom all-reduce, and the decode efficiencies and vLLM V1 engine costs fitted on real vLLM
// 0.15.1 runs (../shared/groundtruth). H100 PCIe, H200 and B200 take them against their own
// datasheet peaks.
RooflineParams h100_params();

// What a GPU gets when no calibration file is given, and where it comes from: the A100 fit on
// A100s; elsewhere the same efficiencies against the GPU's own datasheet peaks (efficiencies
// are ratios to the peak), with the A100's latencies and CPU overheads.
// V1_ENGINE: for vllm-v1. On H100 SXM, H100 PCIe, H200 and B200, vllm-v1 gets h100_params(); the
// V0 policies keep the A100 fit (the V0 engine was not measured on these GPUs here) with the
// H100 fit's API-server latency.
RooflineParams default_roofline_params(const GpuSpec& gpu, bool v1_engine = false);
std::string default_roofline_source(const GpuSpec& gpu, bool v1_engine = false);

// Every free parameter by name (INI keys, JSON keys, fit reports), in declaration order.
struct RooflineParamField {
  const char* name;
  double RooflineParams::*member;
  double min, max;  // the physical range a calibration file must respect
  // A calibration file may leave it out (the struct default then holds): the engine parameters
  // added after calibration files were first written.
  bool optional = false;
};
const std::vector<RooflineParamField>& roofline_param_fields();

class RooflineCostModel final : public CostModel {
 public:
  // V1_ENGINE: a vLLM V1 step (adds v1_step_s and v1_step_s_per_seq).
  RooflineCostModel(const GpuSpec& gpu, const ModelSpec& model, int tp,
                    const RooflineParams& params = {}, bool v1_engine = false);
  StepCost cost(std::span<const SeqShape> batch) const override;
  std::string name() const override { return "roofline"; }
  double frontend_latency_s() const override { return p_.frontend_latency_s; }
  const RooflineParams& params() const { return p_; }
  // One ring all-reduce of BYTES over this model's TP group, seconds (0 without TP).
  double allreduce_seconds(double bytes) const;

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
  Work attention_work(double pairs, double kv_tokens, double new_tokens) const;
  double elementwise_gpu_bytes(double tokens) const;  // on each GPU
  double elementwise_seconds(double gpu_bytes) const;
  Work lm_head_work(double emitting) const;

  GpuSpec gpu_;
  ModelSpec model_;
  int tp_;
  RooflineParams p_;
  bool v1_engine_ = false;
  double elementwise_floor_s_ = 0, attention_floor_s_ = 0;  // all layers, this engine's
  double inverse_knee_ = 0;                                 // 1 / knee_sharpness
  double moe_time_factor_ = 1;  // linear / MoE memory efficiency: an expert byte's time
  // Per-model constants, precomputed once.
  double layers_;
  double dtype_;
  double linear_flops_per_token_;                  // all layers
  double linear_time_flops_per_token_;             // the same, FP8 GEMMs' scaled to BF16 time
  double dense_weight_bytes_;                      // attention + router weights, all layers
  double expert_weight_bytes_;                     // one expert, all layers
  double linear_act_bytes_per_token_;              // GEMM inputs and outputs, all layers
  double elementwise_replicated_bytes_per_token_;  // norms, residual adds: every GPU, full width
  double elementwise_sharded_bytes_per_token_;     // rope, SiLU x mul: split over the TP group
  double attn_flops_per_pair_;                     // per (query token, key token) pair, all layers
  double kv_bytes_per_token_;                      // K and V, all layers, whole model
  double qo_bytes_per_token_;                      // Q read and O written, all layers
  double lm_head_bytes_;
};

}  // namespace servesim
