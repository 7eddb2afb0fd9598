// RequestQueue: the FIFO of request ids that vLLM keeps as a deque (`waiting`, `running`). The
// schedulers pop it at both ends; it grows when full (amortised, never per step once warm).
#pragma once

#include <algorithm>
#include <boost/circular_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <span>

namespace servesim {

class RequestQueue {
 public:
  explicit RequestQueue(size_t capacity = 64) : q_(capacity > 0 ? capacity : 1) {}
  bool empty() const { return q_.empty(); }
  size_t size() const { return q_.size(); }
  uint32_t front() const { return q_.front(); }
  uint32_t back() const { return q_.back(); }
  uint32_t operator[](size_t i) const { return q_[i]; }
  // The ids in order, in one array: O(size) if the ring wraps (it is rotated), O(1) otherwise,
  // and it stays so while the queue only grows and shrinks at the back or erases. Valid until the
  // next push.
  std::span<const uint32_t> linear() {
    const uint32_t* p = q_.linearize();
    return {p, q_.size()};
  }
  void pop_front() { q_.pop_front(); }
  void pop_back() { q_.pop_back(); }
  void push_back(uint32_t id) {
    grow();
    q_.push_back(id);
  }
  void push_front(uint32_t id) {
    grow();
    q_.push_front(id);
  }
  // Removes every id PRED holds for, keeping the others' order.
  template <class Pred>
  void remove_if(Pred pred) {
    q_.erase(std::remove_if(q_.begin(), q_.end(), pred), q_.end());
  }

 private:
  void grow() {
    if (q_.full()) q_.set_capacity(q_.capacity() * 2);
  }
  boost::circular_buffer<uint32_t> q_;
};

}  // namespace servesim
