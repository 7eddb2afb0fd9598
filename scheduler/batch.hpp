// Batch: what one engine step runs, as the scheduler decided it: for each scheduled request its
// id and its shape (new tokens, cached context, prefill or decode, emits a token). The arrays are
// parallel and reused from step to step, so building a batch allocates nothing once warm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "models/cost_model.hpp"

namespace servesim {

class Batch {
 public:
  void reserve(size_t n) {
    ids_.reserve(n);
    shapes_.reserve(n);
  }
  void clear() {
    ids_.clear();
    shapes_.clear();
    prefill_tokens_ = decode_tokens_ = 0;
  }
  // SHAPE by value: it arrives in registers. By reference, the load of its two flags as one word
  // right after the caller's separate byte stores missed store forwarding, and the stall took a
  // fifth of a W1 run.
  void add(uint32_t id, SeqShape shape) {
    ids_.push_back(id);
    shapes_.push_back(shape);
    (shape.prefill ? prefill_tokens_ : decode_tokens_) += shape.new_tokens;
  }

  // Takes request ID out of the batch (vLLM V1's priority preemption of a request scheduled
  // earlier in the same step); returns its shape (0 new tokens if absent).
  SeqShape remove(uint32_t id) {
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (ids_[i] != id) continue;
      const SeqShape shape = shapes_[i];
      (shape.prefill ? prefill_tokens_ : decode_tokens_) -= shape.new_tokens;
      ids_.erase(ids_.begin() + std::ptrdiff_t(i));
      shapes_.erase(shapes_.begin() + std::ptrdiff_t(i));
      return shape;
    }
    return SeqShape{};
  }

  size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }
  std::span<const uint32_t> ids() const { return ids_; }
  std::span<const SeqShape> shapes() const { return shapes_; }
  int64_t prefill_tokens() const { return prefill_tokens_; }
  int64_t decode_tokens() const { return decode_tokens_; }
  int64_t num_tokens() const { return prefill_tokens_ + decode_tokens_; }

 private:
  std::vector<uint32_t> ids_;
  std::vector<SeqShape> shapes_;
  int64_t prefill_tokens_ = 0;
  int64_t decode_tokens_ = 0;
};

}  // namespace servesim
