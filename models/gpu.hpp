// GpuSpec: the datasheet facts of one accelerator that the cost model and the memory plan need,
// and its architecture, which picks the hardware fit (models/hardware.hpp) and vLLM's defaults:
// a GPU is known by what it is, never by its name. The catalogue holds the GPUs servesim knows by
// name (`servesim list gpus`); a user adds another with an INI file (`--gpu-file`). Promises:
// every value is positive and finite once constructed through find_gpu or load_gpu_file (the
// optional price excepted: NaN when unknown).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace servesim {

// The GPU architecture families whose kernels servesim tells apart: each has its own hardware
// fit (per-operator efficiencies), since the same kernels reach a different share of the peak on
// each.
enum class GpuArch : uint8_t { kAmpere, kAda, kHopper, kBlackwell, kCdna3 };

const char* arch_name(GpuArch a);  // "ampere", "ada", "hopper", "blackwell", "cdna3"
// The architecture called NAME (ignoring case); Error(FIELD, ...) naming the known ones.
GpuArch parse_arch(std::string_view name, const char* field = "arch");

struct GpuSpec {
  std::string name;         // catalogue key, lower-case, e.g. "h100-sxm"
  std::string description;  // e.g. "NVIDIA H100 SXM5 80GB"
  GpuArch arch = GpuArch::kAmpere;
  double bf16_tflops = 0;  // dense BF16 peak, TFLOP/s (no sparsity)
  // Memory capacity as the GPU reports it. Datasheets say "80 GB" for 80 GiB of HBM (stacks are
  // binary-sized) and vLLM sees the binary size; GDDR6 cards (L4, L40S) are sized in decimal GB.
  double hbm_gib = 0;
  double hbm_gb_per_s = 0;  // HBM bandwidth, GB/s (1e9 bytes/s)
  // GPU-to-GPU bandwidth of one GPU in ONE direction, GB/s: what a ring all-reduce's bus
  // bandwidth approaches. Datasheets add both directions: NVLink 4's "900 GB/s" is 450 each way,
  // PCIe Gen4 x16's "64 GB/s" is 32.
  double interconnect_gb_per_s = 0;
  // Dense FP8 peak, TFLOP/s; 0 without FP8 tensor cores (Ampere), where vLLM runs FP8 weights
  // through a weight-only kernel (Marlin) at the BF16 rate.
  double fp8_tflops = 0;
  // The network to other nodes, per GPU, one direction, GB/s: a ConnectX-7 (400 Gb/s) per GPU is
  // 50. Disaggregated prefill sends KV over it when the pools are on different nodes.
  double network_gb_per_s = 25;
  // The link to host memory (PCIe x16), per GPU, one direction, GB/s: Gen4's 32, Gen5's 64. KV
  // offload to CPU memory copies over it (at host_dma_efficiency of it).
  double host_link_gb_per_s = 32;
  // Dollars per GPU-hour, for `servesim capacity`'s cost columns: optional in a GPU file, NaN
  // when unknown (the catalogue has no prices: they differ between clouds and contracts).
  double cost_per_hour = NAN;
  // GPUs a node holds, joined by interconnect_gb_per_s; a TP group larger than this spans nodes
  // and all-reduces over the network (network_gb_per_s per GPU). 8 for the catalogue's GPUs
  // (HGX and DGX boards, MI300X platforms, 8-card PCIe servers) but GB200's: its NVL72 rack is
  // one NVLink domain of 72.
  int gpus_per_node = 8;
  // Power (models/power.hpp), per GPU: the board power limit (TDP), what it draws with a model
  // loaded and no kernel running, and the share of the span between the two that streaming HBM
  // at the hardware fit's best GEMM rate adds. NaN when unknown (a GPU file without tdp_w): the
  // run then reports no energy.
  double tdp_w = NAN, idle_w = NAN, hbm_power_share = NAN;
  // Dense FP4 peak, TFLOP/s (NVFP4 and MXFP4 tensor cores: Blackwell); 0 without, where vLLM runs
  // NVFP4 weights through a weight-only kernel (Marlin) at the BF16 rate.
  double fp4_tflops = 0;

  double peak_flops() const { return bf16_tflops * 1e12; }
  // The peak an FP8 GEMM runs at: FP8 tensor cores where there are, else BF16's.
  double fp8_peak_flops() const { return (fp8_tflops > 0 ? fp8_tflops : bf16_tflops) * 1e12; }
  // The peak an NVFP4 GEMM runs at: FP4 tensor cores where there are, else BF16's.
  double fp4_peak_flops() const { return (fp4_tflops > 0 ? fp4_tflops : bf16_tflops) * 1e12; }
  double hbm_bytes() const { return hbm_gib * 1024.0 * 1024.0 * 1024.0; }
  double hbm_bytes_per_s() const { return hbm_gb_per_s * 1e9; }
  double interconnect_bytes_per_s() const { return interconnect_gb_per_s * 1e9; }
  // What a DMA copy between pinned host memory and the GPU reaches on the host link.
  double host_dma_bytes_per_s() const { return host_link_gb_per_s * 1e9 * kHostDmaEfficiency; }
  // CUDA's bandwidthTest with pinned memory reaches 24-26 GB/s each way on PCIe Gen4 x16 (A100)
  // and 52-55 GB/s on Gen5 x16 (H100): about 0.82 of the link rate, after PCIe's packet
  // overheads.
  static constexpr double kHostDmaEfficiency = 0.82;
};

// The share of a GPU's span from idle to TDP that HBM streaming draws on ARCH (models/power.hpp).
double default_hbm_power_share(GpuArch arch);

// The built-in catalogue, in the order `servesim list gpus` prints it.
const std::vector<GpuSpec>& gpu_catalogue();

// Looks a GPU up by catalogue name or a common alias, exactly (ignoring case, an "NVIDIA "
// prefix, and spaces for dashes): "H100 NVL" is h100-nvl, not the SXM part. Throws Error naming
// the known GPUs.
GpuSpec find_gpu(std::string_view name);

// Reads a GPU from an INI file: keys name, description, arch, bf16_tflops, hbm_gib,
// hbm_gb_per_s, interconnect_gb_per_s (one direction), and optionally fp8_tflops, fp4_tflops,
// network_gb_per_s, host_link_gb_per_s, cost_per_hour, gpus_per_node, and tdp_w with idle_w
// (both or neither) and hbm_power_share (default: the architecture's, default_hbm_power_share).
// Throws Error with file, line and field on bad input.
GpuSpec load_gpu_file(const std::string& path);

}  // namespace servesim
