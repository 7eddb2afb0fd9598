#include "scheduler/policy.hpp"

#include <algorithm>
#include <string>

#include "util/error.hpp"
#include "util/lookup.hpp"

namespace servesim {

const char* policy_name(Policy p) {
  return p == Policy::kVllmV0 ? "vllm-v0" : "chunked";
}

const char* policy_summary(Policy p) {
  if (p == Policy::kVllmV0) {
    return "vLLM V0 default (v0.6-v0.8): prefill priority, whole prompts, a step is all prefill "
           "or all decode";
  }
  return "vLLM V0 --enable-chunked-prefill / Sarathi-Serve: decodes first, prefills chunked into "
         "the token budget";
}

Policy parse_policy(std::string_view name) {
  const std::string key = lowercase(name);
  std::string known;
  for (Policy p : kPolicies) {
    if (key == policy_name(p)) return p;
    known.append(known.empty() ? "" : ", ").append(policy_name(p));
  }
  throw Error("scheduler", "unknown scheduler '" + std::string(name) + "' (known: " + known + ")");
}

int64_t default_max_num_batched_tokens(Policy p, int64_t max_model_len) {
  if (chunked_prefill(p)) return 2048;
  return std::max<int64_t>(max_model_len, 2048);
}

}  // namespace servesim
