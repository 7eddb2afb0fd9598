// V0Scheduler: vLLM V0's Scheduler (vllm/core/scheduler.py at the revision of
// scheduler/vllm_revision.hpp), with the same names, over V0's block manager:
//  - _schedule_default (Policy::kVllmV0): running requests hold their sequence slots first;
//    _schedule_prefills; only if no prefill was scheduled, _schedule_running.
//  - _schedule_chunked_prefill (Policy::kChunked): _schedule_running with chunking, then
//    _schedule_prefills chunked into what remains of the token budget.
//  - _schedule_running: walk `running` in order; give each its tokens (1 for a decode, the rest
//    of its prefill, cut to the remaining budget when chunking); when a request cannot append
//    its slots, preempt by recompute the tail of `running` (or itself when it is the last).
//  - _schedule_prefills: walk `waiting` FCFS; stop at the first request the block manager or
//    the budget cannot take (no skipping).
// After each schedule the budget invariants are asserted, as vLLM asserts them.
#pragma once

#include "scheduler/block_manager.hpp"
#include "scheduler/budget.hpp"
#include "scheduler/scheduler.hpp"

namespace servesim {

class V0Scheduler final : public Scheduler {
 public:
  // REQUIRES: CONFIG's policy is vllm-v0 or chunked, resolved; num_gpu_blocks > 0.
  V0Scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks, size_t num_requests);

  void schedule_step() override;
  size_t num_waiting() const override { return waiting_.size(); }
  int64_t used_blocks() const override { return blocks_.used_blocks(); }
  int64_t usable_blocks() const override { return blocks_.total_blocks(); }
  // V0's block manager has no prefix cache: true when it holds nothing.
  bool reset_prefix_cache() override { return blocks_.used_blocks() == 0; }

  // `waiting`, in order.
  const RequestQueue& waiting() const { return waiting_; }
  const BlockManager& block_manager() const { return blocks_; }

 private:
  RejectReason engine_reject(const SeqState& s, int64_t lifetime) const override;
  void enqueue(uint32_t id) override { waiting_.push_back(id); }
  void free_request(uint32_t id) override { blocks_.free(seqs_[id]); }
  // The step's tokens are computed now (update_num_computed_tokens); one that completes the
  // known tokens samples, and at max_tokens the request finishes and frees its blocks (free_seq).
  [[gnu::always_inline]] inline int32_t apply(uint32_t id, const SeqShape& shape);
  void apply_batch(const Batch& b, Applied* out) override;
  static int16_t accepted_by(const SeqShape&) { return -1; }  // no drafts on V0
  friend class Scheduler;                                     // apply_each

  void schedule_default(SchedulingBudget& budget);
  void schedule_chunked_prefill(SchedulingBudget& budget);
  void schedule_running(SchedulingBudget& budget, bool enable_chunking);
  void schedule_prefills(SchedulingBudget& budget, bool enable_chunking);
  // vLLM _get_prompt_limit(): the longest prompt a step may hold.
  int64_t prompt_limit() const;
  int64_t chunk(int64_t num_new_tokens, const SchedulingBudget& budget, bool enable_chunking) const;
  // _preempt_by_recompute: free the blocks; the request goes back to `waiting` at the end of the
  // step (schedule()).
  void preempt(uint32_t id);

  RequestQueue waiting_;
  BlockManager blocks_;
};

}  // namespace servesim
