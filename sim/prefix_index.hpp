// PrefixIndex: which replicas of a fleet hold each block hash in their prefix cache, fed by their
// KV events (scheduler/kv_cache_manager.hpp KvEventSink), as llm-d's precise prefix-cache scorer
// keeps its kvblock index: so that a routing decision asks one index for the prompt's blocks,
// each block's hash computed once, instead of asking every replica's cache for every block.
// Promises: leading_blocks() gives for every replica what KvCacheManager::cached_prefix_blocks
// gives (the index mirrors every cache's set of hashes exactly); memory: one slot per distinct
// cached hash (at most every replica's blocks) of 8 bytes plus one bit per replica, rounded up to
// 64; a query costs one probe per block matched by some replica plus one per replica.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/block_hasher.hpp"
#include "scheduler/kv_cache_manager.hpp"

namespace servesim {

class PrefixIndex {
 public:
  explicit PrefixIndex(size_t replicas);
  PrefixIndex(const PrefixIndex&) = delete;
  PrefixIndex& operator=(const PrefixIndex&) = delete;

  // REPLICA's cache now holds HASH / holds it no more.
  void add(uint64_t hash, size_t replica);
  void remove(uint64_t hash, size_t replica);
  // OUT[i] (one per replica): how many of the leading MAX_BLOCKS blocks of request ID, as HASHER
  // names them, replica i holds, counted until its first miss.
  void leading_blocks(const BlockHasher& hasher, uint32_t id, int64_t max_blocks,
                      std::span<int64_t> out) const;
  // The sink replica I's cache reports to.
  KvEventSink* sink(size_t replica) { return &sinks_[replica]; }
  size_t hashes() const { return size_; }

 private:
  struct Sink final : KvEventSink {
    PrefixIndex* index = nullptr;
    size_t replica = 0;
    void hash_stored(uint64_t h) override { index->add(h, replica); }
    void hash_removed(uint64_t h) override { index->remove(h, replica); }
  };
  size_t slot_of(uint64_t hash) const;  // its slot, or the empty one where it would go
  uint64_t* mask(size_t slot) { return masks_.data() + slot * words_; }
  const uint64_t* mask(size_t slot) const { return masks_.data() + slot * words_; }
  void grow();
  void erase_slot(size_t slot);

  size_t replicas_, words_;
  std::vector<uint64_t> keys_;   // 0 = empty (hashes are never 0)
  std::vector<uint64_t> masks_;  // words_ per slot: bit i set when replica i holds the hash
  size_t mask_ = 0, size_ = 0;
  std::vector<Sink> sinks_;
  mutable std::vector<uint64_t> alive_;  // leading_blocks' replicas still matching (scratch)
};

}  // namespace servesim
