// SchedulingHooks: choices of a scheduling policy made outside the scheduler, for research
// (servesim's Python module lets them be written in Python): the order in which waiting requests
// are admitted, and which running request is preempted when KV blocks run out. The rest of the
// step (budgets, KV allocation, preemption by recompute, async scheduling) stays vLLM V1's.
// With an admission key, `waiting` is ordered by ascending (key, arrival time, request id), as
// vLLM's PriorityRequestQueue orders by (priority, arrival): the key is computed once, when the
// request arrives; and unless the hook chooses the victim, the victim is the running request
// with the largest (key, arrival time), as vLLM's priority policy picks it.
#pragma once

#include <cstdint>
#include <span>

#include "scheduler/sequence.hpp"

namespace servesim {

class SchedulingHooks {
 public:
  // Whether the hook orders admission, and request ID's key (state S, just added).
  virtual bool orders_admission() const = 0;
  virtual double admission_key(uint32_t id, const SeqState& s) const = 0;
  // Whether the hook chooses the victim, and the one of RUNNING (request ids in `running`'s
  // order, states in SEQS by id) to preempt. REQUIRES of the hook: one of RUNNING.
  virtual bool chooses_victim() const = 0;
  virtual uint32_t preemption_victim(std::span<const uint32_t> running,
                                     std::span<const SeqState> seqs) const = 0;

 protected:
  ~SchedulingHooks() = default;
};

}  // namespace servesim
