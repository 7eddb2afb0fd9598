#include "models/lora.hpp"

#include <algorithm>

namespace servesim {

bool valid_max_lora_rank(int rank) {
  for (const int r : {1, 8, 16, 32, 64, 128, 256, 320, 512}) {
    if (rank == r) return true;
  }
  return false;
}

LoraWidths lora_widths(const ModelSpec& m) {
  const double h = m.hidden_size, q = double(m.num_heads) * m.head_dim,
               kv = double(m.num_kv_heads) * m.head_dim;
  // A mixture of experts: every expert's gate_up and down have their own A and B.
  const double experts = m.num_experts > 1 ? m.num_experts : 1;
  const double inter = double(m.intermediate_size);
  LoraWidths w;
  w.col_in = h + experts * h;                      // qkv, gate_up
  w.col_out = (q + 2 * kv) + experts * 2 * inter;  // q, k and v; gate and up
  w.row_in = q + experts * inter;                  // o, down
  w.row_out = h + experts * h;
  w.in = w.col_in + w.row_in;
  w.out = w.col_out + w.row_out;
  return w;
}

double lora_adapter_bytes(const ModelSpec& m, int rank) {
  const LoraWidths w = lora_widths(m);
  return double(rank) * (w.in + w.out) * m.num_layers * m.dtype_bytes;
}

double lora_buffer_bytes_per_gpu(const ModelSpec& m, int tp, int max_loras, int max_rank) {
  const LoraWidths w = lora_widths(m);
  const double t = tp;
  // Column-parallel: A whole, B's output split; row-parallel: A's input split, B whole.
  const double per_rank = w.col_in + w.col_out / t + w.row_in / t + w.row_out;
  return double(max_loras) * max_rank * per_rank * m.num_layers * m.dtype_bytes;
}

LoraKernels::LoraKernels(const GpuSpec& gpu, const ModelSpec& m, int tp, const HardwareParams& hw,
                         const EngineParams& engine, int rank) {
  const LoraWidths w = lora_widths(m);
  // Per token, a mixture of experts runs the LoRA of its top-k experts only.
  const double experts = m.num_experts > 1 ? m.num_experts : 1;
  const double active = m.num_experts > 1 ? double(m.experts_per_token) / experts : 1.0;
  const double h = m.hidden_size, inter = m.intermediate_size;
  const double attn_in = h + double(m.num_heads) * m.head_dim;
  const double attn_out = double(m.num_heads + 2 * m.num_kv_heads) * m.head_dim + h;
  const double mlp_in = (h + inter) * experts * active,
               mlp_out = (2 * inter + h) * experts * active;
  const double in = attn_in + mlp_in, out = attn_out + mlp_out;
  flops_per_token_ = 2.0 * rank * (in + out) * m.num_layers;
  act_bytes_per_token_ = (in + 2 * out) * m.num_layers * m.dtype_bytes;
  adapter_bytes_ = double(rank) * (w.in + w.out) * m.num_layers * m.dtype_bytes;
  const double graph = graphs_every_step(engine.engine) ? engine.floor_fraction : 1.0;
  floor_s_ = hw.linear_latency_s_per_layer * m.num_layers * graph;
  flops_s_ = gpu.peak_flops() * tp * hw.linear_compute_efficiency;
  bytes_s_ = gpu.hbm_bytes_per_s() * tp * hw.linear_memory_efficiency;
}

StepCost LoraKernels::cost(double tokens, int adapters) const {
  StepCost c;
  if (tokens <= 0 || adapters <= 0) return c;
  c.flops = flops_per_token_ * tokens;
  c.bytes = adapter_bytes_ * adapters + act_bytes_per_token_ * tokens;
  c.lora_s = floor_s_ + std::max(c.flops / flops_s_, c.bytes / bytes_s_);
  c.seconds = c.lora_s;
  return c;
}

}  // namespace servesim
