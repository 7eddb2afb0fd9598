#include "models/gpu.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/lookup.hpp"

namespace servesim {

namespace {
// HBM streaming's share of a GPU's span from idle to TDP (models/power.hpp), fitted per
// architecture on one ML.ENERGY v3 measurement each, the most memory-bound (Llama-3.1-8B, vLLM
// 0.11.1, max_num_seqs 8; every other batch, Llama-3.1-70B and the other GPU held out:
// docs/design/cost-model.md, "Power"): H100 0.455 J per output token gives 0.77; B200's
// 0.391 J needs more than the bound, which it is held at (1). Ampere, Ada and CDNA3 have no
// measurement and take Hopper's.
constexpr double kHopperHbmPowerShare = 0.77;
constexpr double kBlackwellHbmPowerShare = 1.0;

constexpr std::pair<GpuArch, const char*> kArchNames[] = {{GpuArch::kAmpere, "ampere"},
                                                          {GpuArch::kAda, "ada"},
                                                          {GpuArch::kHopper, "hopper"},
                                                          {GpuArch::kBlackwell, "blackwell"},
                                                          {GpuArch::kCdna3, "cdna3"}};
}  // namespace

const char* arch_name(GpuArch a) {
  for (const auto& [arch, name] : kArchNames) {
    if (arch == a) return name;
  }
  return "?";
}

GpuArch parse_arch(std::string_view name, const char* field) {
  const std::string key = lowercase(name);
  std::string known;
  for (const auto& [arch, n] : kArchNames) {
    if (key == n) return arch;
    known.append(known.empty() ? "" : ", ").append(n);
  }
  throw Error(field, "unknown GPU architecture '" + std::string(name) + "' (known: " + known + ")");
}

const std::vector<GpuSpec>& gpu_catalogue() {
  // From the vendors' datasheets: dense BF16 TFLOP/s, memory, HBM GB/s, GPU-to-GPU GB/s in one
  // direction (half the datasheet's bidirectional figure), dense FP8 TFLOP/s (0: no FP8 tensor
  // cores), network GB/s per GPU in one direction (the NIC of the vendor's reference system:
  // ConnectX-6 HDR 200 Gb/s per A100, ConnectX-7 NDR 400 Gb/s per H100/H200/B200), the host
  // link in one direction (PCIe Gen4 x16: 32 GB/s; Gen5 x16: 64 GB/s; B200 hosts are Gen5).
  using A = GpuArch;
  static const std::vector<GpuSpec> gpus = {
      {"a100-40g", "NVIDIA A100 SXM4 40GB", A::kAmpere, 312, 40, 1555, 300, 0, 25, 32},
      {"a100-80g", "NVIDIA A100 SXM4 80GB", A::kAmpere, 312, 80, 2039, 300, 0, 25, 32},
      // PCIe cards without an NVLink bridge talk over PCIe Gen4 x16: 32 GB/s each way.
      {"a100-80g-pcie", "NVIDIA A100 80GB PCIe", A::kAmpere, 312, 80, 1935, 32, 0, 25, 32},
      // CUDA reports 79.22 GiB of the 80 GiB of HBM3 (vLLM 0.15.1 logs on H100 SXM).
      {"h100-sxm", "NVIDIA H100 SXM5 80GB", A::kHopper, 989.4, 79.22, 3350, 450, 1978.9, 50, 64},
      // An NVLink bridge joins two cards at most; a TP group beyond a pair crosses PCIe Gen5 x16
      // (64 GB/s each way), which is what the catalogue assumes.
      {"h100-pcie", "NVIDIA H100 PCIe 80GB", A::kHopper, 756, 80, 2000, 64, 1513, 50, 64},
      // The NVL card: 94 GB of HBM3 at 3.9 TB/s, lower clocks than the SXM part, bridged pairs.
      {"h100-nvl", "NVIDIA H100 NVL 94GB", A::kHopper, 835, 94, 3900, 300, 1670, 50, 64},
      {"h200-sxm", "NVIDIA H200 SXM 141GB", A::kHopper, 989.4, 141, 4800, 450, 1978.9, 50, 64},
      {"h200-nvl", "NVIDIA H200 NVL 141GB", A::kHopper, 835, 141, 4800, 450, 1670, 50, 64},
      // GDDR6 is sized in decimal GB: 48 GB and 24 GB are 45 and 22.5 GiB (nvidia-smi shows
      // 46068 and 23034 MiB). No NVLink: PCIe Gen4 x16, 32 GB/s each way.
      {"l40s", "NVIDIA L40S 48GB (PCIe)", A::kAda, 362, 45, 864, 32, 733, 25, 32},
      {"l4", "NVIDIA L4 24GB (PCIe)", A::kAda, 121, 22.5, 300, 32, 242.5, 25, 32},
      // Infinity Fabric: 7 links of 64 GB/s each way to the other 7 GPUs of the platform.
      {"mi300x", "AMD Instinct MI300X 192GB", A::kCdna3, 1307.4, 192, 5300, 448, 2614.9, 50, 64},
      {"b200", "NVIDIA B200 180GB", A::kBlackwell, 2250, 180, 8000, 900, 4500, 50, 64},
      // A GB200 NVL72 rack's GPU: NVIDIA's rack table (sparse FP8 720 PF, FP16/BF16 360 PF;
      // 576 TB/s of HBM3e, NVLink 5 130 TB/s) over 72 GPUs, halved for dense; nvidia-smi shows
      // 189,471 MiB (the datasheet's 186 GB). All 72 share one NVLink domain (gpus_per_node),
      // one ConnectX-7 400 Gb/s each (DGX GB200 user guide); a Grace's NVLink-C2C (900 GB/s
      // both ways) serves two GPUs: 225 GB/s each way to host memory.
      {"gb200", "NVIDIA GB200 (NVL72) 186GB", A::kBlackwell, 2500, 185.03, 8000, 900, 5000, 50, 225,
       NAN, 72},
      // AMD's datasheet: 256 GB of HBM3E at 6 TB/s (vLLM sees 255.98 GiB), MI300X's compute and
      // Infinity Fabric; the platform's NIC as MI300X's (one 400 Gb/s a GPU: not AMD-sourced).
      {"mi325x", "AMD Instinct MI325X 256GB", A::kCdna3, 1307.4, 255.98, 6000, 448, 2614.9, 50, 64},
      // Hopper for China: 96 GB of HBM3 at 4.0 TB/s (nvidia-smi 97,871 MiB), 148 dense BF16 and
      // 296 FP8 TFLOP/s, NVLink 4 (900 GB/s both ways), HGX boards of 8 (no NVIDIA datasheet is
      // public: integrators' figures; a measured BF16 GEMM reaches 142 TFLOP/s, so 148 is dense).
      {"h20", "NVIDIA H20 96GB", A::kHopper, 148, 95.58, 4000, 450, 296, 50, 64},
  };
  static const std::vector<GpuSpec> powered = [] {
    // Power (docs/design/cost-model.md, "Power"): the TDP (board power limit) and the idle draw
    // of a GPU holding a model: a bare idle GPU (Splitwise's measured A100 63 W, H100 75 W) plus
    // its CUDA context (26-50 W on HBM parts, 66 W on an L40S: Vadari 2026, arXiv 2605.23918),
    // 38 W on HBM parts; the GPUs with no idle measurement scale the nearest measured part's
    // idle by TDP. HBM's share of the span to the TDP is the architecture's.
    const std::pair<const char*, std::pair<double, double>> power[] = {
        {"a100-40g", {400, 101}}, {"a100-80g", {400, 101}}, {"a100-80g-pcie", {300, 76}},
        {"h100-sxm", {700, 113}}, {"h100-pcie", {350, 57}}, {"h100-nvl", {400, 65}},
        {"h200-sxm", {700, 113}}, {"h200-nvl", {600, 97}},  {"l40s", {350, 100}},
        {"l4", {72, 21}},         {"mi300x", {750, 121}},   {"b200", {1000, 161}},
        {"gb200", {1200, 194}},   {"mi325x", {1000, 161}},  {"h20", {400, 65}}};
    // Dense FP4 TFLOP/s, half NVIDIA's sparse figures: B200 18 PF (HGX B200), GB200 1,440 PF
    // over the rack's 72.
    const std::pair<const char*, double> fp4[] = {{"b200", 9000}, {"gb200", 10000}};
    std::vector<GpuSpec> out = gpus;
    for (GpuSpec& g : out) {
      for (const auto& [name, w] : power) {
        if (g.name == name) std::tie(g.tdp_w, g.idle_w) = w;
      }
      for (const auto& [name, tflops] : fp4) {
        if (g.name == name) g.fp4_tflops = tflops;
      }
    }
    return out;
  }();
  return powered;
}

double default_hbm_power_share(GpuArch arch) {
  return arch == GpuArch::kBlackwell ? kBlackwellHbmPowerShare : kHopperHbmPowerShare;
}

namespace {

// Names people and tools use for the catalogue's GPUs (nvidia-smi, cloud SKUs, vLLM docs,
// benchmark records), lower case, without the "nvidia " prefix, spaces as dashes.
const std::vector<std::pair<std::string, std::string>>& gpu_aliases() {
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"a100", "a100-80g"},
      {"a100-80gb", "a100-80g"},
      {"a100-sxm4-80gb", "a100-80g"},
      {"a100-sxm-80gb", "a100-80g"},
      {"a100-80gb-sxm", "a100-80g"},
      {"a100-40gb", "a100-40g"},
      {"a100-sxm4-40gb", "a100-40g"},
      {"a100-80gb-pcie", "a100-80g-pcie"},
      {"a100-pcie", "a100-80g-pcie"},
      {"a100-pcie-80gb", "a100-80g-pcie"},
      {"h100", "h100-sxm"},
      {"h100-80gb", "h100-sxm"},
      {"h100-sxm5", "h100-sxm"},
      {"h100-80gb-hbm3", "h100-sxm"},
      {"h100-sxm5-80gb", "h100-sxm"},
      {"h100-80gb-sxm", "h100-sxm"},
      {"h100-sxm-80gb", "h100-sxm"},
      {"h100-pcie-80gb", "h100-pcie"},
      {"h100-80gb-pcie", "h100-pcie"},
      {"h100-nvl-94gb", "h100-nvl"},
      {"h200", "h200-sxm"},
      {"h200-141gb", "h200-sxm"},
      {"h200-sxm-141gb", "h200-sxm"},
      {"h200-nvl-141gb", "h200-nvl"},
      {"l40s-48gb", "l40s"},
      {"l4-24gb", "l4"},
      {"mi300", "mi300x"},
      {"instinct-mi300x", "mi300x"},
      {"b200-180gb", "b200"},
      {"gb200-nvl72", "gb200"},
      {"gb200-186gb", "gb200"},
      {"instinct-mi325x", "mi325x"},
      {"mi325", "mi325x"},
      {"h20-96gb", "h20"},
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
    if (key == alias) return find_in_catalogue(gpu_catalogue(), gpu, field::kGpu, "GPU", "");
  }
  for (const GpuSpec& g : gpu_catalogue()) {
    if (key == g.name) return g;
  }
  return find_in_catalogue(
      gpu_catalogue(), name, field::kGpu, "GPU",
      "; or an alias such as H100 or A100; or describe one with " + field::ref(field::kGpuFile));
}

GpuSpec load_gpu_file(const std::string& path) {
  GpuSpec g;
  std::string arch;
  const std::set<std::string> given =
      load_ini_fields(path, {{"name", &g.name, true},
                             {"description", &g.description},
                             {"arch", &arch, true},
                             {"bf16_tflops", &g.bf16_tflops, true},
                             {"hbm_gib", &g.hbm_gib, true},
                             {"hbm_gb_per_s", &g.hbm_gb_per_s, true},
                             {"interconnect_gb_per_s", &g.interconnect_gb_per_s, true},
                             {"fp8_tflops", &g.fp8_tflops},
                             {"network_gb_per_s", &g.network_gb_per_s},
                             {"host_link_gb_per_s", &g.host_link_gb_per_s},
                             {"cost_per_hour", &g.cost_per_hour},
                             {"gpus_per_node", &g.gpus_per_node},
                             {"tdp_w", &g.tdp_w},
                             {"idle_w", &g.idle_w},
                             {"hbm_power_share", &g.hbm_power_share},
                             {"fp4_tflops", &g.fp4_tflops}});
  try {
    g.arch = parse_arch(arch);
  } catch (const Error& e) {
    throw Error(path, ini_line_of(path, "arch"), "arch", e.reason());
  }
  const std::pair<const char*, double> fields[] = {
      {"bf16_tflops", g.bf16_tflops},           {"hbm_gib", g.hbm_gib},
      {"hbm_gb_per_s", g.hbm_gb_per_s},         {"interconnect_gb_per_s", g.interconnect_gb_per_s},
      {"network_gb_per_s", g.network_gb_per_s}, {"host_link_gb_per_s", g.host_link_gb_per_s}};
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
  if (!(g.fp4_tflops == 0 || (g.fp4_tflops >= 1e-3 && g.fp4_tflops <= 1e7))) {
    throw Error(path, ini_line_of(path, "fp4_tflops"), "fp4_tflops",
                "dense FP4 TFLOP/s: 0 (no FP4 tensor cores) or a number in [1e-3, 1e7]");
  }
  if (g.fp4_tflops > 0 && g.arch != GpuArch::kBlackwell) {
    // vLLM's NVFP4 GEMMs on FP4 tensor cores (CUTLASS, FlashInfer) need SM100.
    throw Error(
        path, ini_line_of(path, "fp4_tflops"), "fp4_tflops",
        "vLLM multiplies NVFP4 on FP4 tensor cores on blackwell only; leave it out for " + arch);
  }
  if (given.count("cost_per_hour") && !(g.cost_per_hour > 0 && g.cost_per_hour <= 1e7)) {
    throw Error(path, ini_line_of(path, "cost_per_hour"), "cost_per_hour",
                "dollars per GPU-hour: a number in (0, 1e7]");
  }
  if (given.count("tdp_w") != given.count("idle_w")) {
    const char* missing = given.count("tdp_w") ? "idle_w" : "tdp_w";
    throw Error(path, ini_line_of(path, given.count("tdp_w") ? "tdp_w" : "idle_w"), missing,
                "tdp_w and idle_w come together (or neither: no energy figures)");
  }
  if (given.count("tdp_w")) {
    if (!(g.tdp_w >= 1 && g.tdp_w <= 1e5)) {
      throw Error(path, ini_line_of(path, "tdp_w"), "tdp_w", "watts: a number in [1, 1e5]");
    }
    if (!(g.idle_w >= 0 && g.idle_w <= g.tdp_w)) {
      throw Error(path, ini_line_of(path, "idle_w"), "idle_w", "watts: a number in [0, tdp_w]");
    }
  }
  if (given.count("hbm_power_share") && !given.count("tdp_w")) {
    throw Error(path, ini_line_of(path, "hbm_power_share"), "hbm_power_share",
                "shapes the power model of tdp_w and idle_w: give them too");
  }
  if (given.count("hbm_power_share") && !(g.hbm_power_share >= 0 && g.hbm_power_share <= 1)) {
    throw Error(path, ini_line_of(path, "hbm_power_share"), "hbm_power_share",
                "a share of the span from idle to TDP: a number in [0, 1]");
  }
  if (g.gpus_per_node < 1 || g.gpus_per_node > 1024) {
    throw Error(path, ini_line_of(path, "gpus_per_node"), "gpus_per_node",
                "must be an integer in [1, 1024]");
  }
  if (g.name.empty()) throw Error(path, ini_line_of(path, "name"), "name", "must not be empty");
  g.name = lowercase(g.name);
  return g;
}

}  // namespace servesim
