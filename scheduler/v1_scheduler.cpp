#include "scheduler/v1_scheduler.hpp"

#include <algorithm>

namespace servesim {

void V1Scheduler::waiting_remove(uint32_t id) {
  for (WaitingQueue* q : {&waiting_, &skipped_}) {
    if (q->contains(id)) {
      q->remove(id, seqs_);
      return;
    }
  }
}

V1Scheduler::V1Scheduler(const SchedulerConfig& config, int64_t num_gpu_blocks, size_t num_requests,
                         const BlockHasher* hasher)
    : Scheduler(config, num_requests),
      kv_(num_gpu_blocks, config.block_size, config.enable_prefix_caching, config.max_model_len,
          hasher, num_requests),
      waiting_(ordered(config), keyed(config) ? &keys_ : nullptr),
      skipped_(ordered(config), keyed(config) ? &keys_ : nullptr) {
  assert(v1_scheduler(config.policy));
  const SpecMethod m = config.spec.enabled() ? config.spec.method : SpecMethod::kNone;
  spec_tokens_ = uint8_t(m == SpecMethod::kNone ? 0 : config.spec.num_speculative_tokens);
  lookahead_ = m == SpecMethod::kNone ? 0 : config.spec.lookahead();
  // vLLM's coordinator gets scheduler_config.max_num_batched_tokens.
  if (config.sliding_window > 0) {
    kv_.set_sliding_window(config.sliding_window,
                           std::max<int64_t>(config.max_num_batched_tokens, 1));
  }
  kv_.set_state_groups(config.state_groups);
  kv_.set_drop_last_hit_block(m == SpecMethod::kEagle || m == SpecMethod::kEagle3 ||
                              m == SpecMethod::kMtp);
  const size_t most = std::min<size_t>(num_requests > 0 ? num_requests : 1024, 1 << 16);
  scheduled_loras_.reserve(size_t(std::max(config.max_loras, 0)) + 1);
  waiting_.reserve(most);
  skipped_.reserve(most);
  step_skipped_.reserve(most);
  if (config_.offload.enabled()) {
    offload_ = std::make_unique<KvOffloadConnector>(config_.offload, config.block_size, hasher,
                                                    config.enable_prefix_caching, num_requests);
  }
}

void V1Scheduler::reserve(size_t num_requests) {
  Scheduler::reserve(num_requests);
  kv_.reserve(num_requests);
  if (offload_) offload_->reserve(num_requests);
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
  return kv_.peak_blocks_for(slots) > kv_.usable_blocks() ? RejectReason::kKvCapacity
                                                          : RejectReason::kNone;
}

void V1Scheduler::enqueue(uint32_t id) {
  if (keyed(config_)) {
    if (id >= keys_.size()) keys_.resize(size_t(id) + 1, 0.0);
    keys_[id] = config_.hooks->admission_key(id, seqs_[id]);
  }
  waiting_.push_back(id, seqs_);
}

void V1Scheduler::free_request(uint32_t id) {
  release(id, /*preempted=*/false);
}

void V1Scheduler::release(uint32_t id, bool preempted) {
  kv_.free(id, seqs_[id], preempted);
  if (offload_) offload_->release(id, preempted);
}

void V1Scheduler::schedule_step() {
  if (offload_) offload_->begin_step();
  int64_t token_budget = config_.token_budget();
  schedule_running(token_budget);
  // "Next, schedule the WAITING requests" only if nothing was preempted in this step.
  if (out_.preempted.empty()) schedule_waiting(token_budget);
  assert(token_budget >= 0);
  assert(int64_t(running_.size()) <= config_.max_num_seqs);
  // build_connector_meta: the scheduled requests' new full blocks go to the CPU tier.
  if (offload_) {
    for (uint32_t id : building().ids())
      offload_->store(id, seqs_[id]);
  }
}

inline void V1Scheduler::schedule_tokens(uint32_t id, int64_t new_tokens) {
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
    s.spec_tokens = spec_tokens_;
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

inline int32_t V1Scheduler::apply(uint32_t id, const SeqShape& shape) {
  SeqState& s = seqs_[id];
  // "The request is already finished" (aborted while the model ran it), or a partial prefill.
  if (s.status == SeqStatus::kFinished || !shape.emits_token) return 0;
  const bool was_running = s.status == SeqStatus::kRunning;
  int32_t tokens = 1;
  if (shape.draft_tokens > 0) {
    // update_from_output: num_accepted = len(generated_token_ids) - 1; the rejected drafts'
    // tokens were counted as computed when scheduled (and as placeholders, async).
    const int accepted = config_.spec.accepted(id, s.generated, shape.draft_tokens);
    last_accepted_ = int16_t(accepted);
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
  } else if (was_running) {
    // EngineCore: update_draft_token_ids with the drafter's k proposals for the next step.
    s.spec_tokens = spec_tokens_;
  }
  return tokens;
}

void V1Scheduler::apply_batch(const Batch& b, Applied* out) {
  apply_each(*this, b, out);
}

uint32_t V1Scheduler::victim() {
  if (config_.hooks != nullptr && config_.hooks->chooses_victim()) {
    const uint32_t v = config_.hooks->preemption_victim(running_.linear(), seqs_);
    assert(std::find(running_.linear().begin(), running_.linear().end(), v) !=
           running_.linear().end());
    return v;
  }
  if (keyed(config_)) {  // the largest (key, arrival), the first among equals
    uint32_t v = running_[0];
    for (size_t i = 1; i < running_.size(); ++i) {
      const uint32_t r = running_[i];
      if (keys_[r] > keys_[v] ||
          (keys_[r] == keys_[v] && seqs_[r].workload_arrival_s > seqs_[v].workload_arrival_s)) {
        v = r;
      }
    }
    return v;
  }
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
  waiting_.push_front(id, seqs_);
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
    while (!kv_.allocate_slots(id, s, n, 0, false, lookahead_)) {
      // "The request cannot be scheduled. Preempt the lowest-priority request."
      const uint32_t victim = this->victim();
      if (victim == running_.back()) {
        running_.pop_back();
      } else {
        size_t at = 0;
        while (running_[at] != victim)
          ++at;
        running_.remove_if([victim](uint32_t r) { return r == victim; });
        // "if preempted_req in scheduled_running_reqs": its tokens go back to the budget and
        // req_index steps back. One ahead of the request but not scheduled in this step (its
        // last token in flight, or nothing to compute) leaves req_index where it is, so the list
        // shifting left passes over the request after this one, as vLLM's loop does.
        if (at < idx) {
          const int64_t back = unschedule(victim);
          if (back > 0) {
            token_budget += back;
            --idx;
          }
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

WaitingQueue& V1Scheduler::next_waiting_queue() {
  if (skipped_.empty()) return waiting_;
  if (waiting_.empty() || !skipped_.priority()) return skipped_;
  // PRIORITY: the better of the two heads.
  return waiting_.before(waiting_.front(), skipped_.front(), seqs_) ? waiting_ : skipped_;
}

void V1Scheduler::promote(uint32_t id) {
  SeqState& s = seqs_[id];
  kv_.cache_tokens(id, s, s.num_computed_tokens);
  if (s.num_computed_tokens == s.num_tokens()) --s.num_computed_tokens;
  s.status = SeqStatus::kWaiting;
}

void V1Scheduler::schedule_waiting(int64_t& token_budget) {
  step_skipped_.clear();
  // "Record the LoRAs in scheduled_running_reqs".
  scheduled_loras_.clear();
  if (config_.max_loras > 0) {
    for (const uint32_t id : building().ids()) {
      const uint16_t l = seqs_[id].lora;
      if (l > 0 && std::find(scheduled_loras_.begin(), scheduled_loras_.end(), l) ==
                       scheduled_loras_.end()) {
        scheduled_loras_.push_back(l);
      }
    }
  }
  while (num_waiting() > 0 && token_budget > 0) {
    if (int64_t(running_.size()) == config_.max_num_seqs) break;
    WaitingQueue& queue = next_waiting_queue();
    const uint32_t id = queue.front();
    SeqState& s = seqs_[id];
    if (s.status == SeqStatus::kWaitingForRemoteKvs) {
      if (!offload_->load_done(id)) {  // "still in WAITING_FOR_REMOTE_KVS state"
        queue.pop_front(seqs_);
        step_skipped_.push_back(id);
        continue;
      }
      promote(id);
    }
    // "Check that adding the request still respects the max_loras constraint": skip it, not
    // stop (requests behind it with no adapter or a scheduled one may still be admitted).
    if (config_.max_loras > 0 && s.lora > 0 &&
        int64_t(scheduled_loras_.size()) >= config_.max_loras &&
        std::find(scheduled_loras_.begin(), scheduled_loras_.end(), s.lora) ==
            scheduled_loras_.end()) {
      queue.pop_front(seqs_);
      step_skipped_.push_back(id);
      ++lora_skips_;
      continue;
    }
    int64_t hit = 0, external = 0;
    bool load_async = false;
    if (s.num_computed_tokens == 0) {
      // A waiting request has computed nothing (a preempted one restarts from 0): look up the
      // prefix cache, then the CPU tier beyond its hit.
      hit = kv_.get_computed_blocks(id, s);
      if (offload_) {
        external = offload_->matched_tokens(id, s, hit);
        if (external < 0) {  // the connector cannot say yet: try again next step
          queue.pop_front(seqs_);
          step_skipped_.push_back(id);
          continue;
        }
        load_async = external > 0 && config_.offload.async_load();
      } else {
        // A disaggregated prefill's KV beyond the local hit: allocated now, never computed here
        // (Scheduler.schedule: num_computed_tokens = local + external).
        external = std::max<int64_t>(0, int64_t(s.external_tokens) - hit);
      }
    }
    // "KVTransfer: loading remote KV, do not allocate for new work"; else the tokens not computed.
    int64_t n = 0;
    if (!load_async) {
      n = s.num_tokens() - s.num_computed_tokens - hit - external;
      const int64_t threshold = config_.long_prefill_token_threshold;
      if (0 < threshold && threshold < n) n = threshold;
      n = std::min(n, token_budget);
      assert(n > 0);
    }
    // A request resumed with KV already loaded drafts ahead like a running one.
    const int64_t lookahead = s.num_computed_tokens == 0 ? 0 : lookahead_;
    if (!kv_.allocate_slots(id, s, external + n, hit, config_.reserve_full_isl, lookahead,
                            /*delay_cache=*/load_async)) {
      break;
    }
    if (offload_ && s.num_computed_tokens == 0) offload_->admitted(id, s, hit, external);
    queue.pop_front(seqs_);
    if (s.num_computed_tokens == 0) {
      s.num_computed_tokens = static_cast<int32_t>(hit + external);
      // vLLM's num_cached_tokens is set once, at the first scheduling.
      if (s.cached_tokens < 0) s.cached_tokens = static_cast<int32_t>(hit);
      step_cached_tokens_ += hit;
    }
    s.external_tokens = 0;  // once: after a preemption the request recomputes here
    if (load_async) {
      // WAITING_FOR_REMOTE_KVS: its blocks held, nothing computed until the load is done.
      s.status = SeqStatus::kWaitingForRemoteKvs;
      step_skipped_.push_back(id);
      continue;
    }
    running_.push_back(id);
    s.status = SeqStatus::kRunning;
    s.prefill_stage = true;
    out_.new_prefills.push_back(id);
    if (config_.max_loras > 0 && s.lora > 0 &&
        std::find(scheduled_loras_.begin(), scheduled_loras_.end(), s.lora) ==
            scheduled_loras_.end()) {
      scheduled_loras_.push_back(s.lora);
    }
    schedule_tokens(id, n);
    token_budget -= n;
  }
  // "re-queue requests skipped in this pass ahead of older skipped items", in their order.
  for (auto it = step_skipped_.rbegin(); it != step_skipped_.rend(); ++it)
    skipped_.push_front(*it, seqs_);
}

}  // namespace servesim
