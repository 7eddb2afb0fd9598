#include "scheduler/policy.hpp"

#include <algorithm>

#include "scheduler/scheduler.hpp"
#include "util/lookup.hpp"

namespace servesim {
namespace {

// vLLM V0 Scheduler._schedule_default (v0.6-v0.8): prefill priority.
class VllmV0Policy final : public Policy {
 public:
  void schedule(Scheduler& s) override {
    const SchedulerConfig& c = s.config();
    SchedulingBudget budget{c.max_num_batched_tokens, c.max_num_seqs};
    // "Make sure we include num running seqs before scheduling prefill": running requests hold
    // their max_num_seqs slots first.
    budget.add_num_seqs(static_cast<int64_t>(s.running().size()));
    s.schedule_prefills(budget, /*enable_chunking=*/false);
    // "Don't schedule decodes if prefills are scheduled": a step is all prefill or all decode.
    if (s.batch().empty()) s.schedule_running(budget, /*enable_chunking=*/false);
  }
};

// vLLM V0 Scheduler._schedule_chunked_prefill (v0.6-v0.8): "decoding should be always scheduled
// first by fcfs", then new prefills chunked into what remains of the token budget.
class ChunkedPolicy final : public Policy {
 public:
  void schedule(Scheduler& s) override {
    const SchedulerConfig& c = s.config();
    SchedulingBudget budget{c.max_num_batched_tokens, c.max_num_seqs};
    s.schedule_running(budget, /*enable_chunking=*/true);
    s.schedule_prefills(budget, /*enable_chunking=*/true);
  }
};

}  // namespace

const std::vector<PolicyInfo>& policy_catalogue() {
  static const std::vector<PolicyInfo> policies = {
      {"vllm-v0",
       "vLLM V0 default (v0.6-v0.8): prefill priority, whole prompts, a step is all prefill or "
       "all decode",
       false},
      {"chunked",
       "vLLM V0 --enable-chunked-prefill / Sarathi-Serve: decodes first, prefills chunked into "
       "the token budget",
       true},
  };
  return policies;
}

const PolicyInfo& find_policy(const std::string& name) {
  return find_in_catalogue(policy_catalogue(), name, "scheduler", "scheduler", "");
}

int64_t default_max_num_batched_tokens(const std::string& policy, int64_t max_model_len) {
  if (find_policy(policy).chunked_prefill) return 2048;
  return std::max<int64_t>(max_model_len, 2048);
}

std::unique_ptr<Policy> make_policy(const SchedulerConfig& config) {
  if (find_policy(config.policy).chunked_prefill) return std::make_unique<ChunkedPolicy>();
  return std::make_unique<VllmV0Policy>();
}

}  // namespace servesim
