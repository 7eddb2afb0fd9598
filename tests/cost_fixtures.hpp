// Shared cost-model fixtures: a tiny model whose FLOPs and bytes are counted by hand, a GPU slow
// enough that they read directly as seconds, and roofline parameters with every efficiency at 1.
#pragma once

#include "models/gpu.hpp"
#include "models/model.hpp"
#include "models/roofline.hpp"

namespace servesim::test {

// 2 layers, hidden 8, 2 heads of 4 (8 query dims), 1 KV head (4 dims), MLP 16, vocab 32.
inline ModelSpec tiny_model() {
  ModelSpec m;
  m.name = "tiny";
  m.num_layers = 2;
  m.hidden_size = 8;
  m.num_heads = 2;
  m.num_kv_heads = 1;
  m.head_dim = 4;
  m.intermediate_size = 16;
  m.vocab_size = 32;
  m.max_position = 1000;
  return m;
}

// 1000 FLOP/s (FP8: FP8_TFLOPS, 0 = none) and 1000 bytes/s, so FLOPs and bytes read directly as
// milliseconds x 1000.
inline GpuSpec slow_gpu(double fp8_tflops = 0) {
  GpuSpec g{"slow", "", GpuArch::kAmpere, 1e-9, 1, 1e-6, 1e-6};
  g.fp8_tflops = fp8_tflops;
  return g;
}

inline RooflineParams ideal_params() {
  RooflineParams p;
  p.hw.linear_compute_efficiency = p.hw.linear_memory_efficiency = 1;
  p.hw.elementwise_memory_efficiency = 1;
  p.hw.attention_compute_efficiency = p.hw.attention_memory_efficiency = 1;
  p.hw.interconnect_efficiency = 1;
  p.hw.elementwise_floor_s_per_layer = p.hw.attention_floor_s_per_layer = 0;
  p.hw.allreduce_latency_s = 0;
  p.engine = EngineParams{};  // V0, nothing outside the kernels, eager floors
  return p;
}

}  // namespace servesim::test
