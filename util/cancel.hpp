// A stop asked from outside the simulations: Ctrl-C in the Python module, whose runs have no
// other point at which Python could stop them. Every event loop polls the flag every 4,096
// events (a relaxed atomic load) and ends its run with Cancelled, which no command takes for bad
// input: the module turns it into the KeyboardInterrupt Python raised. One flag for the process:
// a stop asked while several threads run commands stops them all.
#pragma once

#include <atomic>
#include <stdexcept>

namespace servesim {

class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled (a stop was asked: Ctrl-C)") {}
};

inline std::atomic<bool>& cancel_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}
inline void request_cancel() {
  cancel_flag().store(true, std::memory_order_relaxed);
}
inline void clear_cancel() {
  cancel_flag().store(false, std::memory_order_relaxed);
}
inline bool cancel_requested() {
  return cancel_flag().load(std::memory_order_relaxed);
}

}  // namespace servesim
