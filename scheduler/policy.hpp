// Policy: which documented scheduler a replica runs (`servesim list schedulers`).
//  - vllm-v0: vLLM V0's default, Scheduler._schedule_default (v0.6-v0.8): prefills first; a step
//    is all prefill or all decode.
//  - chunked: vLLM V0 with --enable-chunked-prefill, Scheduler._schedule_chunked_prefill
//    (v0.6-v0.8), i.e. Sarathi-Serve stall-free batching: running requests first (decodes, then
//    partial prefills), then new prefills chunked to the remaining token budget.
// The Scheduler (scheduler/scheduler.hpp) switches on it; names exist only at the boundary.
#pragma once

#include <cstdint>
#include <string_view>

namespace servesim {

enum class Policy : uint8_t { kVllmV0, kChunked };

inline constexpr Policy kPolicies[] = {Policy::kVllmV0, Policy::kChunked};

const char* policy_name(Policy p);     // "vllm-v0", "chunked"
const char* policy_summary(Policy p);  // one line, for `servesim list schedulers`

// The policy called NAME (ignoring case); Error naming --scheduler and the known names.
Policy parse_policy(std::string_view name);

// Whether vLLM's chunked prefill is on.
inline bool chunked_prefill(Policy p) {
  return p == Policy::kChunked;
}

// vLLM's default max_num_batched_tokens for the policy: 2048 with chunked prefill (v0.6.5+,
// vllm/config.py DEFAULT_MAX_NUM_BATCHED_TOKENS), max(max_model_len, 2048) without.
int64_t default_max_num_batched_tokens(Policy p, int64_t max_model_len);

}  // namespace servesim
