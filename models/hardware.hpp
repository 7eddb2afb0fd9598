// HardwareParams: how close one GPU architecture's kernels come to its datasheet peaks, per
// operator: GEMMs (compute and memory), attention (prefill compute, decode memory, launch),
// element-wise kernels, collectives, MoE expert streaming. They belong to the silicon and its
// kernels, not to the engine or the scheduling policy: every engine and every policy runs on the
// same values for a GPU (ARCHITECTURE.md, models/). Efficiencies are fractions of the peak they
// scale (at most 1); latencies and floors are seconds.
// Fitted on measured operator profiles by `servesim calibrate` (models/calibration.hpp):
//  - ampere: Vidur's A100-80GB profiles (../shared/profiles: GEMMs of Llama-2-7B, Llama-3-8B,
//    Llama-2-70B at TP1-8, element-wise ops, FlashAttention prefill and paged decode, DGX
//    all-reduce);
//  - hopper: Vidur's H100 profiles (../shared/profiles-h100: Llama-2-7B GEMMs and element-wise
//    ops at TP1-8, pair-NVLink all-reduce), with vLLM's custom all-reduce from published H100
//    kernel timings; attention has no H100 profile here and keeps the ampere fit's efficiencies
//    (ratios to the peak) except where docs/design/cost-model.md says otherwise.
// ada, blackwell and cdna3 have no profile at hand: they take the nearest fitted architecture's
// efficiencies against their own datasheet peaks (hardware_source() says which), cdna3's scaled
// by MI300X's published kernel rates against H100's (hardware.cpp, docs/design/cost-model.md).
#pragma once

#include <string>
#include <vector>

#include "models/gpu.hpp"

namespace servesim {

// The struct defaults are the uncalibrated baseline, each read off one range of the A100
// measurements (as commented); simulations use hardware_params() below, the least-squares fits.
struct HardwareParams {
  // 0: max(compute, memory), the textbook roofline. p > 0: (t_c^p + t_m^p)^(1/p).
  double knee_sharpness = 0;
  // GEMM tiles: cuBLAS pads the token dimension to whole tiles, so compute time steps up every
  // this many tokens (0 = no padding).
  double linear_tile_tokens = 0;
  // GEMMs at num_tokens >= 1024: 63-80% of 312 TFLOP/s across the three models and TP1-8.
  double linear_compute_efficiency = 0.72;
  // GEMMs at num_tokens <= 8, TP1: weights read at 66-81% of 2039 GB/s.
  double linear_memory_efficiency = 0.75;
  // The four GEMM kernels of one layer take this long beyond their work (launch and tail: small
  // sharded GEMMs at TP4-8 cannot fill the GPU), a per-layer floor like the others (0 = none).
  double linear_latency_s_per_layer = 0;
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
  // The paged decode kernel's own fixed time per layer, beyond its launch: the first wave's ramp
  // to full bandwidth, the split-KV merge, the last wave's tail. CUDA graphs remove launch gaps,
  // not this (0 = none: the A100 profiles' decode fits a launch floor and a streaming rate).
  double attention_decode_latency_s_per_layer = 0;
  // all_reduce on a DGX A100 at >= 32 MiB: bus bandwidth 136-174 GB/s, ~0.56 of the 300 GB/s
  // one NVLink direction carries.
  double interconnect_efficiency = 0.56;
  // Per call: 0.010 ms measured for 2 GPUs at 2 KiB; Vidur adds 0.02 ms per NCCL call.
  double allreduce_latency_s = 20e-6;
  // NCCL switches protocol for larger messages (from LL to LL128/Simple): above this many bytes
  // a call costs allreduce_large_latency_s instead (0 = one latency for all sizes).
  double allreduce_switch_bytes = 0;
  double allreduce_large_latency_s = 0;
  // vLLM's custom all-reduce (custom_all_reduce.py, v0.15): messages under this many bytes on a
  // fully NVLink-connected node go through vLLM's own kernel, not NCCL (8 MiB; 0 = NCCL only).
  double custom_allreduce_max_bytes = 0;
  // Its per-call latency and its bus bandwidth as a fraction of the one-way link.
  double custom_allreduce_latency_s = 0;
  double custom_allreduce_efficiency = 1;
  // The fused MoE kernels' HBM bandwidth reading expert weights, as a fraction of the peak, for
  // BF16 experts (Triton fused_moe) and for FP8 ones (a different kernel); 0 =
  // linear_memory_efficiency, as dense GEMMs. Grouped GEMMs over many small per-expert tiles
  // stream weights less well than one dense GEMM.
  double moe_memory_efficiency = 0;
  double moe_fp8_memory_efficiency = 0;
};

// The fitted parameters of one architecture (see above).
HardwareParams hardware_params(GpuArch arch);
// Where GPU's parameters come from, in a sentence.
std::string hardware_source(const GpuSpec& gpu);
// The architecture whose fit ARCH uses (itself when fitted).
GpuArch fitted_arch(GpuArch arch);

// A parameter of one of the cost model's owners (hardware, engine) by name: INI keys, JSON keys,
// fit reports.
template <class Params>
struct ParamField {
  const char* name;
  double Params::*member;
  double min, max;  // the physical range a calibration file must respect
};
const std::vector<ParamField<HardwareParams>>& hardware_param_fields();

}  // namespace servesim
