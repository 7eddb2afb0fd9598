// GpuSpec: the datasheet facts of one accelerator that the cost model and the memory plan need.
// The catalogue holds the GPUs servesim knows by name (`servesim list gpus`); a user adds another
// with an INI file (`--gpu-file`). Promises: every value is positive and finite once constructed
// through find_gpu or load_gpu_file (the optional price excepted: NaN when unknown).
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace servesim {

struct GpuSpec {
  std::string name;         // catalogue key, lower-case, e.g. "h100-sxm"
  std::string description;  // e.g. "NVIDIA H100 SXM5 80GB"
  double bf16_tflops = 0;   // dense BF16 peak, TFLOP/s (no sparsity)
  // Memory capacity as the GPU reports it. Datasheets say "80 GB" for 80 GiB of HBM (stacks are
  // binary-sized) and vLLM sees the binary size; GDDR6 cards (L4, L40S) are sized in decimal GB.
  double hbm_gib = 0;
  double hbm_gb_per_s = 0;           // HBM bandwidth, GB/s (1e9 bytes/s)
  double interconnect_gb_per_s = 0;  // GPU-to-GPU bandwidth per GPU (NVLink/xGMI/PCIe), GB/s
  // Dense FP8 peak, TFLOP/s; 0 without FP8 tensor cores (Ampere), where vLLM runs FP8 weights
  // through a weight-only kernel (Marlin) at the BF16 rate.
  double fp8_tflops = 0;
  // Dollars per GPU-hour, for `servesim capacity`'s cost columns: optional in a GPU file, NaN
  // when unknown (the catalogue has no prices: they differ between clouds and contracts).
  double cost_per_hour = NAN;

  double peak_flops() const { return bf16_tflops * 1e12; }
  // The peak an FP8 GEMM runs at: FP8 tensor cores where there are, else BF16's.
  double fp8_peak_flops() const { return (fp8_tflops > 0 ? fp8_tflops : bf16_tflops) * 1e12; }
  double hbm_bytes() const { return hbm_gib * 1024.0 * 1024.0 * 1024.0; }
  double hbm_bytes_per_s() const { return hbm_gb_per_s * 1e9; }
  double interconnect_bytes_per_s() const { return interconnect_gb_per_s * 1e9; }
};

// The built-in catalogue, in the order `servesim list gpus` prints it.
const std::vector<GpuSpec>& gpu_catalogue();

// Looks a GPU up by catalogue name (case-insensitive). Throws Error naming the known GPUs.
GpuSpec find_gpu(std::string_view name);

// Reads a GPU from an INI file: keys name, description, bf16_tflops, hbm_gib, hbm_gb_per_s,
// interconnect_gb_per_s, and optionally fp8_tflops and cost_per_hour. Throws Error with file, line
// and field on bad input.
GpuSpec load_gpu_file(const std::string& path);

}  // namespace servesim
