// V1Scheduler: vLLM V1's Scheduler.schedule() (vllm/v1/core/sched/scheduler.py at the revision of
// scheduler/vllm_revision.hpp), policy vllm-v1, over V1's KV cache manager and its prefix cache,
// with speculative decoding (scheduler/spec_decode.hpp) and KV offload to the CPU
// (scheduler/kv_offload.hpp) and LoRA adapters' limit per step; without encoders. "There's no
// decoding phase nor prefill
// phase": each request just has tokens not yet computed (its drafts among them), and each step
// gives them budget:
//  - `running` first, in order: each its new tokens (capped by long_prefill_token_threshold and
//    the budget); allocate_slots, and when it fails preempt the lowest-priority request (the
//    tail of `running`, or under the priority policy the largest (priority, arrival)), itself
//    last;
//  - then, only if nothing was preempted, `skipped_waiting` and `waiting` (FCFS: the skipped
//    first; priority: the better head): a request whose LoRA adapter would be one more than
//    max_loras in the step is skipped, not waited for; the prefix cache's hit, the CPU tier's (a
//    request whose KV loads, or that must wait for it, is skipped to the next step), then
//    allocate_slots, until the budget, max_num_seqs or the cache stops.
// A scheduled request's tokens count as computed at once (_update_after_schedule), and one that
// samples, under async scheduling (vllm/v1/core/sched/async_scheduler.py AsyncScheduler), holds a
// placeholder for its token until the step's output is applied: the next step is scheduled
// before that, with the placeholder as a token to compute, and a request whose last token is in
// flight is not scheduled again.
#pragma once

#include <memory>
#include <vector>

#include "scheduler/kv_cache_manager.hpp"
#include "scheduler/kv_offload.hpp"
#include "scheduler/scheduler.hpp"
#include "scheduler/waiting_queue.hpp"

namespace servesim {

class V1Scheduler final : public Scheduler {
 public:
  // REQUIRES: CONFIG's policy is vllm-v1, resolved; num_gpu_blocks >= 2 (the count includes the
  // null block).
  V1Scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks, size_t num_requests,
              const BlockHasher* hasher = nullptr);

  void reserve(size_t num_requests) override;
  bool schedules_ahead() const override { return config_.async_scheduling; }
  size_t num_waiting() const override { return waiting_.size() + skipped_.size(); }
  int64_t used_blocks() const override { return kv_.used_blocks(); }
  int64_t usable_blocks() const override { return kv_.usable_blocks(); }
  bool reset_prefix_cache() override { return kv_.reset_prefix_cache(); }
  const KvCacheManager* kv_cache_manager() const override { return &kv_; }
  void set_kv_event_sink(KvEventSink* sink) override { kv_.set_event_sink(sink); }
  const SpecDecodeStats* spec_decode_stats() const override {
    return config_.spec.enabled() ? &spec_stats_ : nullptr;
  }
  const KvOffloadConnector* kv_offload() const override { return offload_.get(); }
  int64_t lora_skips() const override { return lora_skips_; }
  std::span<const KvTransfer> kv_transfers() const override {
    return offload_ ? offload_->transfers() : std::span<const KvTransfer>{};
  }
  void kv_transfers_done(size_t loads, size_t stores) override {
    if (offload_) offload_->transfers_done(loads, stores);
  }

  // FCFS: `waiting`, in order (under the priority policy it is a heap: use num_waiting()).
  const RequestQueue& waiting() const { return waiting_.fifo(); }
  // `skipped_waiting`: requests skipped by earlier steps (a KV load in flight), served first.
  const WaitingQueue& skipped_waiting() const { return skipped_; }
  // `waiting` whatever the policy.
  const WaitingQueue& waiting_queue() const { return waiting_; }

 private:
  RejectReason engine_reject(const SeqState& s, int64_t lifetime) const override;
  void enqueue(uint32_t id) override;
  void add_request_slot() override {
    kv_.add_request_slot();
    if (offload_) offload_->add_request_slot();
  }
  void free_request(uint32_t id) override;
  // Frees ID's blocks; PREEMPTED: it waits to run again (KvCacheManager::free).
  void release(uint32_t id, bool preempted);
  void schedule_step() override;
  // update_from_output for one request: its sampled token (a request preempted since it was
  // scheduled gets it too) and the drafts accepted before it (the rejected ones' computed tokens
  // rolled back), the stop at max_tokens, under async scheduling the blocks its tokens now fill
  // cached (AsyncScheduler._update_request_with_output), and without it the drafter's next
  // proposals (update_draft_token_ids).
  [[gnu::always_inline]] inline int32_t apply(uint32_t id, const SeqShape& shape);
  void apply_batch(const Batch& b, Applied* out) override;
  // The drafts accepted by the apply() of an entry of SHAPE just now (-1: it verified none).
  int16_t accepted_by(const SeqShape& shape) const {
    return shape.draft_tokens > 0 ? last_accepted_ : int16_t(-1);
  }
  int16_t last_accepted_ = -1;
  friend class Scheduler;  // apply_each

  void schedule_running(int64_t& token_budget);
  // Request ID enters the batch with NEW_TOKENS, which count as computed at once
  // (_update_after_schedule), its drafts among them; one that will sample holds placeholders
  // for its token and drafts under async scheduling, and its next drafts.
  [[gnu::always_inline]] inline void schedule_tokens(uint32_t id, int64_t new_tokens);
  // Takes ID, scheduled earlier in this step, out of the batch again; returns its tokens.
  int64_t unschedule(uint32_t id);
  void schedule_waiting(int64_t& token_budget);
  // The waiting queue the policy serves next (_select_waiting_queue_for_scheduling).
  WaitingQueue& next_waiting_queue();
  // _try_promote_blocked_waiting_request: ID's KV load is done: cache its blocks; on a full
  // prompt hit the last token is computed again (_update_waiting_for_remote_kv).
  void promote(uint32_t id);
  // The preemption victim: the tail of `running`, or under the priority policy the request with
  // the largest (priority, arrival_s), the first in `running` among equals.
  uint32_t victim();
  // Whether waiting requests are a heap (the priority policy, or a hook's admission key), and
  // ordered by a hook's key.
  static bool keyed(const SchedulerConfig& c) {
    return c.hooks != nullptr && c.hooks->orders_admission();
  }
  static bool ordered(const SchedulerConfig& c) {
    return c.scheduling_policy == WaitingOrder::kPriority || keyed(c);
  }
  // _preempt_request: free its blocks (they stay cached, to be hit on re-admission), recompute
  // from 0, back to the front of `waiting`.
  void preempt(uint32_t id);
  // Takes ID out of whichever waiting queue holds it (a preempted request whose last token came
  // back).
  void waiting_remove(uint32_t id);

  KvCacheManager kv_;
  std::vector<double> keys_;  // a hook's admission key, by request id
  WaitingQueue waiting_, skipped_;
  std::vector<uint32_t> step_skipped_;  // skipped in this step, in order
  std::unique_ptr<KvOffloadConnector> offload_;
  SpecDecodeStats spec_stats_;
  // The drafts a sampling request holds for its next step (0 without speculative decoding), and
  // the drafter's lookahead KV slots, read once per scheduled request.
  uint8_t spec_tokens_ = 0;
  int64_t lookahead_ = 0;
  // The LoRA adapters of this step's batch so far (scheduled_loras), and the requests passed
  // over for want of an adapter slot.
  std::vector<uint16_t> scheduled_loras_;
  int64_t lora_skips_ = 0;
};

}  // namespace servesim
