#include "models/power.hpp"

namespace servesim {

PowerModel::PowerModel(const GpuSpec& gpu, const HardwareParams& hw, int gpus) {
  if (!std::isfinite(gpu.tdp_w) || !std::isfinite(gpu.idle_w)) return;
  idle_w_ = gpu.idle_w;
  span_w_ = std::max(0.0, gpu.tdp_w - gpu.idle_w);
  gpus_ = double(gpus);
  const double share =
      std::isfinite(gpu.hbm_power_share) ? gpu.hbm_power_share : default_hbm_power_share(gpu.arch);
  compute_per_flop_s_ = 1.0 / (gpus_ * gpu.peak_flops() * hw.linear_compute_efficiency);
  memory_per_byte_s_ = share / (gpus_ * gpu.hbm_bytes_per_s() * hw.linear_memory_efficiency);
}

}  // namespace servesim
