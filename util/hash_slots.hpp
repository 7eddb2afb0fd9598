// Linear-probing slots keyed by nonzero 64-bit hashes (0 marks an empty slot), power-of-two sized:
// the probe and the backward-shift deletion servesim's hash tables share (the V1 prefix cache's
// block map, the fleet's prefix index). Values live beside the keys, in the caller's arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace servesim {

// The slot holding HASH, or the empty slot where it would go. REQUIRES: an empty slot exists.
inline size_t probe_slot(const std::vector<uint64_t>& keys, size_t mask, uint64_t hash) {
  size_t i = size_t(hash) & mask;
  while (keys[i] != 0 && keys[i] != hash)
    i = (i + 1) & mask;
  return i;
}

// Empties slot I by backward-shift deletion (every key stays reachable from its home slot, no
// tombstones): each later key of the run that may move back is moved into the hole, MOVE(to,
// from) moving its value. Returns the slot left empty (its key 0, its value the caller's to
// clear).
template <class Move>
size_t backward_shift(std::vector<uint64_t>& keys, size_t mask, size_t i, Move move) {
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (keys[j] == 0) break;
    const size_t home = size_t(keys[j]) & mask;
    // Move J into the hole at I unless its home lies cyclically in (I, J].
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    keys[i] = keys[j];
    move(i, j);
    i = j;
  }
  keys[i] = 0;
  return i;
}

}  // namespace servesim
