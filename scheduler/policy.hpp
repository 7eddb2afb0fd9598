// Policy: which of the Scheduler's steps run, in which order, to build one batch; each policy
// models one documented scheduler and is named after it (`servesim list schedulers`).
//  - vllm-v0: vLLM V0's default (Scheduler._schedule_default): prefills first; a step is all
//    prefill or all decode.
//  - chunked: vLLM V0 with --enable-chunked-prefill (Scheduler._schedule_chunked_prefill), i.e.
//    Sarathi-Serve stall-free batching: running requests first (decodes, then partial
//    prefills), then new prefills chunked to the remaining token budget.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace servesim {

class Scheduler;
struct SchedulerConfig;

class Policy {
 public:
  virtual ~Policy() = default;
  // Fills the scheduler's batch for the next step.
  virtual void schedule(Scheduler& s) = 0;
};

struct PolicyInfo {
  std::string name;
  std::string summary;
  bool chunked_prefill;  // whether vLLM's chunked prefill is on
};

const std::vector<PolicyInfo>& policy_catalogue();

// The info for a policy name, or Error naming the known ones.
const PolicyInfo& find_policy(const std::string& name);

// vLLM's default max_num_batched_tokens for the policy: 2048 with chunked prefill (v0.6.5+,
// vllm/config.py DEFAULT_MAX_NUM_BATCHED_TOKENS), max(max_model_len, 2048) without.
int64_t default_max_num_batched_tokens(const std::string& policy, int64_t max_model_len);

std::unique_ptr<Policy> make_policy(const SchedulerConfig& config);

}  // namespace servesim
