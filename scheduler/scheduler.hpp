// Scheduler: one replica's request queues and KV block manager, and the steps vLLM V0's
// scheduler (vllm/core/scheduler.py, v0.6-v0.8) composes its policies from:
//  - schedule_running: walk `running` in order; give each its tokens (1 for a decode, the rest of
//    its prefill, cut to the remaining budget when chunking); when a request cannot append its
//    slots, preempt by recompute the tail of `running` (or itself when it is the last).
//  - schedule_prefills: walk `waiting` FCFS; stop at the first request the block manager or the
//    budget cannot take (no skipping).
// A Policy (scheduler/policy.hpp) decides which steps run in which order. The Scheduler never
// reads the clock: the host asks for a batch, runs it, and reports its completion.
// Promises: every request added is, at every moment, in exactly one of pending, waiting, running,
// finished or rejected; KV blocks never exceed the cache.
#pragma once

#include <algorithm>
#include <boost/circular_buffer.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/batch.hpp"
#include "scheduler/block_manager.hpp"
#include "scheduler/budget.hpp"
#include "scheduler/sequence.hpp"

namespace servesim {

struct SchedulerConfig {
  std::string policy = "chunked";      // see policy_names()
  int64_t max_num_batched_tokens = 0;  // 0 = the policy's vLLM default
  int64_t max_num_seqs = 256;
  int64_t max_model_len = 0;  // must be set (the model's max_position by default)
  int block_size = 16;
  double watermark = 0.01;  // vLLM CacheConfig default; not a CLI flag in vLLM
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

class Policy;
struct PolicyInfo;

class Scheduler {
 public:
  // What completing a batch entry did to its request.
  enum class Outcome { kNone, kToken, kFinished };

  Scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks, size_t num_requests);
  ~Scheduler();

  // The front end's checks, then `waiting`. Returns why the request was rejected, or kNone.
  RejectReason add_request(uint32_t id, int32_t input_tokens, int32_t output_tokens);

  // Decides the next step.
  const Batch& schedule();
  // Applies one entry of the batch returned by schedule() once the step has run.
  Outcome complete(uint32_t id, int32_t new_tokens);
  // Ends the step: finished requests leave `running` (vLLM free_finished_seq_groups).
  void end_step();

  const Batch& batch() const { return batch_; }
  const SeqState& seq(uint32_t id) const { return seqs_[id]; }
  const RequestQueue& waiting() const { return waiting_; }
  const RequestQueue& running() const { return running_; }
  const BlockManager& block_manager() const { return blocks_; }
  const SchedulerConfig& config() const { return config_; }
  int64_t num_preemptions() const { return num_preemptions_; }
  // Computed tokens thrown away by preemption (they are computed again on re-admission).
  int64_t discarded_tokens() const { return discarded_tokens_; }

  // The steps policies are made of (vLLM Scheduler._schedule_running / _schedule_prefills).
  void schedule_running(SchedulingBudget& budget, bool enable_chunking);
  void schedule_prefills(SchedulingBudget& budget, bool enable_chunking);

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

  int64_t chunk(int64_t num_new_tokens, const SchedulingBudget& budget, bool enable_chunking) const;
  void preempt(uint32_t id);
  void add_to_batch(uint32_t id, int64_t new_tokens);

  SchedulerConfig config_;
  const PolicyInfo& policy_info_;
  std::unique_ptr<Policy> policy_;
  std::vector<SeqState> seqs_;
  RequestQueue waiting_;
  RequestQueue running_;
  BlockManager blocks_;
  StepOutputs out_;
  Batch batch_;
  bool any_finished_ = false;
  int64_t num_preemptions_ = 0;
  int64_t discarded_tokens_ = 0;
};

}  // namespace servesim
