#include "scheduler/v0_scheduler.hpp"

#include <algorithm>

namespace servesim {

V0Scheduler::V0Scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks, size_t num_requests)
    : Scheduler(config, num_requests),
      waiting_(64),
      blocks_(num_gpu_blocks, config.block_size, config.watermark) {
  assert(!v1_scheduler(config.policy));
}

int64_t V0Scheduler::prompt_limit() const {
  if (chunked_prefill(config_.policy)) return config_.max_model_len;
  return std::min(config_.max_model_len, config_.max_num_batched_tokens);
}

RejectReason V0Scheduler::engine_reject(const SeqState&, int64_t lifetime) const {
  if (!chunked_prefill(config_.policy) && lifetime > prompt_limit()) {
    return RejectReason::kPromptLimit;
  }
  // can_allocate answers NEVER beyond the cache minus the watermark; can_append_slots always asks
  // for one block more.
  if (blocks_.blocks_for(lifetime) >
      blocks_.total_blocks() - std::max<int64_t>(1, blocks_.watermark_blocks())) {
    return RejectReason::kKvCapacity;
  }
  return RejectReason::kNone;
}

void V0Scheduler::schedule_step() {
  SchedulingBudget budget{config_.max_num_batched_tokens, config_.max_num_seqs};
  if (config_.policy == Policy::kVllmV0) {
    schedule_default(budget);
  } else {
    schedule_chunked_prefill(budget);
  }
  // vLLM asserts both after each schedule (_schedule_default, _schedule_chunked_prefill). The
  // one exception is a configuration vLLM refuses and servesim runs (for sweeps): with
  // max_num_batched_tokens < max_num_seqs, a vllm-v0 decode step, which schedules every running
  // request without consulting the token budget (as _schedule_running does), may pass it.
  assert(budget.num_batched_tokens <= config_.max_num_batched_tokens ||
         (!chunked_prefill(config_.policy) && building().prefill_tokens() == 0 &&
          config_.max_num_batched_tokens < config_.max_num_seqs));
  assert(budget.num_curr_seqs <= config_.max_num_seqs);
  assert(building().num_tokens() == budget.num_batched_tokens);
  // vLLM: self.waiting.extendleft(preempted) puts the preempted back at the head of `waiting`
  // (the last preempted, i.e. the earliest in `running`, first).
  for (uint32_t id : out_.preempted)
    waiting_.push_front(id);
  // Rebuild `running`: requests not reached this step stay in front; then decodes, partial
  // prefills and new prefills (vLLM _schedule_chunked_prefill; in _schedule_default a step has
  // decodes or new prefills, never both, so the same order holds).
  for (uint32_t id : out_.decodes)
    running_.push_back(id);
  for (uint32_t id : out_.prefills)
    running_.push_back(id);
  for (uint32_t id : out_.new_prefills)
    running_.push_back(id);
}

void V0Scheduler::schedule_default(SchedulingBudget& budget) {
  // "Make sure we include num running seqs before scheduling prefill": running requests hold
  // their max_num_seqs slots first.
  budget.add_num_seqs(static_cast<int64_t>(running_.size()));
  schedule_prefills(budget, /*enable_chunking=*/false);
  // "Don't schedule decodes if prefills are scheduled": a step is all prefill or all decode.
  if (building().empty()) schedule_running(budget, /*enable_chunking=*/false);
}

void V0Scheduler::schedule_chunked_prefill(SchedulingBudget& budget) {
  // "Decoding should be always scheduled first by fcfs", then new prefills chunked into what
  // remains of the token budget.
  schedule_running(budget, /*enable_chunking=*/true);
  schedule_prefills(budget, /*enable_chunking=*/true);
}

int64_t V0Scheduler::chunk(int64_t num_new_tokens, const SchedulingBudget& budget,
                           bool enable_chunking) const {
  if (!enable_chunking) return num_new_tokens;
  // vLLM _chunk_new_tokens_to_schedule with max_num_partial_prefills = 1 (the default): the
  // remaining budget.
  return std::max<int64_t>(std::min(num_new_tokens, budget.remaining_token_budget()), 0);
}

void V0Scheduler::schedule_running(SchedulingBudget& budget, bool enable_chunking) {
  while (!running_.empty()) {
    const uint32_t id = running_.front();
    SeqState& s = seqs_[id];
    const int64_t n = chunk(s.num_new_tokens(), budget, enable_chunking);
    if (n == 0) break;  // budget spent: the rest stay at the front of `running`
    running_.pop_front();
    bool scheduled = true;
    while (!blocks_.can_append_slots(s)) {
      // No slot for this request: preempt the lowest-priority request, the tail of `running`;
      // if there is none left, this request itself (vLLM _schedule_running).
      if (!running_.empty()) {
        const uint32_t victim = running_.back();
        running_.pop_back();
        preempt(victim);
      } else {
        preempt(id);
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;
    blocks_.append_slots(s);
    (s.prefill_stage ? out_.prefills : out_.decodes).push_back(id);
    add_to_batch(id, n);
    budget.add_num_batched_tokens(n);
    // Without chunking the policy counted every running request before prefills.
    if (enable_chunking) budget.add_num_seqs(1);
  }
}

void V0Scheduler::schedule_prefills(SchedulingBudget& budget, bool enable_chunking) {
  // vLLM >= 0.7: nothing to do once the budget is spent.
  if (budget.remaining_token_budget() <= 0) return;
  while (!waiting_.empty()) {
    const uint32_t id = waiting_.front();
    SeqState& s = seqs_[id];
    const int64_t n = chunk(s.num_new_tokens(), budget, enable_chunking);
    // vLLM ignores here a prompt over prompt_limit() and one can_allocate answers NEVER for;
    // add_request() has already rejected every request that could reach either.
    const AllocStatus can = blocks_.can_allocate(s);
    assert(can != AllocStatus::kNever);
    if (can == AllocStatus::kLater) break;
    if (n == 0 || !budget.can_schedule(n, 1)) break;  // the first that does not fit stops all
    waiting_.pop_front();
    blocks_.allocate(s);
    s.status = SeqStatus::kRunning;
    s.prefill_stage = true;
    out_.new_prefills.push_back(id);
    add_to_batch(id, n);
    budget.add_num_batched_tokens(n);
    budget.add_num_seqs(1);
  }
}

inline int32_t V0Scheduler::apply(uint32_t id, const SeqShape& shape) {
  SeqState& s = seqs_[id];
  assert(s.status == SeqStatus::kRunning &&
         s.num_computed_tokens + shape.new_tokens <= s.num_tokens());
  // vLLM update_num_computed_tokens(token_chunk_size).
  s.num_computed_tokens += shape.new_tokens;
  if (s.num_computed_tokens < s.num_tokens()) return 0;  // a partial prefill: no sampling
  // Every known token is computed: the sampler emits the next token.
  s.prefill_stage = false;
  ++s.generated;
  if (s.generated < s.output_tokens) return 1;
  // StopChecker: max_tokens reached; free_seq frees the blocks as the sequence finishes.
  free_request(id);
  finished(id);
  return 1;
}

void V0Scheduler::apply_batch(const Batch& b, Applied* out) {
  apply_each(*this, b, out);
}

void V0Scheduler::preempt(uint32_t id) {
  free_request(id);
  mark_preempted(id);
}

}  // namespace servesim
