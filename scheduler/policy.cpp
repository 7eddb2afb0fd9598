#include "scheduler/policy.hpp"

#include <algorithm>
#include <string>

#include "util/error.hpp"
#include "util/lookup.hpp"

namespace servesim {

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kVllmV0:
      return "vllm-v0";
    case Policy::kChunked:
      return "chunked";
    case Policy::kVllmV1:
      return "vllm-v1";
  }
  return "chunked";
}

const char* policy_summary(Policy p) {
  if (p == Policy::kVllmV0) {
    return "vLLM V0 default (v0.6-v0.8): prefill priority, whole prompts, a step is all prefill "
           "or all decode";
  }
  if (p == Policy::kChunked) {
    return "vLLM V0 --enable-chunked-prefill / Sarathi-Serve: decodes first, prefills chunked "
           "into the token budget";
  }
  return "vLLM V1 (v0.8+ default): one token budget, running first, per-chunk KV allocation, "
         "prefix cache";
}

Policy parse_policy(std::string_view name) {
  const std::string key = lowercase(name);
  std::string known;
  for (Policy p : kPolicies) {
    if (key == policy_name(p)) return p;
    known.append(known.empty() ? "" : ", ").append(policy_name(p));
  }
  throw Error(field::kScheduler,
              "unknown scheduler '" + std::string(name) + "' (known: " + known + ")");
}

bool v1_large_defaults(const GpuSpec& gpu) {
  return gpu.hbm_gib >= 70 && gpu.arch != GpuArch::kAmpere;
}

int64_t default_max_num_batched_tokens(Policy p, Engine e, int64_t max_model_len, bool large_gpu) {
  if (!chunked_prefill(p)) return std::max<int64_t>(max_model_len, 2048);
  if (e == Engine::kV1) return large_gpu ? 8192 : 2048;
  return 2048;
}

int64_t default_max_num_seqs(Engine e, bool large_gpu, int64_t max_num_batched_tokens) {
  if (e != Engine::kV1) return 256;
  return std::min<int64_t>(large_gpu ? 1024 : 256, max_num_batched_tokens);
}

}  // namespace servesim
