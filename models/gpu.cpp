#include "models/gpu.hpp"

#include <cmath>

#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/lookup.hpp"

namespace servesim {

const std::vector<GpuSpec>& gpu_catalogue() {
  // Dense BF16 TFLOP/s, HBM GB, HBM GB/s, interconnect GB/s, from the vendors' datasheets.
  static const std::vector<GpuSpec> gpus = {
      {"a100-40g", "NVIDIA A100 SXM4 40GB", 312, 40, 1555, 600},
      {"a100-80g", "NVIDIA A100 SXM4 80GB", 312, 80, 2039, 600},
      {"h100-sxm", "NVIDIA H100 SXM5 80GB", 989.4, 80, 3350, 900},
      {"h100-pcie", "NVIDIA H100 PCIe 80GB", 756, 80, 2000, 600},
      {"h200-sxm", "NVIDIA H200 SXM 141GB", 989.4, 141, 4800, 900},
      // GDDR6 is sized in decimal GB: 48 GB and 24 GB are 45 and 22.5 GiB (nvidia-smi shows
      // 46068 and 23034 MiB).
      {"l40s", "NVIDIA L40S 48GB (PCIe)", 362, 45, 864, 64},
      {"l4", "NVIDIA L4 24GB (PCIe)", 121, 22.5, 300, 64},
      {"mi300x", "AMD Instinct MI300X 192GB", 1307.4, 192, 5300, 896},
      {"b200", "NVIDIA B200 180GB", 2250, 180, 8000, 1800},
  };
  return gpus;
}

GpuSpec find_gpu(std::string_view name) {
  return find_in_catalogue(gpu_catalogue(), name, "gpu", "GPU",
                           "; or describe one with --gpu-file");
}

GpuSpec load_gpu_file(const std::string& path) {
  GpuSpec g;
  load_ini_fields(path, {{"name", &g.name, true},
                         {"description", &g.description},
                         {"bf16_tflops", &g.bf16_tflops, true},
                         {"hbm_gib", &g.hbm_gib, true},
                         {"hbm_gb_per_s", &g.hbm_gb_per_s, true},
                         {"interconnect_gb_per_s", &g.interconnect_gb_per_s, true}});
  const std::pair<const char*, double> fields[] = {
      {"bf16_tflops", g.bf16_tflops},
      {"hbm_gib", g.hbm_gib},
      {"hbm_gb_per_s", g.hbm_gb_per_s},
      {"interconnect_gb_per_s", g.interconnect_gb_per_s}};
  for (const auto& [field, v] : fields) {
    // 1e7 is far above any accelerator and keeps byte counts exact in int64.
    if (!(v > 0 && v <= 1e7)) throw Error(path, 0, field, "must be a number in (0, 1e7]");
  }
  if (g.name.empty()) throw Error(path, 0, "name", "must not be empty");
  g.name = lowercase(g.name);
  return g;
}

}  // namespace servesim
