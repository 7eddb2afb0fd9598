// SchedulingBudget: the token and sequence budget one scheduling step may spend, as vLLM V0's
// SchedulingBudget (vllm/core/scheduler.py). Every admission asks can_schedule first.
// Promises: num_batched_tokens <= token_budget and num_curr_seqs <= max_num_seqs for everything
// added after a successful can_schedule (running decodes counted up front may exceed it).
#pragma once

#include <cstdint>

namespace servesim {

struct SchedulingBudget {
  int64_t token_budget;
  int64_t max_num_seqs;
  int64_t num_batched_tokens = 0;
  int64_t num_curr_seqs = 0;

  bool can_schedule(int64_t num_new_tokens, int64_t num_new_seqs) const {
    return num_batched_tokens + num_new_tokens <= token_budget &&
           num_curr_seqs + num_new_seqs <= max_num_seqs;
  }
  int64_t remaining_token_budget() const { return token_budget - num_batched_tokens; }
  void add_num_batched_tokens(int64_t n) { num_batched_tokens += n; }
  void add_num_seqs(int64_t n) { num_curr_seqs += n; }
};

}  // namespace servesim
