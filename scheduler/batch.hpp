// Batch: what one engine step runs, as the scheduler decided it: for each scheduled request its
// id and its shape (new tokens, cached context, prefill or decode, emits a token). The arrays are
// parallel and reused from step to step, so building a batch allocates nothing once warm.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "models/cost_model.hpp"

namespace servesim {

class Batch {
 public:
  void reserve(size_t n) {
    if (n > ids_.size()) {
      ids_.resize(n);
      shapes_.resize(n);
    }
  }
  void clear() {
    size_ = 0;
    totals_ = {};
  }
  // SHAPE by value: it arrives in registers. By reference, the load of its two flags as one word
  // right after the caller's separate byte stores missed store forwarding, and the stall took a
  // fifth of a W1 run. The arrays are kept at their largest size so far, so adding is two
  // stores after one compare (push_back's growth path kept it out of the scheduler's loop).
  [[gnu::always_inline]] void add(uint32_t id, SeqShape shape) {
    if (size_ == ids_.size()) grow();
    ids_[size_] = id;
    shapes_[size_] = shape;
    ++size_;
    totals_.add(shape);
  }

  // Takes request ID out of the batch (vLLM V1's priority preemption of a request scheduled
  // earlier in the same step); returns its shape (0 new tokens if absent).
  SeqShape remove(uint32_t id) {
    for (size_t i = 0; i < size_; ++i) {
      if (ids_[i] != id) continue;
      const SeqShape shape = shapes_[i];
      for (size_t j = i + 1; j < size_; ++j) {
        ids_[j - 1] = ids_[j];
        shapes_[j - 1] = shapes_[j];
      }
      --size_;
      totals_ = BatchTotals::of(shapes());  // rare (a priority preemption): summed again
      return shape;
    }
    return SeqShape{};
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<const uint32_t> ids() const { return {ids_.data(), size_}; }
  std::span<const SeqShape> shapes() const { return {shapes_.data(), size_}; }
  int64_t prefill_tokens() const { return totals_.tokens[1]; }
  int64_t decode_tokens() const { return totals_.tokens[0]; }
  int64_t num_tokens() const { return totals_.tokens[0] + totals_.tokens[1]; }
  // The sums a step's cost rests on, kept as entries are added.
  const BatchTotals& totals() const { return totals_; }

 private:
  [[gnu::noinline]] void grow() { reserve(std::max<size_t>(16, 2 * ids_.size())); }

  std::vector<uint32_t> ids_;  // the first size_ entries are the batch's
  std::vector<SeqShape> shapes_;
  size_t size_ = 0;
  BatchTotals totals_;
};

}  // namespace servesim
