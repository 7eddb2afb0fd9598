#include "scheduler/scheduler.hpp"

#include <algorithm>

#include "scheduler/v0_scheduler.hpp"
#include "scheduler/v1_scheduler.hpp"
#include "util/error.hpp"
#include "util/field_path.hpp"

namespace servesim {

Scheduler::Scheduler(const SchedulerConfig& config, size_t num_requests)
    : config_(config),
      seqs_(num_requests),
      running_(64),
      num_bufs_(std::max(2, config.max_batches_in_flight())) {
  if (num_bufs_ > kMaxBatchesInFlight) {
    throw Error(field::kPipelineParallelSize,
                "at most " + std::to_string(kMaxBatchesInFlight) + " batches in flight");
  }
  assert(config_.max_num_batched_tokens > 0 && config_.max_model_len > 0 &&
         config_.max_num_seqs > 0);
  // A scheduler that grows (num_requests 0, a fleet's replica) may run up to max_num_seqs.
  const size_t most = num_requests > 0 ? num_requests : size_t(1) << 16;
  const size_t per_step = std::min<size_t>(size_t(config_.max_num_seqs), most) + 1;
  for (int i = 0; i < num_bufs_; ++i)
    bufs_[i].reserve(per_step);
  for (auto* v : {&out_.decodes, &out_.prefills, &out_.new_prefills, &out_.preempted}) {
    v->reserve(per_step);
  }
}

std::unique_ptr<Scheduler> make_scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks,
                                          size_t num_requests, const BlockHasher* hasher) {
  if (v1_scheduler(config.policy)) {
    return std::make_unique<V1Scheduler>(config, num_gpu_blocks, num_requests, hasher);
  }
  return std::make_unique<V0Scheduler>(config, num_gpu_blocks, num_requests);
}

void Scheduler::reserve(size_t num_requests) {
  seqs_.reserve(num_requests);
}

RejectReason Scheduler::add_request(uint32_t id, int32_t input_tokens, int32_t output_tokens,
                                    int32_t priority, double arrival_s, int32_t external_tokens,
                                    uint16_t lora) {
  if (id == seqs_.size()) {  // a replica's next request: grow (amortised, once per request)
    seqs_.emplace_back();
    add_request_slot();
  }
  SeqState& s = seqs_[id];
  assert(s.status == SeqStatus::kPending && input_tokens >= 1 && output_tokens >= 1);
  assert(external_tokens == 0 || external_tokens < input_tokens);
  s.input_tokens = input_tokens;
  s.output_tokens = output_tokens;
  s.priority = priority;
  s.workload_arrival_s = arrival_s < 0 ? double(id) : arrival_s;
  s.external_tokens = external_tokens;
  s.lora = lora;
  // vLLM OpenAI server (serving_engine._validate_input): prompt + max_tokens > max_model_len is a
  // 400 error before the request reaches the engine.
  RejectReason why = RejectReason::kNone;
  // The engine's rules are applied up front to the worst case, the whole lifetime (a request
  // preempted at its last token recomputes input + output - 1 tokens): vLLM would ignore such a
  // request midway, or let it preempt itself forever; servesim rejects it before it streams
  // anything. With these, a request alone in the cache always makes progress.
  const int64_t lifetime = int64_t(input_tokens) + output_tokens - 1;
  if (int64_t(input_tokens) + output_tokens > config_.max_model_len) {
    why = RejectReason::kContextLength;
  } else {
    why = engine_reject(s, lifetime);
  }
  if (why != RejectReason::kNone) {
    s.status = SeqStatus::kRejected;
    s.reject = why;
    return why;
  }
  s.status = SeqStatus::kWaiting;
  if (lora > 0) {
    if (lora >= lora_requests_.size()) lora_requests_.resize(size_t(lora) + 1, 0);
    if (lora_requests_[lora]++ == 0) ++num_loras_;
  }
  enqueue(id);
  return RejectReason::kNone;
}

const Batch& Scheduler::schedule() {
  assert(in_flight_ == 0 || in_flight_ < config_.max_batches_in_flight());
  // The buffer after the newest in flight: none in flight has run yet.
  if (in_flight_ > 0) {
    cur_ = oldest_ + in_flight_;
    if (cur_ >= num_bufs_) cur_ -= num_bufs_;
  }
  begin_step();
  schedule_step();
  if (!bufs_[cur_].empty()) {
    if (in_flight_ == 0) oldest_ = cur_;
    ++in_flight_;
  }
  return bufs_[cur_];
}

void Scheduler::begin_step() {
  building().clear();
  out_.clear();
  step_cached_tokens_ = 0;
}

void Scheduler::mark_preempted(uint32_t id) {
  // Recompute (V0's PreemptionMode.RECOMPUTE for single-sequence groups; V1's only mode): prompt
  // and generated tokens are computed again when the request is re-admitted.
  SeqState& s = seqs_[id];
  discarded_tokens_ += s.num_computed_tokens;
  s.num_computed_tokens = 0;
  s.prefill_stage = true;
  s.status = SeqStatus::kWaiting;
  ++s.preemptions;
  ++num_preemptions_;
  out_.preempted.push_back(id);
}

void Scheduler::finished(uint32_t id) {
  SeqState& s = seqs_[id];
  s.status = SeqStatus::kFinished;
  any_finished_ = true;
  if (s.lora > 0 && --lora_requests_[s.lora] == 0) --num_loras_;
}

void Scheduler::free_finished_seq_groups() {
  if (!any_finished_) return;
  running_.remove_if([this](uint32_t id) { return seqs_[id].status == SeqStatus::kFinished; });
  any_finished_ = false;
}

}  // namespace servesim
