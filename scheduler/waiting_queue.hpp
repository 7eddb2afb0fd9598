// WaitingQueue: one of vLLM V1's waiting queues (`waiting`, `skipped_waiting`; vllm/v1/core/sched/
// request_queue.py): under --scheduling-policy fcfs a deque (FCFSRequestQueue), under priority
// a heap ordered by (priority, arrival time, request id) (PriorityRequestQueue, Request.__lt__),
// where "prepend" is a push.
// Promises: front() is the request the policy serves next; no allocation once warm.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/request_queue.hpp"
#include "scheduler/sequence.hpp"

namespace servesim {

class WaitingQueue {
 public:
  // KEYS (by request id; null: none): ordered by key before priority, scheduling_hooks.hpp.
  explicit WaitingQueue(bool priority, const std::vector<double>* keys = nullptr)
      : priority_(priority), keys_(keys), fifo_(64) {}

  bool priority() const { return priority_; }
  size_t size() const { return priority_ ? heap_.size() : fifo_.size(); }
  bool empty() const { return size() == 0; }
  // REQUIRES: !empty().
  uint32_t front() const { return priority_ ? heap_.front() : fifo_.front(); }
  void reserve(size_t n) { heap_.reserve(n); }
  // SEQS below: the requests' states by id.
  void pop_front(std::span<const SeqState> seqs) {
    if (priority_) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{seqs, keys_});
      heap_.pop_back();
    } else {
      fifo_.pop_front();
    }
  }
  // add_request.
  void push_back(uint32_t id, std::span<const SeqState> seqs) {
    if (priority_) {
      push_heap(id, seqs);
    } else {
      fifo_.push_back(id);
    }
  }
  // prepend_request.
  void push_front(uint32_t id, std::span<const SeqState> seqs) {
    if (priority_) {
      push_heap(id, seqs);
    } else {
      fifo_.push_front(id);
    }
  }
  // remove_request: ID, wherever it is.
  void remove(uint32_t id, std::span<const SeqState> seqs) {
    if (priority_) {
      heap_.erase(std::find(heap_.begin(), heap_.end(), id));
      std::make_heap(heap_.begin(), heap_.end(), Later{seqs, keys_});
    } else {
      fifo_.remove_if([id](uint32_t r) { return r == id; });
    }
  }
  bool contains(uint32_t id) const {
    if (priority_) return std::find(heap_.begin(), heap_.end(), id) != heap_.end();
    for (size_t i = 0; i < fifo_.size(); ++i) {
      if (fifo_[i] == id) return true;
    }
    return false;
  }
  // Whether A is served before B (Request.__lt__: (priority, arrival_time), then the id).
  bool before(uint32_t a, uint32_t b, std::span<const SeqState> seqs) const {
    return Later{seqs, keys_}(b, a);
  }
  // The FCFS deque (empty under the priority policy).
  const RequestQueue& fifo() const { return fifo_; }
  // The ids in no particular order under the priority policy, in order under FCFS.
  template <class F>
  void for_each(F f) const {
    if (priority_) {
      for (uint32_t id : heap_)
        f(id);
    } else {
      for (size_t i = 0; i < fifo_.size(); ++i)
        f(fifo_[i]);
    }
  }

 private:
  // The heap's order: the smallest ([key,] priority, arrival, id) on top.
  struct Later {
    std::span<const SeqState> seqs;
    const std::vector<double>* keys;
    bool operator()(uint32_t a, uint32_t b) const {
      if (keys != nullptr && (*keys)[a] != (*keys)[b]) return (*keys)[a] > (*keys)[b];
      const SeqState &sa = seqs[a], &sb = seqs[b];
      if (sa.priority != sb.priority) return sa.priority > sb.priority;
      if (sa.workload_arrival_s != sb.workload_arrival_s)
        return sa.workload_arrival_s > sb.workload_arrival_s;
      return a > b;
    }
  };
  void push_heap(uint32_t id, std::span<const SeqState> seqs) {
    heap_.push_back(id);
    std::push_heap(heap_.begin(), heap_.end(), Later{seqs, keys_});
  }

  bool priority_;
  const std::vector<double>* keys_;
  RequestQueue fifo_;
  std::vector<uint32_t> heap_;
};

}  // namespace servesim
