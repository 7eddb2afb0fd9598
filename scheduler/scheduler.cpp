#include "scheduler/scheduler.hpp"

namespace servesim {

Scheduler::Scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks, size_t num_requests,
                     const BlockHasher* hasher)
    : config_(config),
      seqs_(num_requests),
      waiting_(64),
      running_(64),
      blocks_(num_gpu_blocks, config.block_size, config.watermark) {
  assert(config_.max_num_batched_tokens > 0 && config_.max_model_len > 0 &&
         config_.max_num_seqs > 0);
  if (v1_scheduler(config_.policy)) {
    kv_ = std::make_unique<KvCacheManager>(num_gpu_blocks, config_.block_size,
                                           config_.enable_prefix_caching, config_.max_model_len,
                                           hasher, num_requests);
    if (config_.scheduling_policy == SchedulingPolicy::kPriority) {
      waiting_heap_.reserve(std::min<size_t>(num_requests > 0 ? num_requests : 1024, 1 << 16));
    }
  }
  // A scheduler that grows (num_requests 0, a fleet's replica) may run up to max_num_seqs.
  const size_t most = num_requests > 0 ? num_requests : size_t(1) << 16;
  const size_t per_step = std::min<size_t>(size_t(config_.max_num_seqs), most) + 1;
  batch_.reserve(per_step);
  for (auto* v : {&out_.decodes, &out_.prefills, &out_.new_prefills, &out_.preempted}) {
    v->reserve(per_step);
  }
}

void Scheduler::reserve(size_t num_requests) {
  seqs_.reserve(num_requests);
  if (kv_) kv_->reserve(num_requests);
}

int64_t Scheduler::prompt_limit() const {
  if (chunked_prefill(config_.policy)) return config_.max_model_len;
  return std::min(config_.max_model_len, config_.max_num_batched_tokens);
}

RejectReason Scheduler::add_request(uint32_t id, int32_t input_tokens, int32_t output_tokens,
                                    int32_t priority, double arrival_s, int32_t external_tokens) {
  if (id == seqs_.size()) {  // a replica's next request: grow (amortised, once per request)
    seqs_.emplace_back();
    if (kv_) kv_->add_request_slot();
  }
  SeqState& s = seqs_[id];
  assert(s.status == SeqStatus::kPending && input_tokens >= 1 && output_tokens >= 1);
  s.input_tokens = input_tokens;
  s.output_tokens = output_tokens;
  s.priority = priority;
  s.arrival_time = arrival_s < 0 ? double(id) : arrival_s;
  assert(external_tokens == 0 || (kv_ && external_tokens < input_tokens));
  s.external_tokens = external_tokens;
  // vLLM OpenAI server (serving_engine._validate_input): prompt + max_tokens > max_model_len is a
  // 400 error before the request reaches the engine.
  RejectReason why = RejectReason::kNone;
  // The rest are vLLM's scheduler rules applied up front to the worst case, the whole lifetime
  // (a request preempted at its last token recomputes input + output - 1 tokens): vLLM would
  // ignore such a request midway, or let it preempt itself forever; servesim rejects it before
  // it streams anything. With these, a request alone in the cache always makes progress.
  const int64_t lifetime = int64_t(input_tokens) + output_tokens - 1;
  if (int64_t(input_tokens) + output_tokens > config_.max_model_len) {
    why = RejectReason::kContextLength;
  } else if (!chunked_prefill(config_.policy) && lifetime > prompt_limit()) {
    why = RejectReason::kPromptLimit;
  } else if (kv_ ? kv_->blocks_for(lifetime) > kv_->usable_blocks()
                 : blocks_.blocks_for(lifetime) >
                       blocks_.total_blocks() - std::max<int64_t>(1, blocks_.watermark_blocks())) {
    // V1 has no watermark: a request alone in the cache needs blocks for what it computes.
    why = RejectReason::kKvCapacity;
  }
  if (why != RejectReason::kNone) {
    s.status = SeqStatus::kRejected;
    s.reject = why;
    return why;
  }
  s.status = SeqStatus::kWaiting;
  if (config_.scheduling_policy == SchedulingPolicy::kPriority && kv_) {
    waiting_push_front(id);  // a heap: the position is the priority's
  } else {
    waiting_.push_back(id);
  }
  return RejectReason::kNone;
}

const Batch& Scheduler::schedule() {
  batch_.clear();
  out_.clear();
  step_cached_tokens_ = 0;
  SchedulingBudget budget{config_.max_num_batched_tokens, config_.max_num_seqs};
  switch (config_.policy) {
    case Policy::kVllmV0:
      schedule_default(budget);
      break;
    case Policy::kChunked:
      schedule_chunked_prefill(budget);
      break;
    case Policy::kVllmV1:  // its own loop, budget and queues
      schedule_v1();
      return batch_;
  }
  // vLLM asserts both after each schedule (_schedule_default, _schedule_chunked_prefill). The
  // one exception is a configuration vLLM refuses and servesim runs (for sweeps): with
  // max_num_batched_tokens < max_num_seqs, a vllm-v0 decode step, which schedules every running
  // request without consulting the token budget (as _schedule_running does), may pass it.
  assert(budget.num_batched_tokens <= config_.max_num_batched_tokens ||
         (!chunked_prefill(config_.policy) && batch_.prefill_tokens() == 0 &&
          config_.max_num_batched_tokens < config_.max_num_seqs));
  assert(budget.num_curr_seqs <= config_.max_num_seqs);
  assert(batch_.num_tokens() == budget.num_batched_tokens);
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
  return batch_;
}

void Scheduler::schedule_default(SchedulingBudget& budget) {
  // "Make sure we include num running seqs before scheduling prefill": running requests hold
  // their max_num_seqs slots first.
  budget.add_num_seqs(static_cast<int64_t>(running_.size()));
  schedule_prefills(budget, /*enable_chunking=*/false);
  // "Don't schedule decodes if prefills are scheduled": a step is all prefill or all decode.
  if (batch_.empty()) schedule_running(budget, /*enable_chunking=*/false);
}

void Scheduler::schedule_chunked_prefill(SchedulingBudget& budget) {
  // "Decoding should be always scheduled first by fcfs", then new prefills chunked into what
  // remains of the token budget.
  schedule_running(budget, /*enable_chunking=*/true);
  schedule_prefills(budget, /*enable_chunking=*/true);
}

void Scheduler::add_to_batch(uint32_t id, int64_t new_tokens) {
  const SeqState& s = seqs_[id];
  SeqShape shape;
  shape.new_tokens = static_cast<int32_t>(new_tokens);
  shape.context_tokens = s.num_computed_tokens;
  shape.prefill = s.prefill_stage;
  shape.emits_token = s.num_computed_tokens + new_tokens == s.num_tokens();
  batch_.add(id, shape);
}

int64_t Scheduler::chunk(int64_t num_new_tokens, const SchedulingBudget& budget,
                         bool enable_chunking) const {
  if (!enable_chunking) return num_new_tokens;
  // vLLM _chunk_new_tokens_to_schedule with max_num_partial_prefills = 1 (the default): the
  // remaining budget.
  return std::max<int64_t>(std::min(num_new_tokens, budget.remaining_token_budget()), 0);
}

void Scheduler::schedule_running(SchedulingBudget& budget, bool enable_chunking) {
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

void Scheduler::schedule_prefills(SchedulingBudget& budget, bool enable_chunking) {
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

void Scheduler::free_blocks(SeqState& s, uint32_t id) {
  if (kv_) {
    kv_->free(id);
    s.blocks = 0;
    s.table_tokens = 0;
  } else {
    blocks_.free(s);
  }
}

void Scheduler::preempt(uint32_t id) {
  // PreemptionMode.RECOMPUTE (the default for single-sequence groups): free the blocks and
  // recompute prompt + generated tokens when re-admitted.
  SeqState& s = seqs_[id];
  blocks_.free(s);
  discarded_tokens_ += s.num_computed_tokens;
  s.num_computed_tokens = 0;
  s.prefill_stage = true;
  s.status = SeqStatus::kWaiting;
  ++s.preemptions;
  ++num_preemptions_;
  out_.preempted.push_back(id);
}

bool Scheduler::compute(uint32_t id, int32_t new_tokens) {
  SeqState& s = seqs_[id];
  assert(s.status == SeqStatus::kRunning && s.num_computed_tokens + new_tokens <= s.num_tokens());
  // vLLM update_num_computed_tokens(token_chunk_size).
  s.num_computed_tokens += new_tokens;
  if (s.num_computed_tokens < s.num_tokens()) return false;  // a partial prefill: no sampling
  // Every known token is computed: the sampler emits the next token.
  s.prefill_stage = false;
  ++s.generated;
  if (s.generated < s.output_tokens) return true;
  // StopChecker: max_tokens reached. vLLM frees the sequence's blocks (free_seq) as it finishes;
  // V1 in update_from_output (_free_request), before the next schedule.
  free_blocks(s, id);
  s.status = SeqStatus::kFinished;
  any_finished_ = true;
  return true;
}

void Scheduler::free_finished_seq_groups() {
  if (!any_finished_) return;
  running_.remove_if([this](uint32_t id) { return seqs_[id].status == SeqStatus::kFinished; });
  any_finished_ = false;
}

}  // namespace servesim
