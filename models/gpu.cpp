#include "models/gpu.hpp"

#include <algorithm>
#include <utility>

#include <cmath>
#include <set>
#include <string>

#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/lookup.hpp"

namespace servesim {

const std::vector<GpuSpec>& gpu_catalogue() {
  // Dense BF16 TFLOP/s, HBM GB, HBM GB/s, interconnect GB/s, dense FP8 TFLOP/s (0: no FP8
  // tensor cores), from the vendors' datasheets (the FP8 figures without sparsity).
  static const std::vector<GpuSpec> gpus = {
      {"a100-40g", "NVIDIA A100 SXM4 40GB", 312, 40, 1555, 600, 0},
      {"a100-80g", "NVIDIA A100 SXM4 80GB", 312, 80, 2039, 600, 0},
      // CUDA reports 79.22 GiB of the 80 GiB of HBM3 (vLLM 0.15.1 logs on H100 SXM).
      {"h100-sxm", "NVIDIA H100 SXM5 80GB", 989.4, 79.22, 3350, 900, 1978.9},
      {"h100-pcie", "NVIDIA H100 PCIe 80GB", 756, 80, 2000, 600, 1513},
      {"h200-sxm", "NVIDIA H200 SXM 141GB", 989.4, 141, 4800, 900, 1978.9},
      // GDDR6 is sized in decimal GB: 48 GB and 24 GB are 45 and 22.5 GiB (nvidia-smi shows
      // 46068 and 23034 MiB).
      {"l40s", "NVIDIA L40S 48GB (PCIe)", 362, 45, 864, 64, 733},
      {"l4", "NVIDIA L4 24GB (PCIe)", 121, 22.5, 300, 64, 242.5},
      {"mi300x", "AMD Instinct MI300X 192GB", 1307.4, 192, 5300, 896, 2614.9},
      {"b200", "NVIDIA B200 180GB", 2250, 180, 8000, 1800, 4500},
  };
  return gpus;
}

namespace {

// Names people and tools use for the catalogue's GPUs (nvidia-smi, cloud SKUs, vLLM docs), lower
// case, without the "nvidia " prefix.
const std::vector<std::pair<std::string, std::string>>& gpu_aliases() {
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"a100", "a100-80g"},
      {"a100-80gb", "a100-80g"},
      {"a100-sxm4-80gb", "a100-80g"},
      {"a100-40gb", "a100-40g"},
      {"a100-sxm4-40gb", "a100-40g"},
      {"h100", "h100-sxm"},
      {"h100-80gb", "h100-sxm"},
      {"h100-sxm5", "h100-sxm"},
      {"h100-80gb-hbm3", "h100-sxm"},
      {"h100-sxm5-80gb", "h100-sxm"},
      {"h100-pcie-80gb", "h100-pcie"},
      {"h200", "h200-sxm"},
      {"h200-141gb", "h200-sxm"},
      {"mi300", "mi300x"},
      {"b200-180gb", "b200"},
  };
  return aliases;
}

}  // namespace

GpuSpec find_gpu(std::string_view name) {
  std::string key = lowercase(name);
  for (const char* prefix : {"nvidia ", "nvidia-", "amd "}) {
    if (key.rfind(prefix, 0) == 0) key.erase(0, std::string(prefix).size());
  }
  std::replace(key.begin(), key.end(), ' ', '-');
  for (const auto& [alias, gpu] : gpu_aliases()) {
    if (key == alias) return find_in_catalogue(gpu_catalogue(), gpu, "gpu", "GPU", "");
  }
  for (const GpuSpec& g : gpu_catalogue()) {
    if (key == g.name) return g;
  }
  return find_in_catalogue(gpu_catalogue(), name, "gpu", "GPU",
                           "; or an alias such as H100 or A100; or describe one with --gpu-file");
}

GpuSpec load_gpu_file(const std::string& path) {
  GpuSpec g;
  const std::set<std::string> given =
      load_ini_fields(path, {{"name", &g.name, true},
                             {"description", &g.description},
                             {"bf16_tflops", &g.bf16_tflops, true},
                             {"hbm_gib", &g.hbm_gib, true},
                             {"hbm_gb_per_s", &g.hbm_gb_per_s, true},
                             {"interconnect_gb_per_s", &g.interconnect_gb_per_s, true},
                             {"fp8_tflops", &g.fp8_tflops},
                             {"cost_per_hour", &g.cost_per_hour}});
  const std::pair<const char*, double> fields[] = {
      {"bf16_tflops", g.bf16_tflops},
      {"hbm_gib", g.hbm_gib},
      {"hbm_gb_per_s", g.hbm_gb_per_s},
      {"interconnect_gb_per_s", g.interconnect_gb_per_s}};
  for (const auto& [field, v] : fields) {
    // 1e-3 (a thousandth of a GFLOP/s, a MB of memory) is far below any accelerator and keeps
    // step times finite; 1e7 is far above any and keeps byte counts exact in int64.
    if (!(v >= 1e-3 && v <= 1e7)) {
      throw Error(path, ini_line_of(path, field), field, "must be a number in [1e-3, 1e7]");
    }
  }
  if (!(g.fp8_tflops == 0 || (g.fp8_tflops >= 1e-3 && g.fp8_tflops <= 1e7))) {
    throw Error(path, ini_line_of(path, "fp8_tflops"), "fp8_tflops",
                "dense FP8 TFLOP/s: 0 (no FP8 tensor cores) or a number in [1e-3, 1e7]");
  }
  if (given.count("cost_per_hour") && !(g.cost_per_hour > 0 && g.cost_per_hour <= 1e7)) {
    throw Error(path, ini_line_of(path, "cost_per_hour"), "cost_per_hour",
                "dollars per GPU-hour: a number in (0, 1e7]");
  }
  if (g.name.empty()) throw Error(path, ini_line_of(path, "name"), "name", "must not be empty");
  g.name = lowercase(g.name);
  return g;
}

}  // namespace servesim
