// Policy: which documented scheduler a replica runs (`servesim list schedulers`).
//  - vllm-v0: vLLM V0's default, Scheduler._schedule_default (v0.6-v0.8): prefills first; a step
//    is all prefill or all decode.
//  - chunked: vLLM V0 with --enable-chunked-prefill, Scheduler._schedule_chunked_prefill
//    (v0.6-v0.8), i.e. Sarathi-Serve stall-free batching: running requests first (decodes, then
//    partial prefills), then new prefills chunked to the remaining token budget.
// The Scheduler (scheduler/scheduler.hpp) switches on it; names exist only at the boundary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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
inline bool v1_engine(Policy p) {
  return p == Policy::kVllmV1;
}

// Whether vLLM V1 gives this GPU its large defaults: vllm/engine/arg_utils.py
// (_set_default_args_v1, v0.8-v0.11) uses 8192 tokens and 1024 sequences for the OpenAI server
// on a device with >= 70 GiB that is not an A100, else 2048 and 256.
bool v1_large_defaults(double gpu_memory_gib, const std::string& gpu_name);

// vLLM's default max_num_batched_tokens for the policy: 2048 with V0's chunked prefill (v0.6.5+,
// vllm/config.py DEFAULT_MAX_NUM_BATCHED_TOKENS), max(max_model_len, 2048) without; V1 as
// v1_large_defaults says.
int64_t default_max_num_batched_tokens(Policy p, int64_t max_model_len, bool large_gpu);
// vLLM's default max_num_seqs: 256, or 1024 for V1 on a large GPU.
int64_t default_max_num_seqs(Policy p, bool large_gpu);

}  // namespace servesim
