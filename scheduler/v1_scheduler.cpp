#include "scheduler/v1_scheduler.hpp"

#include <algorithm>

namespace servesim {

namespace {

// vLLM's PriorityRequestQueue order, Request.__lt__: (priority, arrival_time,
// request_id), ids standing for request ids. A heap with this comparison keeps the smallest on
// top.
struct LaterOrLowerPriority {
  std::span<const SeqState> seqs;
  bool operator()(uint32_t a, uint32_t b) const {
    const SeqState &sa = seqs[a], &sb = seqs[b];
    if (sa.priority != sb.priority) return sa.priority > sb.priority;
    if (sa.workload_arrival_s != sb.workload_arrival_s)
      return sa.workload_arrival_s > sb.workload_arrival_s;
    return a > b;
  }
};

}  // namespace

uint32_t V1Scheduler::waiting_front() const {
  return waiting_heap_.empty() ? waiting_.front() : waiting_heap_.front();
}

void V1Scheduler::waiting_pop_front() {
  if (config_.scheduling_policy == WaitingOrder::kPriority) {
    std::pop_heap(waiting_heap_.begin(), waiting_heap_.end(), LaterOrLowerPriority{seqs_});
    waiting_heap_.pop_back();
  } else {
    waiting_.pop_front();
  }
}

void V1Scheduler::waiting_push_front(uint32_t id) {
  // _preempt_request: self.waiting.prepend_request(request); under the priority policy the queue
  // is a heap and "prepend" is a push.
  if (config_.scheduling_policy == WaitingOrder::kPriority) {
    waiting_heap_.push_back(id);
    std::push_heap(waiting_heap_.begin(), waiting_heap_.end(), LaterOrLowerPriority{seqs_});
  } else {
    waiting_.push_front(id);
  }
}

void V1Scheduler::waiting_remove(uint32_t id) {
  if (config_.scheduling_policy == WaitingOrder::kPriority) {
    waiting_heap_.erase(std::find(waiting_heap_.begin(), waiting_heap_.end(), id));
    std::make_heap(waiting_heap_.begin(), waiting_heap_.end(), LaterOrLowerPriority{seqs_});
  } else {
    waiting_.remove_if([id](uint32_t r) { return r == id; });
  }
}

V1Scheduler::V1Scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks, size_t num_requests,
                         const BlockHasher* hasher)
    : Scheduler(config, num_requests),
      kv_(num_gpu_blocks, config.block_size, config.enable_prefix_caching, config.max_model_len,
          hasher, num_requests),
      waiting_(64) {
  assert(v1_scheduler(config.policy));
  if (config_.scheduling_policy == WaitingOrder::kPriority) {
    waiting_heap_.reserve(std::min<size_t>(num_requests > 0 ? num_requests : 1024, 1 << 16));
  }
}

void V1Scheduler::reserve(size_t num_requests) {
  Scheduler::reserve(num_requests);
  kv_.reserve(num_requests);
}

RejectReason V1Scheduler::engine_reject(const SeqState&, int64_t lifetime) const {
  // No watermark: a request alone in the cache needs blocks for what it computes, and with
  // speculative decoding for its last step's drafts and the drafter's lookahead slots (capped at
  // max_model_len, as allocate_slots caps them).
  const SpecDecodeConfig& spec = config_.spec;
  const int64_t slots =
      spec.enabled() ? std::min<int64_t>(lifetime + spec.num_speculative_tokens + spec.lookahead(),
                                         config_.max_model_len)
                     : lifetime;
  return kv_.blocks_for(slots) > kv_.usable_blocks() ? RejectReason::kKvCapacity
                                                     : RejectReason::kNone;
}

void V1Scheduler::enqueue(uint32_t id) {
  if (config_.scheduling_policy == WaitingOrder::kPriority) {
    waiting_push_front(id);  // a heap: the position is the priority's
  } else {
    waiting_.push_back(id);
  }
}

void V1Scheduler::free_request(uint32_t id) {
  release(id, /*preempted=*/false);
}

void V1Scheduler::release(uint32_t id, bool preempted) {
  kv_.free(id, seqs_[id], preempted);
}

void V1Scheduler::schedule_step() {
  int64_t token_budget = config_.token_budget();
  schedule_running(token_budget);
  // "Next, schedule the WAITING requests" only if nothing was preempted in this step.
  if (out_.preempted.empty()) schedule_waiting(token_budget);
  assert(token_budget >= 0);
  assert(int64_t(running_.size()) <= config_.max_num_seqs);
}

void V1Scheduler::schedule_tokens(uint32_t id, int64_t new_tokens) {
  SeqState& s = seqs_[id];
  // "Speculative decode related": the drafts among the scheduled tokens (the budget or
  // max_model_len may cut them); "New spec tokens will be set in update_draft_token_ids".
  int drafts = 0;
  if (s.spec_tokens > 0) {
    const int64_t scheduled = new_tokens + s.num_computed_tokens - s.num_tokens() - s.placeholders;
    drafts = int(std::clamp<int64_t>(scheduled, 0, s.spec_tokens));
    s.spec_tokens = 0;
  }
  const bool emits_token = add_to_batch(id, new_tokens, drafts);
  // _update_after_schedule, done as each request is scheduled (nothing in the step reads these
  // before the step ends but a priority preemption, which unschedule() undoes first).
  s.num_computed_tokens += static_cast<int32_t>(new_tokens);
  if (!emits_token) return;
  s.prefill_stage = false;
  if (config_.async_scheduling) {
    // AsyncScheduler: "The request will generate a new token plus num_spec_tokens in this
    // scheduling step", and the drafter's proposals are placeholders until the worker fills them.
    s.placeholders += 1 + drafts;
    s.spec_tokens = uint8_t(config_.spec.enabled() ? config_.spec.num_speculative_tokens : 0);
  }
}

int64_t V1Scheduler::unschedule(uint32_t id) {
  const SeqShape shape = building().remove(id);
  SeqState& s = seqs_[id];
  s.num_computed_tokens -= shape.new_tokens;
  // Its drafts go with it: it is preempted next, which clears spec_token_ids.
  if (shape.emits_token && config_.async_scheduling) s.placeholders -= 1 + shape.draft_tokens;
  return shape.new_tokens;
}

int32_t V1Scheduler::apply(uint32_t id, const SeqShape& shape) {
  SeqState& s = seqs_[id];
  // "The request is already finished" (aborted while the model ran it), or a partial prefill.
  if (s.status == SeqStatus::kFinished || !shape.emits_token) return 0;
  const bool was_running = s.status == SeqStatus::kRunning;
  int32_t tokens = 1;
  if (shape.draft_tokens > 0) {
    // update_from_output: num_accepted = len(generated_token_ids) - 1; the rejected drafts'
    // tokens were counted as computed when scheduled (and as placeholders, async).
    const int accepted = config_.spec.accepted(id, s.generated, shape.draft_tokens);
    const int rejected = shape.draft_tokens - accepted;
    if (s.num_computed_tokens > 0) s.num_computed_tokens -= rejected;
    if (s.placeholders > 0) s.placeholders -= rejected;
    ++spec_stats_.num_drafts;
    spec_stats_.num_draft_tokens += shape.draft_tokens;
    spec_stats_.num_accepted_tokens += accepted;
    for (int i = 0; i < accepted; ++i)
      ++spec_stats_.accepted_per_pos[size_t(i)];
    tokens += accepted;
  }
  // _update_request_with_output: check_stop after each token truncates at max_tokens.
  tokens = std::min(tokens, s.output_tokens - s.generated);
  s.generated += tokens;
  s.placeholders = std::max(0, s.placeholders - tokens);
  if (s.generated == s.output_tokens) {
    // check_stop at max_tokens; _free_request frees the blocks now, before the next schedule. A
    // preempted request stops where it waits (stopped_preempted_reqs).
    if (was_running) {
      free_request(id);
    } else {
      waiting_remove(id);
    }
    finished(id);
    return tokens;
  }
  if (config_.async_scheduling) {
    // AsyncScheduler: cache_blocks(request, num_computed_tokens - num_output_placeholders).
    if (was_running) kv_.cache_tokens(id, s, s.num_computed_tokens - s.placeholders);
  } else if (was_running && config_.spec.enabled()) {
    // EngineCore: update_draft_token_ids with the drafter's k proposals for the next step.
    s.spec_tokens = uint8_t(config_.spec.num_speculative_tokens);
  }
  return tokens;
}

uint32_t V1Scheduler::victim() const {
  if (config_.scheduling_policy == WaitingOrder::kFcfs) return running_.back();
  // max(self.running, key=lambda r: (r.priority, r.arrival_time)): Python's max keeps the first
  // of equal keys, so the request id does not enter.
  uint32_t victim = running_[0];
  for (size_t i = 1; i < running_.size(); ++i) {
    const SeqState &s = seqs_[running_[i]], &v = seqs_[victim];
    if (s.priority > v.priority ||
        (s.priority == v.priority && s.workload_arrival_s > v.workload_arrival_s))
      victim = running_[i];
  }
  return victim;
}

void V1Scheduler::preempt(uint32_t id) {
  release(id, /*preempted=*/true);
  mark_preempted(id);
  seqs_[id].spec_tokens = 0;  // _preempt_request: request.spec_token_ids = []
  waiting_push_front(id);
}

void V1Scheduler::schedule_running(int64_t& token_budget) {
  // `running` only grows at the back (schedule_waiting), so it is one array after the first
  // step; a preemption shortens it, which the loop re-reads.
  std::span<const uint32_t> running = running_.linear();
  size_t idx = 0;
  while (idx < running.size() && token_budget > 0) {
    const uint32_t id = running[idx];
    SeqState& s = seqs_[id];
    // AsyncScheduler: "Avoid scheduling an extra step when we are sure that the previous step has
    // reached request.max_tokens" (computed + 1 - (placeholders - 1) >= prompt + max_tokens).
    if (s.placeholders > 0 &&
        s.num_computed_tokens + 2 - s.placeholders >= s.input_tokens + s.output_tokens) {
      ++idx;
      continue;
    }
    int64_t n = s.num_new_tokens();
    const int64_t threshold = config_.long_prefill_token_threshold;
    if (0 < threshold && threshold < n) n = threshold;
    n = std::min(n, token_budget);
    // "Make sure the input position does not exceed the max model len."
    n = std::min<int64_t>(n, config_.max_model_len - 1 - s.num_computed_tokens);
    if (n <= 0) {
      // "by doing `continue` instead of `break`, we do not strictly follow the FCFS scheduling
      // policy and allow the lower-priority requests to be scheduled."
      ++idx;
      continue;
    }
    bool scheduled = true;
    while (!kv_.allocate_slots(id, s, n, 0, false, config_.spec.lookahead())) {
      // "The request cannot be scheduled. Preempt the lowest-priority request."
      const uint32_t victim = this->victim();
      if (config_.scheduling_policy == WaitingOrder::kFcfs) {
        running_.pop_back();
      } else {
        size_t at = 0;
        while (running_[at] != victim)
          ++at;
        running_.remove_if([victim](uint32_t r) { return r == victim; });
        if (at < idx) {  // already scheduled in this step: its tokens go back to the budget
          token_budget += unschedule(victim);
          --idx;
        }
      }
      preempt(victim);
      running = running_.linear();
      if (victim == id) {
        scheduled = false;  // "No more request to preempt. Cannot schedule this request."
        break;
      }
    }
    if (!scheduled) break;
    schedule_tokens(id, n);
    token_budget -= n;
    ++idx;
  }
}

void V1Scheduler::schedule_waiting(int64_t& token_budget) {
  while (num_waiting() > 0 && token_budget > 0) {
    if (int64_t(running_.size()) == config_.max_num_seqs) break;
    const uint32_t id = waiting_front();
    SeqState& s = seqs_[id];
    // A waiting request has computed nothing (a preempted one restarts from 0): look up the
    // prefix cache.
    const int64_t hit = kv_.get_computed_blocks(id, s);
    // A KV connector's tokens beyond the local hit: allocated now, never computed here
    // (Scheduler.schedule: num_computed_tokens = local + external).
    const int64_t external = std::max<int64_t>(0, int64_t(s.external_tokens) - hit);
    int64_t n = s.num_tokens() - hit - external;
    const int64_t threshold = config_.long_prefill_token_threshold;
    if (0 < threshold && threshold < n) n = threshold;
    n = std::min(n, token_budget);
    assert(n > 0);
    if (!kv_.allocate_slots(id, s, external + n, hit, config_.reserve_full_isl)) break;
    waiting_pop_front();
    running_.push_back(id);
    s.status = SeqStatus::kRunning;
    s.prefill_stage = true;
    s.num_computed_tokens = static_cast<int32_t>(hit + external);
    s.external_tokens = 0;  // once: after a preemption the request recomputes here
    // vLLM's num_cached_tokens is set once, at the first scheduling.
    if (s.cached_tokens < 0) s.cached_tokens = static_cast<int32_t>(hit);
    step_cached_tokens_ += hit;
    out_.new_prefills.push_back(id);
    schedule_tokens(id, n);
    token_budget -= n;
  }
}

}  // namespace servesim
