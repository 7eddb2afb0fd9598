// Engine: the vLLM engine runtime a replica runs, apart from the scheduling policy it runs and the
// hardware under it. An engine owns what a step costs outside the model's kernels: the host CPU's
// work per step (scheduling, preparing inputs, processing outputs), the GPU-side work around the
// model (input copies, the sampler), and how its kernels are launched (eager, CUDA graphs,
// torch.compile). These are the host's and the runtime's, not the GPU's: the same values apply on
// every GPU (ARCHITECTURE.md, models/).
//  - V0 (vllm/engine/llm_engine.py, v0.6-v0.8): the CPU work runs between steps, never overlapped;
//    decode-only steps replay CUDA graphs (ModelInputForGPUBuilder._use_captured_graph: every
//    batch up to the captured size >= max_num_seqs, context <= max_seq_len_to_capture 8192);
//    steps with a prefill run eager.
//  - V1 (vllm/v1/engine/core.py, v0.8-v0.15): torch.compile fuses the model and every step
//    replays (piecewise) CUDA graphs; with async scheduling (on by default, v0.15) the CPU
//    prepares step N+1 while the GPU runs step N (EngineCore.step_with_batch_queue), so a
//    back-to-back step costs the longer of the two (sim/host.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware.hpp"

namespace servesim {

enum class Engine : uint8_t { kV0, kV1 };

const char* engine_name(Engine e);  // "v0", "v1"
// The engine called NAME ("v0", "v1", ignoring case); Error naming --engine otherwise.
Engine parse_engine(std::string_view name);

// The engine's own rules, consulted here rather than branched on by the layers that use them
// (issue 45). Inline: the roofline asks graphs_every_step once a step.
// Whether the engine has EngineCore's batch queue (V1, step_with_batch_queue): async scheduling.
inline bool has_batch_queue(Engine e) {
  return e == Engine::kV1;
}
// Whether every step replays a CUDA graph (V1's piecewise graphs under torch.compile), rather
// than decode-only steps alone (V0).
inline bool graphs_every_step(Engine e) {
  return e == Engine::kV1;
}
// Whether the engine sizes its KV cache by V1's profile run (gpu_worker.determine_available_memory:
// the sampler's peak, the rotary cache on every GPU), rather than V0's (models/memory_plan.hpp).
inline bool v1_memory_profile(Engine e) {
  return e == Engine::kV1;
}

struct EngineParams {
  Engine engine = Engine::kV0;
  // The host CPU's work of one step, per step and per sequence in the batch. V0 adds it to the
  // step; V1 under async scheduling overlaps it with the GPU's.
  double cpu_s = 0;
  double cpu_s_per_seq = 0;
  // GPU-side work of a step outside the model's kernels that no CPU/GPU overlap hides (input and
  // sampling-metadata copies, the sampler, the step's synchronisation).
  double step_s = 0;
  double step_s_per_seq = 0;
  // The per-layer kernel floors (models/hardware.hpp) of a step replayed as a CUDA graph, as a
  // fraction of the eager floors: graphs remove the launch gaps between kernels, and V1's
  // torch.compile fuses the element-wise kernels too (1 = as eager). V0 applies it to decode-only
  // steps, V1 to every step.
  double floor_fraction = 1;
};

// vLLM's engines as servesim models them (values and sources in engine.cpp and
// docs/design/cost-model.md).
EngineParams engine_params(Engine e);
// Where E's parameters come from, in a sentence.
std::string engine_source(Engine e);

// The engine's parameters by INI key, "v0_cpu_s", "v1_floor_fraction", ...: each engine's
// fields under its own prefix.
struct EngineParamField {
  std::string name;  // with the engine's prefix
  Engine engine;
  double EngineParams::*member;
  double min, max;
};
const std::vector<EngineParamField>& engine_param_fields();

}  // namespace servesim
