// PowerModel: what a replica's GPUs draw, step by step, from the step's FLOPs and HBM bytes.
// Per GPU, a step that lasts t seconds and does F FLOPs and moves B bytes over G GPUs draws
//   P = idle + (tdp - idle) x min(1, u_c / e_c + hbm_share x u_m / e_m),
//   u_c = F / (G x peak BF16 FLOP/s x t),   u_m = B / (G x HBM bytes/s x t),
// with F counted at BF16's rate (StepCost::bf16_flops: an FP8 GEMM's FLOPs count for half of
// theirs on a GPU with FP8 tensor cores, as its time counts them), and e_c and e_m the
// architecture's fitted GEMM efficiencies (models/hardware.hpp). A GEMM at the best rate the
// hardware fit allows, whatever its precision, is compute-bound at its power limit (u_c = e_c
// draws the TDP), and a kernel that streams HBM at its best rate draws hbm_share of the span
// between idle and the TDP. Between steps (no step in flight) a GPU draws idle: a loaded model
// and its CUDA context, clocks down. The sources of each GPU's idle, TDP and hbm_share are in
// docs/design/cost-model.md ("Power and energy").
// Counted: the GPUs' board power (what nvidia-smi and NVML report, what ML.ENERGY integrates);
// not counted: CPUs, host memory, NICs, fans and the facility (capacity's --pue scales for it).
#pragma once

#include <cmath>

#include "models/cost_model.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"

namespace servesim {

class PowerModel {
 public:
  PowerModel() = default;  // unknown: every figure NaN
  // GPUS of GPU (its idle_w, tdp_w and hbm_power_share; unknown when the GPU has no tdp_w) whose
  // kernels reach HW's GEMM efficiencies.
  PowerModel(const GpuSpec& gpu, const HardwareParams& hw, int gpus);

  bool known() const { return std::isfinite(idle_w_); }
  // Watts all the GPUs draw while nothing runs.
  double idle_w() const { return idle_w_ * gpus_; }
  // Joules above idle that a step of COST adds: the span times its load, for its seconds.
  double step_excess_j(const StepCost& cost) const {
    const double flops = cost.bf16_flops > 0 ? cost.bf16_flops : cost.flops;
    const double full_load_s = flops * compute_per_flop_s_ + cost.bytes * memory_per_byte_s_;
    return span_w_ * gpus_ * std::min(std::max(cost.seconds, 0.0), full_load_s);
  }
  // Watts all the GPUs draw through a step of COST that adds EXCESS_J (step_excess_j; idle for
  // a step of no time).
  double step_w(const StepCost& cost, double excess_j) const {
    return cost.seconds > 0 ? idle_w() + excess_j / cost.seconds : idle_w();
  }
  double step_w(const StepCost& cost) const { return step_w(cost, step_excess_j(cost)); }

 private:
  double idle_w_ = NAN, span_w_ = 0;  // per GPU; span_w_ = tdp - idle
  // Seconds at full load a FLOP and a byte take (u_c / e_c and hbm_share x u_m / e_m, times the
  // step's seconds), over the group.
  double compute_per_flop_s_ = 0, memory_per_byte_s_ = 0;
  double gpus_ = 1;
};

}  // namespace servesim
