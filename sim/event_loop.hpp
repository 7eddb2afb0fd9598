// EventLoop: a tiny deterministic discrete-event loop in the style of SimPy / ns-3. It knows
// nothing of LLMs: a Process schedules (time, priority, tag) events for itself or another process
// and is called back when the loop reaches them.
// Promises: events run in (time, priority, sequence number) order, so ties are broken the same
// way on every run; time never goes backwards; scheduling allocates nothing once the heap is warm.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>

#include "util/cancel.hpp"

namespace servesim {

class EventLoop {
 public:
  EventLoop() = default;
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  class Process {
   public:
    virtual void handle(EventLoop& loop, uint32_t tag) = 0;

   protected:
    ~Process() = default;
  };

  // Lower runs first among events at the same time. Arrivals come before step completions, and
  // an idle host wakes after every arrival of that instant, so simultaneous requests are seen by
  // the same scheduling decision.
  enum Priority : uint8_t { kArrival = 0, kStepDone = 1, kWake = 2 };

  // REQUIRES: TIME >= now(); TARGET outlives the event.
  void schedule(double time, Priority priority, Process* target, uint32_t tag) {
    assert(time >= now_);
    heap_.push_back(Event{time, priority, next_seq_++, target, tag});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }

  // Runs events until none is left, or until a handler calls stop(). Throws Cancelled when a
  // stop is asked from outside (util/cancel.hpp), polled every 4,096 events.
  void run() {
    while (!heap_.empty() && !stopped_) {
      if ((processed_ & 4095) == 0 && cancel_requested()) throw Cancelled();
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      const Event e = heap_.back();
      heap_.pop_back();
      now_ = e.time;
      ++processed_;
      e.target->handle(*this, e.tag);
    }
  }

  // Ends run() after the event being handled; the events left are never run.
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }
  double now() const { return now_; }
  uint64_t processed() const { return processed_; }

 private:
  struct Event {
    double time;
    Priority priority;
    uint64_t seq;
    Process* target;
    uint32_t tag;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.seq > b.seq;
    }
  };

  std::vector<Event> heap_;
  double now_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t processed_ = 0;
  bool stopped_ = false;
};

}  // namespace servesim
