// Policy: which documented scheduler a replica runs (`servesim list schedulers`).
//  - vllm-v0: vLLM V0's default, Scheduler._schedule_default: prefills first; a step
//    is all prefill or all decode.
//  - chunked: vLLM V0 with --enable-chunked-prefill, Scheduler._schedule_chunked_prefill,
//    i.e. Sarathi-Serve stall-free batching: running requests first (decodes, then
//    partial prefills), then new prefills chunked to the remaining token budget.
//  - vllm-v1: vLLM V1's Scheduler.schedule(): one token budget, running requests
//    first, per-chunk KV allocation, the prefix cache.
// A policy is the scheduling algorithm only: it runs on an engine (models/engine.hpp), by default
// the one vLLM ran it on (default_engine), and the engine's runtime costs, memory plan and
// defaults are the engine's.
// The vLLM code each transcribes: scheduler/vllm_revision.hpp. make_scheduler
// (scheduler/scheduler.hpp) builds the V0Scheduler or V1Scheduler it names; names exist only at
// the boundary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "models/engine.hpp"
#include "models/gpu.hpp"

namespace servesim {

enum class Policy : uint8_t { kVllmV0, kChunked, kVllmV1 };

inline constexpr Policy kPolicies[] = {Policy::kVllmV0, Policy::kChunked, Policy::kVllmV1};

const char* policy_name(Policy p);     // "vllm-v0", "chunked", "vllm-v1"
const char* policy_summary(Policy p);  // one line, for `servesim list schedulers`

// The policy called NAME (ignoring case); Error naming --scheduler and the known names.
Policy parse_policy(std::string_view name);

// Whether vLLM's chunked prefill is on (always in V1).
inline bool chunked_prefill(Policy p) {
  return p != Policy::kVllmV0;
}

// Whether the policy is vLLM V1's scheduler.
inline bool v1_scheduler(Policy p) {
  return p == Policy::kVllmV1;
}

// The engine vLLM ran the policy on: V1 for vllm-v1, V0 for the V0 policies.
inline Engine default_engine(Policy p) {
  return v1_scheduler(p) ? Engine::kV1 : Engine::kV0;
}

// Whether vLLM V1 gives this GPU its large defaults: vllm/engine/arg_utils.py
// (_set_default_args, v0.8-v0.15) uses 8192 tokens and 1024 sequences for the OpenAI server on a
// device with >= 70 GiB that is not an A100, else 2048 and 256. vLLM reads "a100" in the device
// name; servesim reads the architecture (the A100 is the only Ampere part of >= 70 GiB), so a GPU
// file gets the defaults of what it describes, whatever its name.
bool v1_large_defaults(const GpuSpec& gpu);

// vLLM's default max_num_batched_tokens: without chunked prefill, max(max_model_len, 2048)
// (vllm/config.py SchedulerConfig, both engines); with it, 2048 on V0 (v0.6.5+,
// DEFAULT_MAX_NUM_BATCHED_TOKENS) and on V1 as v1_large_defaults says.
int64_t default_max_num_batched_tokens(Policy p, Engine e, int64_t max_model_len, bool large_gpu);
// vLLM's default max_num_seqs: 256, or 1024 on the V1 engine and a large GPU; on V1 at most the
// token budget (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args, vllm/engine/
// arg_utils.py: a max_num_seqs not given is at most max_num_batched_tokens). V0's was not.
int64_t default_max_num_seqs(Engine e, bool large_gpu, int64_t max_num_batched_tokens);

}  // namespace servesim
