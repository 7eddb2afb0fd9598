// Scheduler: one replica's request queues and KV block manager, scheduling each step the way
// vLLM V0's Scheduler does (vllm/core/scheduler.py, v0.6-v0.8), with the same names:
//  - _schedule_default (Policy::kVllmV0): running requests hold their sequence slots first;
//    _schedule_prefills; only if no prefill was scheduled, _schedule_running.
//  - _schedule_chunked_prefill (Policy::kChunked): _schedule_running with chunking, then
//    _schedule_prefills chunked into what remains of the token budget.
//  - _schedule_running: walk `running` in order; give each its tokens (1 for a decode, the rest
//    of its prefill, cut to the remaining budget when chunking); when a request cannot append
//    its slots, preempt by recompute the tail of `running` (or itself when it is the last).
//  - _schedule_prefills: walk `waiting` FCFS; stop at the first request the block manager or
//    the budget cannot take (no skipping).
// After each schedule the budget invariants are asserted, as vLLM asserts them. The Scheduler
// never reads the clock: the host asks for a batch, runs it, and reports its completion.
// Promises: every request added is, at every moment, in exactly one of pending, waiting, running,
// finished or rejected; KV blocks never exceed the cache; schedule() and update_from_output()
// allocate nothing once warm.
#pragma once

#include <algorithm>
#include <boost/circular_buffer.hpp>
#include <cassert>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "scheduler/batch.hpp"
#include "scheduler/block_manager.hpp"
#include "scheduler/budget.hpp"
#include "scheduler/kv_cache_manager.hpp"
#include "scheduler/policy.hpp"
#include "scheduler/sequence.hpp"

namespace servesim {

// vLLM V1's --scheduling-policy.
enum class SchedulingPolicy : uint8_t { kFcfs, kPriority };

struct SchedulerConfig {
  Policy policy = Policy::kChunked;
  int64_t max_num_batched_tokens = 0;  // 0 = the policy's vLLM default
  int64_t max_num_seqs = 0;            // 0 = the policy's vLLM default
  int64_t max_model_len = 0;           // must be set (the model's max_position by default)
  int block_size = 16;
  double watermark = 0.01;  // vLLM CacheConfig default; not a CLI flag in vLLM
  bool enable_prefix_caching = false;
  // vLLM V1 only.
  SchedulingPolicy scheduling_policy = SchedulingPolicy::kFcfs;
  int64_t long_prefill_token_threshold = 0;  // 0 = no cap
  bool async_scheduling = true;
  bool reserve_full_isl = true;  // vLLM scheduler_reserve_full_isl
};

// A FIFO that the scheduler pops at both ends and grows when full (amortised, never per step in
// steady state).
class RequestQueue {
 public:
  explicit RequestQueue(size_t capacity = 64) : q_(capacity) {}
  bool empty() const { return q_.empty(); }
  size_t size() const { return q_.size(); }
  uint32_t front() const { return q_.front(); }
  uint32_t back() const { return q_.back(); }
  uint32_t operator[](size_t i) const { return q_[i]; }
  void pop_front() { q_.pop_front(); }
  void pop_back() { q_.pop_back(); }
  void push_back(uint32_t id) {
    grow();
    q_.push_back(id);
  }
  void push_front(uint32_t id) {
    grow();
    q_.push_front(id);
  }
  template <class Pred>
  void remove_if(Pred pred) {
    q_.erase(std::remove_if(q_.begin(), q_.end(), pred), q_.end());
  }

 private:
  void grow() {
    if (q_.full()) q_.set_capacity(q_.capacity() * 2);
  }
  boost::circular_buffer<uint32_t> q_;
};

class Scheduler {
 public:
  // REQUIRES: config.max_num_batched_tokens > 0, max_num_seqs > 0 and max_model_len > 0
  // (resolved); num_gpu_blocks > 0 (>= 2 for vllm-v1, whose count includes the null block).
  // Requests have ids 0..num_requests-1. HASHER names block contents for the prefix cache (when
  // on); it must outlive the scheduler.
  Scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks, size_t num_requests,
            const BlockHasher* hasher = nullptr);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  // Room for NUM_REQUESTS requests in all, for a scheduler that grows (built with none).
  void reserve(size_t num_requests);

  // The front end's checks, then `waiting` (vLLM add_seq_group). Returns why the request was
  // rejected, or kNone.
  // ARRIVAL_S orders requests of equal priority under the priority policy (vLLM compares
  // (priority, arrival_time)); a negative value stands for the id, i.e. distinct times in id order.
  // REQUIRES: ID < num_requests (or == it: the scheduler grows, for a fleet's replica, which
  // numbers its requests as they come), not added before; input_tokens >= 1, output_tokens >= 1.
  // EXTERNAL_TOKENS (vllm-v1 only, < input_tokens): leading prompt tokens whose KV arrived from
  // a prefill instance: allocated at the first scheduling but not computed, as vLLM V1 does with
  // a KV connector's matched tokens (the first hit of the local prefix cache counts first).
  RejectReason add_request(uint32_t id, int32_t input_tokens, int32_t output_tokens,
                           int32_t priority = 0, double arrival_s = -1,
                           int32_t external_tokens = 0);

  // Decides the next step (vLLM Scheduler.schedule()).
  const Batch& schedule();

  // Applies the step schedule() returned once it has run: every entry's tokens are computed; an
  // entry whose known tokens are all computed samples one token, calling
  // ON_TOKEN(id, first_token, finished); finished requests free their blocks and leave `running`
  // (vLLM free_finished_seq_groups). The one way a finished batch is applied (vLLM V0's
  // LLMEngine._process_model_outputs, V1's Scheduler.update_from_output).
  // REQUIRES: schedule() was called since the last update_from_output().
  template <class OnToken>
  void update_from_output(OnToken&& on_token);

  const Batch& batch() const { return batch_; }
  // The requests this step admitted from `waiting` (first scheduled, or re-admitted after a
  // preemption).
  std::span<const uint32_t> new_prefills() const { return out_.new_prefills; }
  const SeqState& seq(uint32_t id) const { return seqs_[id]; }
  // Every request's state, indexed by id.
  std::span<const SeqState> seqs() const { return seqs_; }
  // V0 and FCFS: `waiting` in order. Use num_waiting() for its size under any policy.
  const RequestQueue& waiting() const { return waiting_; }
  size_t num_waiting() const { return waiting_.size() + waiting_heap_.size(); }
  const RequestQueue& running() const { return running_; }
  // V0's block manager (vllm-v0, chunked); V1's KV cache manager (vllm-v1).
  const BlockManager& block_manager() const { return blocks_; }
  const KvCacheManager* kv_cache_manager() const { return kv_.get(); }
  // Empties the prefix cache (V1; nothing to do on V0's block manager): false while requests
  // hold blocks.
  bool reset_prefix_cache() { return kv_ ? kv_->reset_prefix_cache() : blocks_.used_blocks() == 0; }
  // KV blocks in use and usable, whichever manager the policy runs.
  int64_t used_blocks() const { return kv_ ? kv_->used_blocks() : blocks_.used_blocks(); }
  int64_t usable_blocks() const { return kv_ ? kv_->usable_blocks() : blocks_.total_blocks(); }
  // Tokens this step found in the prefix cache (new requests' hits).
  int64_t step_cached_tokens() const { return step_cached_tokens_; }
  const SchedulerConfig& config() const { return config_; }
  int64_t num_preemptions() const { return num_preemptions_; }
  // Computed tokens thrown away by preemption (they are computed again on re-admission).
  int64_t discarded_tokens() const { return discarded_tokens_; }

 private:
  // vLLM's SchedulerRunningOutputs / SchedulerPrefillOutputs, reused every step.
  struct StepOutputs {
    std::vector<uint32_t> decodes, prefills, new_prefills, preempted;
    void clear() {
      decodes.clear();
      prefills.clear();
      new_prefills.clear();
      preempted.clear();
    }
  };

  void schedule_v1();
  void schedule_v1_running(int64_t& token_budget);
  void schedule_v1_waiting(int64_t& token_budget);
  // V1's preemption victim: the tail of `running`, or under the priority policy the request with
  // the largest (priority, arrival_s), the first in `running` among equals.
  uint32_t v1_victim() const;
  void v1_unschedule(uint32_t id, int64_t& token_budget);
  void v1_preempt(uint32_t id);
  uint32_t waiting_front() const;
  void waiting_pop_front();
  void waiting_push_front(uint32_t id);
  void free_blocks(SeqState& s, uint32_t id);
  void schedule_default(SchedulingBudget& budget);
  void schedule_chunked_prefill(SchedulingBudget& budget);
  void schedule_running(SchedulingBudget& budget, bool enable_chunking);
  void schedule_prefills(SchedulingBudget& budget, bool enable_chunking);
  // vLLM _get_prompt_limit(): the longest prompt a step may hold.
  int64_t prompt_limit() const;
  int64_t chunk(int64_t num_new_tokens, const SchedulingBudget& budget, bool enable_chunking) const;
  void preempt(uint32_t id);
  void add_to_batch(uint32_t id, int64_t new_tokens);
  // Computes NEW_TOKENS of request ID; true when it samples a token.
  bool compute(uint32_t id, int32_t new_tokens);
  void free_finished_seq_groups();

  SchedulerConfig config_;
  std::vector<SeqState> seqs_;
  RequestQueue waiting_;
  RequestQueue running_;
  BlockManager blocks_;
  std::unique_ptr<KvCacheManager> kv_;  // vllm-v1 only
  // vllm-v1 with the priority policy: `waiting` is this heap of (priority, arrival) instead
  // (vLLM's PriorityRequestQueue).
  std::vector<uint32_t> waiting_heap_;
  StepOutputs out_;
  Batch batch_;
  bool any_finished_ = false;
  int64_t num_preemptions_ = 0;
  int64_t discarded_tokens_ = 0;
  int64_t step_cached_tokens_ = 0;
};

template <class OnToken>
void Scheduler::update_from_output(OnToken&& on_token) {
  const auto ids = batch_.ids();
  const auto shapes = batch_.shapes();
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint32_t id = ids[i];
    if (!compute(id, shapes[i].new_tokens)) continue;
    const SeqState& s = seqs_[id];
    on_token(id, s.generated == 1, s.status == SeqStatus::kFinished);
  }
  free_finished_seq_groups();
}

}  // namespace servesim
