#include "models/hardware.hpp"

namespace servesim {

namespace {

// fit_profiles() on every Vidur A100-80GB profile in ../shared/profiles (a [shared] test refits
// it): GEMMs, element-wise ops, attention, the DGX all-reduce.
HardwareParams ampere_params() {
  HardwareParams p;
  p.knee_sharpness = 1.36004;
  p.linear_tile_tokens = 64;
  p.linear_compute_efficiency = 0.737817;
  p.linear_memory_efficiency = 0.854668;
  p.elementwise_memory_efficiency = 0.592348;
  p.elementwise_floor_s_per_layer = 2.09352e-05;
  p.attention_compute_efficiency = 0.278258;
  p.attention_memory_efficiency = 0.816055;
  p.attention_floor_s_per_layer = 1.34185e-05;
  p.interconnect_efficiency = 0.52843;
  p.allreduce_latency_s = 2.82129e-05;
  p.allreduce_switch_bytes = 524288;
  p.allreduce_large_latency_s = 3.80909e-05;
  return p;
}

// fit_profiles() on Vidur's H100 profiles in ../shared/profiles-h100 (a [shared] test refits it):
// Llama-2-7B's GEMMs and element-wise ops at TP1-8 and NCCL between an NVLink pair, fitted on
// the messages of 8 MiB and more that NCCL serves under vLLM. What they do not measure:
HardwareParams hopper_params() {
  HardwareParams p;
  p.knee_sharpness = 1.31421;
  p.linear_tile_tokens = 0;
  // At its bound: decode GEMMs stream at the best measured HBM rate, 0.9, plus 24 us a layer.
  p.linear_compute_efficiency = 0.764246;
  p.linear_memory_efficiency = 0.9;
  p.linear_latency_s_per_layer = 2.43427e-05;
  p.elementwise_memory_efficiency = 0.607042;
  p.elementwise_floor_s_per_layer = 1.5886e-05;
  p.interconnect_efficiency = 0.433213;
  p.allreduce_latency_s = 20e-6;
  p.allreduce_switch_bytes = 32768;
  p.allreduce_large_latency_s = 1.48992e-05;
  // - attention: no H100 profile. Prefill and the launch latency keep the ampere fit's ratios to
  //   the peak; paged decode attention reads the KV cache at 0.6 of HBM bandwidth, fitted on the
  //   real vLLM runs (scripts/fit-engine.py): FlashAttention 3's paged decode on H100 measures
  //   0.37-0.55 at batch 16 (flash-attention issue #1572), the runs' batches reach 100. A fixed
  //   time per layer plus a stream near the peak (attention_decode_latency_s_per_layer, as
  //   FlashInfer's H100 benchmark measures the kernel) fits the runs' median better but not
  //   Llama-2-7B, their one model without GQA (30% fast): not shipped (docs/validation.md);
  const HardwareParams a = ampere_params();
  p.attention_compute_efficiency = a.attention_compute_efficiency;
  p.attention_memory_efficiency = 0.6;
  p.attention_floor_s_per_layer = a.attention_floor_s_per_layer;
  // - vLLM's custom all-reduce below 8 MiB (custom_all_reduce.py max_size): its one-stage kernel
  //   on 4 H100s takes 10, 14, 23 and 38 us for 0.5, 1, 2 and 4 MB (vLLM PR #24532's benchmark of
  //   the device communicators): 6 us and a bus bandwidth of 0.42 of one NVLink direction;
  p.custom_allreduce_max_bytes = 8 * 1024 * 1024;
  p.custom_allreduce_latency_s = 6e-6;
  p.custom_allreduce_efficiency = 0.42;
  // - the fused MoE kernels, fitted on the real vLLM runs of MoE models: BF16 experts (Mixtral
  //   8x7B) at 0.94 of HBM bandwidth, FP8 ones (Llama-4-Scout FP8) at 0.79.
  p.moe_memory_efficiency = 0.9375;
  p.moe_fp8_memory_efficiency = 0.78875;
  return p;
}

// What an architecture without operator profiles takes: the hopper fit, its efficiencies scaled
// by what the same published benchmark measures on both (docs/design/cost-model.md, "GPUs
// without profiles"); floors, latencies and collectives stay Hopper's.
//  - cdna3 (MI300X): GEMMs, stas00/ml-engineering's maximum achievable matmul FLOPS (mamf-finder,
//    BF16): MI300X 668.4 of 1307.4 TFLOP/s (51.1%, hipBLASLt tuned) against H100 SXM's 794.5 of
//    989.4 (80.3%), so 0.637 of Hopper's; AMD's own hipblaslt-bench reaches 708 (54.2%: dense
//    GEMMs run near 1.2 GHz of a 2.1 GHz boost). HBM: Azure's ND MI300X v5 and ND H100 v5
//    babelstream triad, 4.09 of 5.3 TB/s (77.2%) against 2.97 of 3.35 (88.7%): 0.870, for every
//    memory-bound kernel. Attention compute: Azure's FlashAttention-2 forward, 328.6 TFLOP/s on
//    MI300X (head dim 64) against 327.9 on H100 (head dim 128), 25.1% against 33.1% of the
//    peaks: 0.759.
//  - blackwell (B200) is not scaled: the same mamf-finder table has B200 at 1745.0 of 2250
//    (77.6%) against H100's 80.3%, a difference smaller than the spread among Blackwell parts
//    (GB200 72.9%, B300 78.6%), and its HBM and attention have no measurement by the same
//    method as H100's.
HardwareParams scaled_hopper_params(double gemm, double hbm, double attention) {
  HardwareParams p = hopper_params();
  p.linear_compute_efficiency *= gemm;
  p.attention_compute_efficiency *= attention;
  p.linear_memory_efficiency *= hbm;
  p.elementwise_memory_efficiency *= hbm;
  p.attention_memory_efficiency *= hbm;
  p.moe_memory_efficiency *= hbm;
  p.moe_fp8_memory_efficiency *= hbm;
  return p;
}

constexpr double kH100Mamf = 794.5 / 989.4;

HardwareParams cdna3_params() {
  return scaled_hopper_params((668.4 / 1307.4) / kH100Mamf, (4.09 / 5.3) / (2.97 / 3.35),
                              (328.6 / 1307.4) / (327.9 / 989.4));
}

}  // namespace

GpuArch fitted_arch(GpuArch arch) {
  switch (arch) {
    case GpuArch::kAmpere:
    case GpuArch::kAda:  // no Ada profile: Ampere's kernels are the nearest (same SM generation
                         // but for FP8)
      return GpuArch::kAmpere;
    case GpuArch::kHopper:
    case GpuArch::kBlackwell:
    case GpuArch::kCdna3:
      return GpuArch::kHopper;
  }
  return GpuArch::kAmpere;
}

HardwareParams hardware_params(GpuArch arch) {
  switch (arch) {
    case GpuArch::kCdna3:
      return cdna3_params();
    default:
      return fitted_arch(arch) == GpuArch::kHopper ? hopper_params() : ampere_params();
  }
}

std::string hardware_source(const GpuSpec& gpu) {
  const GpuArch fit = fitted_arch(gpu.arch);
  const std::string profile = fit == GpuArch::kHopper ? "Vidur's H100 operator profiles"
                                                      : "Vidur's A100-80GB operator profiles";
  if (fit == gpu.arch) return std::string(arch_name(gpu.arch)) + " fit on " + profile;
  const std::string base = std::string("the ") + arch_name(fit) + " fit (" + profile + ", no " +
                           arch_name(gpu.arch) + " profile)";
  if (gpu.arch == GpuArch::kCdna3) {
    return base +
           " scaled by MI300X's published GEMM, attention and HBM rates against H100's, "
           "on this GPU's datasheet peaks";
  }
  return base + " against this GPU's datasheet peaks";
}

const std::vector<ParamField<HardwareParams>>& hardware_param_fields() {
  using P = HardwareParams;
  static const std::vector<ParamField<HardwareParams>> fields = {
      {"knee_sharpness", &P::knee_sharpness, 0, 100},  // 0 (a hard max) or >= 1
      {"linear_tile_tokens", &P::linear_tile_tokens, 0, 4096},
      {"linear_compute_efficiency", &P::linear_compute_efficiency, 1e-3, 1},
      {"linear_memory_efficiency", &P::linear_memory_efficiency, 1e-3, 1},
      {"linear_latency_s_per_layer", &P::linear_latency_s_per_layer, 0, 0.1},
      {"elementwise_memory_efficiency", &P::elementwise_memory_efficiency, 1e-3, 1},
      {"elementwise_floor_s_per_layer", &P::elementwise_floor_s_per_layer, 0, 0.1},
      {"attention_compute_efficiency", &P::attention_compute_efficiency, 1e-3, 1},
      {"attention_memory_efficiency", &P::attention_memory_efficiency, 1e-3, 1},
      {"attention_floor_s_per_layer", &P::attention_floor_s_per_layer, 0, 0.1},
      {"attention_decode_latency_s_per_layer", &P::attention_decode_latency_s_per_layer, 0, 0.1},
      {"interconnect_efficiency", &P::interconnect_efficiency, 1e-3, 1},
      {"allreduce_latency_s", &P::allreduce_latency_s, 0, 0.1},
      {"allreduce_switch_bytes", &P::allreduce_switch_bytes, 0, 1e12},
      {"allreduce_large_latency_s", &P::allreduce_large_latency_s, 0, 0.1},
      {"custom_allreduce_max_bytes", &P::custom_allreduce_max_bytes, 0, 1e12},
      {"custom_allreduce_latency_s", &P::custom_allreduce_latency_s, 0, 0.1},
      {"custom_allreduce_efficiency", &P::custom_allreduce_efficiency, 1e-3, 1},
      {"moe_memory_efficiency", &P::moe_memory_efficiency, 0, 1},
      {"moe_fp8_memory_efficiency", &P::moe_fp8_memory_efficiency, 0, 1},
  };
  return fields;
}

}  // namespace servesim
