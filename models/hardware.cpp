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
  return fitted_arch(arch) == GpuArch::kHopper ? hopper_params() : ampere_params();
}

std::string hardware_source(const GpuSpec& gpu) {
  const GpuArch fit = fitted_arch(gpu.arch);
  const std::string profile = fit == GpuArch::kHopper ? "Vidur's H100 operator profiles"
                                                      : "Vidur's A100-80GB operator profiles";
  if (fit == gpu.arch) return std::string(arch_name(gpu.arch)) + " fit on " + profile;
  return std::string("the ") + arch_name(fit) + " fit (" + profile + ", no " + arch_name(gpu.arch) +
         " profile) against this GPU's datasheet peaks";
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
