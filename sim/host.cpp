#include "sim/host.hpp"

#include <stdexcept>
#include <string>

namespace servesim {

bool Host::arrive(const RequestSpec& r) {
  const RejectReason why = scheduler_.add_request(r.id, r.input_tokens, r.output_tokens);
  const bool admitted = why == RejectReason::kNone;
  metrics_.on_arrival(r.id, loop_.now(), admitted);
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
  if (tag == kWake) {
    wake_pending_ = false;
    if (!busy_) start_step();
    return;
  }
  finish_step();
  start_step();
}

void Host::start_step() {
  const double now = loop_.now();
  const Batch& batch = scheduler_.schedule();
  if (batch.empty()) {
    busy_ = false;
    // With every request that could never finish rejected up front, the head of `running` (or
    // of `waiting`, when nothing runs) can always be scheduled: an empty batch means no work.
    if (!scheduler_.waiting().empty() || !scheduler_.running().empty()) {
      throw std::logic_error("scheduler stalled at t=" + std::to_string(now) + " s with " +
                             std::to_string(scheduler_.waiting().size()) + " waiting and " +
                             std::to_string(scheduler_.running().size()) + " running requests");
    }
    return;
  }
  busy_ = true;
  const StepCost cost = cost_.cost(batch.shapes());
  for (uint32_t id : scheduler_.new_prefills())  // a request is first scheduled as one
    metrics_.on_scheduled(id, now);
  metrics_.on_step(now, cost, batch, scheduler_.block_manager().used_blocks(),
                   scheduler_.waiting().size());
  loop_.schedule(now + cost.seconds, EventLoop::kStepDone, this, kStepDone);
}

void Host::finish_step() {
  const double now = loop_.now();
  scheduler_.update_from_output([&](uint32_t id, bool first, bool finished) {
    metrics_.on_token(id, now, first);
    if (finished && listener_ != nullptr) listener_->on_request_done(id);
  });
}

}  // namespace servesim
