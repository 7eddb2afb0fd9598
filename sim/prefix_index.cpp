#include "sim/prefix_index.hpp"

#include <algorithm>
#include <bit>
#include <cassert>

#include "util/hash_slots.hpp"

namespace servesim {

PrefixIndex::PrefixIndex(size_t replicas)
    : replicas_(replicas), words_((replicas + 63) / 64), sinks_(replicas), alive_(words_) {
  for (size_t i = 0; i < replicas; ++i) {
    sinks_[i].index = this;
    sinks_[i].replica = i;
  }
  keys_.assign(1024, 0);
  masks_.assign(keys_.size() * words_, 0);
  mask_ = keys_.size() - 1;
}

size_t PrefixIndex::slot_of(uint64_t hash) const {
  return probe_slot(keys_, mask_, hash);
}

void PrefixIndex::grow() {
  std::vector<uint64_t> keys(keys_.size() * 2, 0), masks(keys.size() * words_, 0);
  keys.swap(keys_);
  masks.swap(masks_);
  mask_ = keys_.size() - 1;
  for (size_t s = 0; s < keys.size(); ++s) {
    if (keys[s] == 0) continue;
    const size_t t = slot_of(keys[s]);
    keys_[t] = keys[s];
    std::copy_n(masks.data() + s * words_, words_, mask(t));
  }
}

void PrefixIndex::add(uint64_t hash, size_t replica) {
  assert(hash != 0 && replica < replicas_);
  size_t s = slot_of(hash);
  if (keys_[s] == 0) {
    if (2 * (size_ + 1) > keys_.size()) {  // at most half full: short probes
      grow();
      s = slot_of(hash);
    }
    keys_[s] = hash;
    ++size_;
  }
  mask(s)[replica / 64] |= uint64_t(1) << (replica % 64);
}

void PrefixIndex::remove(uint64_t hash, size_t replica) {
  const size_t s = slot_of(hash);
  if (keys_[s] != hash) return;
  uint64_t* m = mask(s);
  m[replica / 64] &= ~(uint64_t(1) << (replica % 64));
  if (std::all_of(m, m + words_, [](uint64_t w) { return w == 0; })) erase_slot(s);
}

void PrefixIndex::erase_slot(size_t i) {
  const size_t hole = backward_shift(
      keys_, mask_, i, [&](size_t to, size_t from) { std::copy_n(mask(from), words_, mask(to)); });
  std::fill_n(mask(hole), words_, 0);
  --size_;
}

void PrefixIndex::leading_blocks(const BlockHasher& hasher, uint32_t id, int64_t max_blocks,
                                 std::span<int64_t> out) const {
  assert(out.size() == replicas_);
  std::fill(alive_.begin(), alive_.end(), ~uint64_t(0));
  if (replicas_ % 64 != 0) alive_.back() = (uint64_t(1) << (replicas_ % 64)) - 1;
  // Replica i's count is the first block whose hash it lacks (every replica drops out once).
  auto drop = [&](size_t w, uint64_t bits, int64_t k) {
    for (; bits != 0; bits &= bits - 1)
      out[w * 64 + size_t(std::countr_zero(bits))] = k;
  };
  uint64_t parent = 0;
  int64_t k = 0;
  for (bool any = true; any && k < max_blocks; ++k) {
    const uint64_t h = hasher.block_hash(id, k, parent);
    const size_t s = slot_of(h);
    const uint64_t* m = keys_[s] == h ? mask(s) : nullptr;
    any = false;
    for (size_t w = 0; w < words_; ++w) {
      const uint64_t held = m != nullptr ? m[w] : 0;
      drop(w, alive_[w] & ~held, k);
      alive_[w] &= held;
      any |= alive_[w] != 0;
    }
    parent = h;
  }
  for (size_t w = 0; w < words_; ++w)
    drop(w, alive_[w], k);
}

}  // namespace servesim
