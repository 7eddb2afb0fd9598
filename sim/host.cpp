#include "sim/host.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim {

void Host::arrive(const RequestSpec& r, double sent_s) {
  if (listener_ != nullptr) listener_->on_load_change(index_);
  if (busy_ && lag_) {
    // The step after the running one counts as scheduled already: this request can join the
    // step after that.
    arrived_during_step_.emplace_back(&r, sent_s);
    return;
  }
  // Scheduling ahead, the next schedule() is at the end of the running step, for the step after
  // the one queued: the same lag, from the scheduler's own state.
  admit(r, sent_s);
  if (listener_ != nullptr) listener_->on_load_change(index_);
}

void Host::admit_deferred(std::vector<std::pair<const RequestSpec*, double>>& requests) {
  for (const auto& [r, sent_s] : requests)
    admit(*r, sent_s);
  requests.clear();
}

bool Host::admit(const RequestSpec& r, double sent_s) {
  uint32_t id = r.id;
  if (global_of_ != nullptr) {  // the replica's next number
    id = uint32_t(global_of_->size());
    global_of_->push_back(r.id);
  }
  // A prefill instance answers max_tokens 1; a decode instance receives all but the last prompt
  // token's KV (it recomputes that one for its logits, as vLLM's KV connectors do).
  const int32_t output = role_ == ReplicaRole::kPrefill ? 1 : r.output_tokens;
  const int32_t external = role_ == ReplicaRole::kDecode ? r.input_tokens - 1 : 0;
  const RejectReason why =
      scheduler_.add_request(id, r.input_tokens, output, r.priority, r.arrival_s, external, r.lora);
  const bool admitted = why == RejectReason::kNone;
  metrics_.on_arrival(id, sent_s, admitted);
  if (fleet_ != nullptr && role_ != ReplicaRole::kDecode)
    fleet_->on_arrival(r.id, sent_s, admitted);
  if (!admitted) {
    if (listener_ != nullptr) listener_->on_request_done(r.id);
    return false;
  }
  if (!busy_ && !wake_pending_) {
    // Wake after every arrival of this instant, so they are scheduled together.
    loop_.schedule(loop_.now(), EventLoop::kWake, this, kWake);
    wake_pending_ = true;
  }
  return true;
}

void Host::handle(EventLoop&, uint32_t tag) {
  if (listener_ != nullptr) listener_->on_load_change(index_);
  step(tag);
  if (listener_ != nullptr) listener_->on_load_change(index_);
}

void Host::step(uint32_t tag) {
  if (stages_ > 1) {
    pipeline_event(tag);
    return;
  }
  if (tag == kWake || tag == kTransferDone) {
    (tag == kWake ? wake_pending_ : transfer_wake_pending_) = false;
    if (!busy_) start_steps(/*back_to_back=*/false);
    return;
  }
  finish_step();
  if (scheduler_.batches_in_flight() > 0) {
    // EngineCore.step_with_batch_queue: the queued step runs now, and the step after it is
    // scheduled from the state the finished step's output left.
    launch(queued_, scheduler_.oldest_in_flight());
    plan(queued_, /*overlapped=*/true);
    return;
  }
  start_steps(/*back_to_back=*/true);
}

double Host::step_seconds(const StepCost& cost, bool overlapped) const {
  if (!overlapped) return cost.seconds;
  // vLLM V1 async scheduling (--async-scheduling, a batch queue of 2): the CPU schedules and
  // prepares step N+1 while the GPU runs step N, so back-to-back steps cost the longer of the
  // two, not their sum.
  const double gpu_s = cost.seconds - cost.cpu_overhead_s;
  return std::max(gpu_s, cost.cpu_overhead_s);
}

bool Host::plan(Planned& p, bool overlapped) {
  const Batch& batch = scheduler_.schedule();
  const std::span<const KvTransfer> transfers = scheduler_.kv_transfers();
  p.transfers.assign(transfers.begin(), transfers.end());
  if (batch.empty()) {
    // A step without a forward pass (kv_connector_no_forward) still starts its copies.
    start_transfers(p.transfers);
    return false;
  }
  const double now = loop_.now();
  for (uint32_t id : scheduler_.new_prefills()) {  // a request is first scheduled as one
    metrics_.on_scheduled(id, now);
    if (fleet_ != nullptr) fleet_->on_scheduled(global(id), now);
  }
  p.run = cost_.cost(batch.shapes(), batch.totals());
  if (lora_) add_lora(batch, p.run);
  const KvOffloadConnector* offload = scheduler_.kv_offload();
  if (offload != nullptr && !offload->config().async_load()) {
    // LMCache: the step waits for its copies (retrieved before the forward pass, saved before the
    // step ends), one after the other on the link.
    for (const KvTransfer& t : p.transfers)
      p.run.kv_transfer_s += link_latency_s_ + t.bytes / link_bytes_per_s_;
    p.run.seconds += p.run.kv_transfer_s;
  }
  p.run.seconds = step_seconds(p.run, overlapped);
  p.used_blocks = scheduler_.used_blocks();
  p.waiting = scheduler_.num_waiting();
  p.cached_tokens = scheduler_.step_cached_tokens();
  return true;
}

void Host::check_step_seconds(double seconds) const {
  const double now = loop_.now();
  // A cost model fed extreme figures (a GPU of 1e-300 TFLOP/s, a subnormal parameter) gives steps
  // of inf, NaN or centuries: refuse rather than report them.
  if (!(seconds >= 0 && seconds <= 1e6)) {
    throw Error(field::kCostModel,
                format("a step of %.6g s at t = %.6g s: the GPU's figures or the "
                       "cost model's parameters are out of any physical range",
                       seconds, now));
  }
  if (!(now + seconds <= kMaxSimTime_s)) {
    throw Error("", format("the run passes %g s of simulated time (a step at t = %.6g s): its "
                           "arrivals, think times or KV transfers reach too far",
                           kMaxSimTime_s, now));
  }
}

void Host::launch(const Planned& p, const Batch& batch) {
  const double now = loop_.now();
  check_step_seconds(p.run.seconds);
  busy_ = true;
  start_transfers(p.transfers);
  metrics_.on_step(now, p.run, batch, p.used_blocks, p.waiting, p.cached_tokens);
  if (fleet_ != nullptr) {
    fleet_->on_step(now, p.run, batch, p.used_blocks, p.waiting, p.cached_tokens, index_);
  }
  loop_.schedule(now + p.run.seconds, EventLoop::kStepDone, this, kStepDone);
}

void Host::start_steps(bool back_to_back) {
  if (lag_) {
    // Requests that arrived during the step before the one that just ended join now; those that
    // arrived during the one that just ended wait a step, unless nothing else would run.
    admit_deferred(arrived_before_step_);
    arrived_before_step_.swap(arrived_during_step_);
    if (scheduler_.running().empty() && scheduler_.num_waiting() == 0) {
      admit_deferred(arrived_before_step_);
    }
  }
  poll_transfers();
  // Scheduling ahead, this step's CPU work overlapped nothing: the GPU was idle or its previous
  // step had nothing queued behind it. Otherwise a back-to-back step is taken to overlap.
  Planned& next = next_;
  if (!plan(next, /*overlapped=*/lag_ && back_to_back)) {
    busy_ = false;
    if (!loads_.empty() || !stores_.empty()) {
      wake_for_transfers();  // requests wait for KV copies to or from the CPU tier
      return;
    }
    // With every request that could never finish rejected up front, the head of `running` (or
    // of `waiting`, when nothing runs) can always be scheduled when no step is in flight and no
    // KV copy is: an empty batch means no work.
    if (scheduler_.num_waiting() > 0 && scheduler_.running().empty() &&
        scheduler_.kv_offload() != nullptr && scheduler_.used_blocks() > 0) {
      // Waiting requests whose prefixes came from the CPU tier hold their blocks (async loads
      // hold them until promoted, and waiting requests are never preempted), and none can be
      // given the blocks for the rest of its prompt: vLLM 0.15.1's V1 scheduler waits forever
      // here (Running: 0, Waiting: N; vLLM issue #45388, fixed later by reserving a loaded
      // request's whole prompt at admission, PR #44560). A run of it has no answer to give.
      throw Error(field::kKvOffloadingSize,
                  format("vLLM 0.15.1 deadlocks on this run: at t = %.3f s, %zu requests wait, "
                         "those whose prefixes were loaded from the CPU tier hold %lld of the "
                         "%lld GPU KV blocks, and none can be given the blocks for the rest of "
                         "its prompt; "
                         "vLLM then schedules nothing, forever (vLLM issue #45388, fixed after "
                         "0.15.1). Give the GPU more KV cache ({{cache.num_gpu_blocks}}, "
                         "{{cache.gpu_memory_utilization}}), or {{kv_transfer.offloading_backend}} "
                         "lmcache, whose "
                         "loads hold no blocks across steps",
                         loop_.now(), scheduler_.num_waiting(),
                         static_cast<long long>(scheduler_.used_blocks()),
                         static_cast<long long>(scheduler_.usable_blocks())));
    }
    check_not_stalled();
    return;
  }
  launch(next, scheduler_.batch());
  if (ahead_) plan(queued_, /*overlapped=*/true);
}

void Host::pipeline_event(uint32_t tag) {
  switch (tag) {
    case kWake:  // an arrival at an idle engine
      wake_pending_ = false;
      if (busy_) return;
      busy_ = true;
      engine_call();
      return;
    case kStepDone:  // the oldest batch is done: its output, then the next call at once
      finish_step();
      done_head_ = done_head_ + 1 == done_s_.size() ? 0 : done_head_ + 1;
      engine_call();
      return;
    case kEngineCall:  // the engine core's CPU is free to schedule again
      engine_call();
      return;
    default:  // a pipeline has no KV copies (KV offload is refused with it)
      throw std::logic_error("pipeline host: unexpected event " + std::to_string(tag));
  }
}

void Host::engine_call() {
  const double now = loop_.now();
  const int queue = int(done_s_.size());
  double ready_s = now;  // when the engine core's CPU is free (after a batch's CPU work)
  if (scheduler_.num_waiting() > 0 || !scheduler_.running().empty()) {
    Planned& next = next_;
    if (plan(next, /*overlapped=*/false)) {
      launch_into_pipeline(next, scheduler_.batch());
      ready_s = now + next.run.cpu_overhead_s;
      // "Don't block on next worker response unless the queue is full or there are no more
      // requests to schedule": the oldest is checked once this batch is handed over.
      if (scheduler_.batches_in_flight() < queue && done_s_[done_head_] > ready_s) {
        loop_.schedule(ready_s, EventLoop::kWake, this, kEngineCall);
        return;
      }
    }
  }
  if (scheduler_.batches_in_flight() == 0) {
    busy_ = false;
    check_not_stalled();
    return;
  }
  // Block until the oldest batch's output is back.
  loop_.schedule(std::max(ready_s, done_s_[done_head_]), EventLoop::kStepDone, this, kStepDone);
}

void Host::launch_into_pipeline(Planned& p, const Batch& batch) {
  const double now = loop_.now();
  cost_.pipeline_seconds(p.run, batch.totals(), stage_work_s_);
  // Stage after stage, each when the batch before it has left the stage; the sends between
  // stages go while the next batch runs on the sender.
  double enter = now + p.run.cpu_overhead_s;
  // The last stage was free when the batch before this one came out of the pipeline.
  const double previous_done = stage_free_s_.back();
  for (int s = 0; s < stages_; ++s) {
    const double start = std::max(enter, stage_free_s_[size_t(s)]);
    stage_free_s_[size_t(s)] = start + stage_work_s_[size_t(2 * s)];
    if (s + 1 < stages_) enter = stage_free_s_[size_t(s)] + stage_work_s_[size_t(2 * s + 1)];
  }
  const double done = stage_free_s_.back();
  check_step_seconds(done - now);
  const size_t slot = (done_head_ + size_t(scheduler_.batches_in_flight()) - 1) % done_s_.size();
  done_s_[slot] = done;
  // The step's record covers the time from the batch before it coming out of the pipeline to this
  // one coming out, so that busy time, and the KV and queue averages it weights, count each
  // moment once while batches overlap.
  const double from = std::max(now, previous_done);
  p.run.seconds = done - from;
  metrics_.on_step(from, p.run, batch, p.used_blocks, p.waiting, p.cached_tokens);
  if (fleet_ != nullptr) {
    fleet_->on_step(from, p.run, batch, p.used_blocks, p.waiting, p.cached_tokens, index_);
  }
}

void Host::check_not_stalled() const {
  // With every request that could never finish rejected up front, the head of `running` (or of
  // `waiting`, when nothing runs) can always be scheduled when no step is in flight and no KV
  // copy is: an empty batch then means no work.
  if (scheduler_.num_waiting() > 0 || !scheduler_.running().empty()) {
    throw std::logic_error("scheduler stalled at t=" + std::to_string(loop_.now()) + " s with " +
                           std::to_string(scheduler_.num_waiting()) + " waiting and " +
                           std::to_string(scheduler_.running().size()) + " running requests");
  }
}

void Host::add_lora(const Batch& batch, StepCost& run) {
  step_loras_.clear();
  double tokens = 0;
  const auto ids = batch.ids();
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint16_t l = scheduler_.seq(ids[i]).lora;
    if (l == 0) continue;
    tokens += batch.shapes()[i].new_tokens;
    if (std::find(step_loras_.begin(), step_loras_.end(), l) == step_loras_.end()) {
      step_loras_.push_back(l);
    }
  }
  if (lora_kernels_) {
    const StepCost k = lora_kernels_->cost(tokens, int(step_loras_.size()));
    run.lora_s = k.lora_s;
    run.flops += k.flops;
    run.bf16_flops += k.flops;  // LoRA's kernels run in BF16
    run.bytes += k.bytes;
    run.seconds += k.seconds;
    lora_kernel_s_ += k.seconds;
  }
  // set_active_adapters before the forward pass: the step waits for the loads.
  run.lora_load_s = lora_->activate(step_loras_);
  run.seconds += run.lora_load_s;
}

void Host::start_transfers(const std::vector<KvTransfer>& transfers) {
  const double now = loop_.now();
  for (const KvTransfer& t : transfers) {
    std::deque<InFlight>& link = t.load ? loads_ : stores_;
    const double start = link.empty() ? now : std::max(now, link.back().done_s);
    const double seconds = link_latency_s_ + t.bytes / link_bytes_per_s_;
    link.push_back({now, start + seconds, t.request, t.tokens});
    link_busy_s_ += seconds;
  }
}

void Host::poll_transfers() {
  const double now = loop_.now();
  size_t loads = 0, stores = 0;
  while (!loads_.empty() && loads_.front().done_s <= now) {
    const InFlight& f = loads_.front();
    metrics_.on_kv_load(f.request, f.done_s - f.start_s, f.tokens);
    if (fleet_ != nullptr) fleet_->on_kv_load(global(f.request), f.done_s - f.start_s, f.tokens);
    loads_.pop_front();
    ++loads;
  }
  while (!stores_.empty() && stores_.front().done_s <= now) {
    stores_.pop_front();
    ++stores;
  }
  if (loads + stores > 0) scheduler_.kv_transfers_done(loads, stores);
}

void Host::wake_for_transfers() {
  if (transfer_wake_pending_) return;
  double first = INFINITY;
  if (!loads_.empty()) first = loads_.front().done_s;
  if (!stores_.empty()) first = std::min(first, stores_.front().done_s);
  loop_.schedule(first, EventLoop::kWake, this, kTransferDone);
  transfer_wake_pending_ = true;
}

void Host::finish_step() {
  const double now = loop_.now();
  poll_transfers();
  // One call per request and step: its tokens arrive as one streamed chunk (speculative decoding
  // sends the accepted drafts with the sampled token), one inter-token gap as vLLM bench counts.
  scheduler_.update_from_output([&](uint32_t id, int32_t, bool first, bool finished) {
    const double gap_s = metrics_.on_token(id, now, first);
    if (role_ == ReplicaRole::kPrefill) {
      if (finished && listener_ != nullptr) listener_->on_prefill_done(global(id));
      return;
    }
    // A colocated replica's collector keeps the request's token times, which the fleet's records
    // take at the end (fleet.cpp collect_records): the fleet's collector adds only the gap, not
    // a second per-request update at the workload id (a line of its own in a large fleet).
    if (fleet_ != nullptr) {
      if (role_ == ReplicaRole::kColocated) {
        fleet_->on_gap(gap_s, first);
      } else {
        fleet_->on_token(global(id), now, first);
      }
    }
    if (finished && listener_ != nullptr) listener_->on_request_done(global(id));
  });
}

}  // namespace servesim
