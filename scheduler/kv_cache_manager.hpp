// KvCacheManager: vLLM V1's paged KV cache with its prefix cache, for one replica
// (vllm/v1/core/kv_cache_manager.py KVCacheManager, block_pool.py BlockPool,
// single_type_kv_cache_manager.py FullAttentionManager, at the V1 revision of
// scheduler/vllm_revision.hpp). Same rules, fewer objects:
//  - blocks are allocated for exactly the tokens a step computes (no watermark); a cached block
//    with no user (reference count 0) stays in the free queue and counts as free;
//  - the free queue is least-recently-freed first: a request frees its blocks tail first, so its
//    last blocks are evicted before its first; a block taken from the queue loses its hash;
//  - a full block is cached (its hash registered) when a step is scheduled to fill it, so a
//    request admitted in the next step can hit it; partial blocks are never cached;
//  - a new request's hit is the longest run of its leading full blocks found in the cache, at
//    most num_tokens - 1 tokens (the last token is always computed, for its logits).
//  - blocks are not de-duplicated (BlockHashToBlockMap): when two requests fill blocks with the
//    same content, both are cached under the hash, a lookup returns the earliest cached one
//    still there, and each is evicted on its own.
//  - the hash map holds what a lookup can find: a block of content only its request has (a
//    token of its own, BlockHasher::shared_blocks) is cached as vLLM caches it (it counts as
//    cached and its eviction is counted) but enters the map only when its request is preempted,
//    since that request, waiting again, is the only one that can look it up; the order of the
//    blocks under one hash is still the order they were cached in.
// A model with sliding-window layers (set_sliding_window; gpt-oss) has a second group of blocks
// from the same pool, vLLM's HybridKVCacheCoordinator over a SlidingWindowManager beside the full
// attention one:
//  - its group comes first (gpt-oss's layer 0 has the window): its new blocks are taken from the
//    free queue before the full group's, and freed before them;
//  - it has a slot for each block of the request's tokens, as the full group; before each
//    allocation the blocks wholly before the window of the next token (its first
//    computed - window + 1 tokens) are freed, latest first, their slots left null
//    (remove_skipped_blocks), so a decode holds about window / block_size + 1 of them;
//  - the admission gate counts at most sliding_window_max_blocks of them
//    (max_admission_blocks_per_request).
// With the prefix cache, its full blocks are cached under their hash keyed by the group (all of
// them, a request's own content too: the exception to the own-content rule below), and a hit is
// the full layers' longest, shortened to where the window's blocks before it are cached too
// (HybridKVCacheCoordinator.find_longest_cache_hit, one pass: the simple hybrid). Its
// evictions count with the full group's (vLLM's block pool counts every group's). KV events
// and prefix-aware routers see the full layers' blocks only (cached_prefix_blocks).
// EAGLE's dropped hit block is not modelled with a window (refused in sim/).
// A hybrid model's linear-attention layers (set_state_groups) hold a block a group and request
// for their constant state, beside the full-attention group, without the prefix cache.
// Promises: 0 <= free_blocks() <= usable_blocks(); every block is in the free queue exactly when
// no request holds it; a cached block is in its hash's chain exactly once; nothing allocates
// after construction except a request's block table growing past its largest size so far.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <span>
#include <vector>

#include "models/memory_plan.hpp"
#include "scheduler/block_hasher.hpp"
#include "scheduler/sequence.hpp"
#include "util/hash.hpp"

namespace servesim {

// vLLM's KV cache events (vllm/distributed/kv_events.py: BlockStored, BlockRemoved,
// AllBlocksCleared), as llm-d's precise prefix-cache index consumes them, per content: a hash is
// stored when the cache first holds a block under it and removed when it holds none any more
// (duplicates of one content, which vLLM reports block by block, change nothing an index keeps).
class KvEventSink {
 public:
  virtual void hash_stored(uint64_t hash) = 0;
  virtual void hash_removed(uint64_t hash) = 0;

 protected:
  ~KvEventSink() = default;
};

class KvCacheManager {
 public:
  // NUM_GPU_BLOCKS counts vLLM's reserved null block, so usable_blocks() is one fewer.
  // REQUIRES: num_gpu_blocks >= 2, block_size > 0, max_model_len > 0; HASHER outlives this
  // (it may be null when caching is off).
  KvCacheManager(int64_t num_gpu_blocks, int block_size, bool enable_caching, int64_t max_model_len,
                 const BlockHasher* hasher, size_t num_requests);
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // Sliding-window layers of WINDOW_TOKENS (0: none), with the scheduler's token budget, which
  // bounds the blocks the admission gate counts for them. Before the first allocation.
  void set_sliding_window(int window_tokens, int64_t max_num_batched_tokens);
  int sliding_window() const { return window_; }
  // A hybrid model's linear-attention layers (ModelSpec::kv_cache_state_groups): GROUPS groups
  // whose block size is max_model_len (vLLM's MambaManager in mamba_cache_mode none), so a
  // request holds one block of each, its state, from its first allocation to its free. They
  // come before the full-attention group, as a hybrid model's layer 0 is linear: their blocks
  // are taken from the free queue first and freed first. Before the first allocation; REQUIRES
  // caching off (vLLM's align mode, which caches states, is not modelled).
  void set_state_groups(int groups) {
    assert(groups >= 0 && !(groups > 0 && caching_));
    state_groups_ = groups;
  }
  int state_groups() const { return state_groups_; }
  // Blocks a request of TOKENS tokens holds at its peak, every group (what must fit the pool).
  int64_t peak_blocks_for(int64_t tokens) const {
    const int64_t full = blocks_for(tokens);
    return (window_ > 0 ? full + std::min(full, window_max_blocks_) : full) + state_groups_;
  }

  // An EAGLE-family drafter (eagle, eagle3, mtp) runs with the KV: a hit loses its last block
  // (FullAttentionManager.find_longest_cache_hit with use_eagle: "computed.pop()"), whose
  // hidden states the drafter needs recomputed.
  void set_drop_last_hit_block(bool drop) {
    assert(!(drop && window_ > 0));  // EAGLE with a sliding window: not modelled
    drop_last_hit_ = drop;
  }

  // get_computed_blocks: the tokens of request ID (state S, computing nothing yet) found in the
  // cache, block-aligned and at most num_tokens - 1 (less a block for EAGLE; with a sliding
  // window, ending where the window's blocks before it are cached too); remembers the
  // blocks for the next
  // allocate_slots. Records the query and hits as vLLM's PrefixCacheStats does (every call, a
  // request retried while waiting counting again; a preempted request's apart).
  int64_t get_computed_blocks(uint32_t id, const SeqState& s);

  // allocate_slots: blocks for S's computed tokens plus NUM_NEW_TOKENS and NUM_LOOKAHEAD_TOKENS
  // (slots for a speculative drafter's proposals), the cache hit of the last get_computed_blocks
  // included when NUM_NEW_COMPUTED_TOKENS > 0 (a new request). DELAY_CACHE: the new blocks are
  // not cached yet (their KV is still loading: delay_cache_blocks). With
  // FULL_SEQUENCE_MUST_FIT, also refuses unless every known token of S would fit now (vLLM's
  // scheduler_reserve_full_isl admission gate). False when the free blocks do not suffice,
  // changing nothing but, with a sliding window, the blocks freed before they are counted (as
  // vLLM's remove_skipped_blocks). Keeps S.blocks and S.next_cached_block_end (S: ID's state, the
  // one given for ID every time). Inline: the common case, a running request whose blocks already
  // hold this step's tokens (a decode inside its last block), allocates nothing and at most caches
  // a block that filled; it reads only S.
  bool allocate_slots(uint32_t id, SeqState& s, int64_t num_new_tokens,
                      int64_t num_new_computed_tokens, bool full_sequence_must_fit,
                      int64_t num_lookahead_tokens = 0, bool delay_cache = false) {
    if (num_new_computed_tokens == 0 && !full_sequence_must_fit) {
      // num_new_tokens > 0, so a request that holds no block never passes; nor any with a
      // sliding window (fast_block_size_ 0), whose blocks leave the window as it moves.
      const int64_t end = int64_t(s.num_computed_tokens) + num_new_tokens;
      if (std::min(end + num_lookahead_tokens, max_model_len_) <=
          int64_t(s.blocks) * fast_block_size_) {
        cache_tokens(id, s, std::min<int64_t>(end, s.num_tokens()));
        return true;
      }
    }
    return allocate_new_blocks(id, s, num_new_tokens, num_new_computed_tokens,
                               full_sequence_must_fit, num_lookahead_tokens, delay_cache);
  }

  // cache_blocks(request, NUM_TOKENS): registers the full blocks among request ID's (state S)
  // first NUM_TOKENS tokens (AsyncScheduler, once a step's sampled tokens are known). Nothing when
  // caching is off or ID holds no blocks.
  // Inline: it runs for every sampled token, and a new block fills once in block_size tokens.
  void cache_tokens(uint32_t id, SeqState& s, int64_t num_tokens) {
    if (num_tokens >= s.next_cached_block_end && caching_) {
      Table& t = tables_[size_t(table_of_[id])];
      cache_blocks(id, t, num_tokens);
      keep(s, t);
    }
  }

  // Frees request ID's blocks (state S), tail first (vLLM free(): reversed order). PREEMPTED: it
  // will ask for its own blocks again (finished otherwise: its own content is of use to nobody).
  void free(uint32_t id, SeqState& s, bool preempted = false);

  // Room for one more request id (num_requests + 1).
  void add_request_slot() { table_of_.push_back(-1); }
  void reserve(size_t num_requests) { table_of_.reserve(num_requests); }
  // The leading full blocks of the first NUM_TOKENS tokens of the request HASHER names ID that
  // this cache holds now, changing nothing (no statistics, no touch): what a prefix-aware router
  // learns of this replica (the gateway asks holds() block by block, each hash computed once
  // for every replica; PrefixIndex promises the same count). 0 when caching is off. The full
  // layers' blocks only: with a sliding window the hit may be shorter (its window's blocks
  // evicted), which a router does not learn (vLLM reports them as events of their group, which
  // servesim does not model).
  int64_t cached_prefix_blocks(const BlockHasher& hasher, uint32_t id, int64_t num_tokens) const;
  // Whether a block of content HASH is cached (changing nothing).
  bool holds(uint64_t hash) const { return caching_ && lookup(hash) >= 0; }
  // vLLM's KVCacheManager.reset_prefix_cache(): forgets every cached block's hash, so no prefix
  // is found again; refused (false, nothing changed) while a request holds blocks. For a replica
  // started afresh by an autoscaler (a new pod has an empty cache).
  bool reset_prefix_cache();
  // Where this cache reports the hashes it stores and removes (null: nowhere): the hashes of
  // content other requests may hold (BlockHasher::shared_blocks), those of a request's own tokens
  // being of use to nobody else. SINK outlives this or is replaced first; it is told of the
  // shared hashes cached already.
  void set_event_sink(KvEventSink* sink);
  int64_t usable_blocks() const { return usable_; }
  int64_t free_blocks() const { return num_free_; }
  int64_t used_blocks() const { return usable_ - num_free_; }
  // Blocks of request ID's full-attention group (its slots: one a block of its tokens).
  int64_t blocks_held(uint32_t id) const {
    const int32_t t = table_of_[id];
    return t < 0 ? 0 : int64_t(tables_[size_t(t)].blocks.size());
  }
  int block_size() const { return block_size_; }
  bool caching() const { return caching_; }

  struct Stats {
    int64_t queries = 0, hits = 0;                      // tokens, requests not preempted
    int64_t preempted_queries = 0, preempted_hits = 0;  // tokens, requests re-admitted
    int64_t evictions = 0;                              // cached blocks reused for new content
  };
  const Stats& stats() const { return stats_; }

  // Blocks request ID holds in the sliding-window group (its slots less the null ones).
  int64_t window_blocks_held(uint32_t id) const {
    const int32_t t = table_of_[id];
    return t < 0 ? 0 : int64_t(tables_[size_t(t)].window.size());
  }
  // For tests: the block ids request ID holds, in order, and whether BLOCK is cached.
  std::span<const int32_t> blocks_of(uint32_t id) const;
  bool is_cached(int32_t block) const;
  int32_t ref_count(int32_t block) const { return blocks_[size_t(block)].ref; }
  // The free queue from its head (evicted first), for tests; O(blocks).
  std::vector<int32_t> free_queue() const;

 private:
  // The block pool's layout: what every allocation and free touches is 8 bytes a block, in one
  // array (Block), with a byte of cache state beside it (cached_); a block's hash and its links
  // to the blocks cached under the same hash (Hashed) are read only for content a lookup can
  // find. The free queue is an array of block ids in queue order, not a linked list through the
  // blocks: popping its head reads the next id from a line the prefetcher brings, where a list
  // made each pop wait for the popped block's record to learn the next (in a fleet of 64
  // replicas the pools outgrow the caches and every pop missed; docs/speed.md).
  struct Block {
    int32_t ref = 0;
    int32_t queue_pos = -1;  // its entry in queue_ while free
  };
  enum CacheState : uint8_t {
    kNotCached,
    // Cached content of its request's own, whose hash nobody has asked for: unmapped (no lookup
    // can ask for it before its request is preempted). Marked when its request frees it: while
    // held, its table's num_cached says it is cached, and nothing reads its state.
    kOwn,
    kHashed,  // cached under Hashed::hash and in the hash map
  };
  struct Hashed {
    uint64_t hash = 0;
    int32_t dup_prev = -1, dup_next = -1;  // other blocks cached under the same hash, oldest first
    bool shared = false;  // cached content other requests may hold (BlockHasher::shared_blocks)
  };
  struct Table {
    std::vector<int32_t> blocks;
    int64_t num_cached = 0;      // leading blocks whose hash is known (cached or hit)
    uint64_t last_hash = 0;      // hash of block num_cached - 1 while its content is shared
    int64_t shared_blocks = -1;  // the hasher's shared_blocks(request), asked once; -1: not yet
    // The sliding-window group: its first window_skipped slots null, then these blocks.
    std::vector<int32_t> window;
    int64_t window_skipped = 0;
    int64_t window_num_cached = 0;  // its slots cached (or hit), null ones included
    uint64_t window_last_hash = 0;  // the hash of slot window_num_cached - 1
    std::vector<int32_t> state;     // a block of each state group (set_state_groups)
  };

  // Free queue (vLLM FreeKVCacheBlockQueue, head evicted first): the entries of queue_ from
  // queue_head_ to queue_end_, a block taken from the middle (a hit on a free block) leaving a 0
  // (the null block's entry, never free) that popping skips; compacted when an append finds no
  // room. An entry is the block's id with its CacheState above kStateShift, which cannot change
  // while the block is free (reset_prefix_cache rewrites them): a pop learns whether it evicts
  // from the entry, not from a random byte of cached_.
  static constexpr int kStateShift = 30;
  static constexpr uint32_t kIdMask = (1u << kStateShift) - 1;
  static_assert(kMaxKvBlocks <= int64_t(kIdMask));
  void queue_remove(int32_t b);
  void queue_append(int32_t b);
  uint32_t queue_pop_front();  // the head's entry
  // Hash map from a block hash to the oldest block cached under it (the others follow in its
  // dup chain): open addressing, linear probing.
  size_t slot_of(uint64_t hash) const;
  int32_t lookup(uint64_t hash) const;
  void erase(uint64_t hash);
  // BlockHashToBlockMap.pop(hash, block): uncaches block B, keeping its duplicates cached.
  void uncache(int32_t b);
  Table& table(uint32_t id);
  void release_table(uint32_t id);
  // S's copy of its table T's size and next block to cache.
  void keep(SeqState& s, const Table& t) const {
    s.blocks = int32_t(t.blocks.size());
    s.next_cached_block_end =
        caching_ ? int32_t(std::min<int64_t>((t.num_cached + 1) * block_size_, INT32_MAX))
                 : INT32_MAX;
  }
  void cache_blocks(uint32_t id, Table& t, int64_t num_tokens);
  // Caches block B under HASH (kHashed) and puts it into the hash map, at the end of its hash's
  // chain.
  void map_block(int32_t b, uint64_t hash);
  // F(hash) for every hash of shared content in the map.
  template <class F>
  void for_each_shared_hash(F f) const;
  // allocate_slots beyond the blocks already held: hits, new blocks, the admission gate; with
  // the sliding-window group (KWINDOW) or without.
  template <bool kWindow>
  bool allocate(uint32_t id, SeqState& s, int64_t num_new_tokens, int64_t num_new_computed_tokens,
                bool full_sequence_must_fit, int64_t num_lookahead_tokens, bool delay_cache);
  bool allocate_new_blocks(uint32_t id, SeqState& s, int64_t num_new_tokens,
                           int64_t num_new_computed_tokens, bool full_sequence_must_fit,
                           int64_t num_lookahead_tokens, bool delay_cache);
  int64_t num_evictable_hits() const;
  // BlockPool.touch: block B (a hit) taken out of the free queue if free, one more user; B.
  int32_t touch(int32_t b);
  // A block of the sliding-window group or a state group one user fewer, back in the free queue
  // when none is left (the full group's free() also marks its own content cached: kOwn).
  void release_group_block(int32_t b);
  // A block from the head of the free queue, evicting what it cached (get_new_blocks).
  int32_t take_free_block();
  // Blocks wholly before the window of the token after TOTAL_COMPUTED (get_num_skipped_tokens).
  int64_t window_skipped_blocks(int64_t total_computed) const {
    return std::max<int64_t>(total_computed - window_ + 1, 0) / block_size_;
  }
  // remove_skipped_blocks on T's sliding-window group.
  void free_skipped(Table& t, int64_t total_computed);
  // A sliding-window block's hash: the content's, keyed by the group.
  static uint64_t window_hash(uint64_t h) {
    const uint64_t k = hash_combine(h, 0x5157a9e1d0b10c4bULL);  // the group's key
    return k != 0 ? k : 1;                                      // 0 marks an empty map slot
  }
  // The sliding-window group's part of a hit (get_computed_blocks): trims hits_ and fills
  // window_hits_.
  void window_hit();
  // cache_blocks on T's sliding-window group, up to NUM_FULL blocks.
  void cache_window(uint32_t id, Table& t, int64_t num_full);

  int block_size_;
  // The tokens a held block takes on allocate_slots' inline path: block_size_, or 0 with a
  // sliding window (every allocation then checks the window).
  int64_t fast_block_size_;
  bool caching_;
  bool drop_last_hit_ = false;
  int window_ = 0;                 // sliding window in tokens; 0: no sliding-window group
  int state_groups_ = 0;           // set_state_groups
  int64_t window_max_blocks_ = 0;  // sliding_window_max_blocks
  int64_t max_model_len_;
  const BlockHasher* hasher_;
  KvEventSink* sink_ = nullptr;
  int64_t usable_;
  std::vector<Block> blocks_;    // index 0 is vLLM's null block, never used
  std::vector<uint8_t> cached_;  // CacheState, by block
  std::vector<Hashed> hashed_;   // read while cached_ is kHashed
  std::vector<uint32_t> queue_;  // its size fixed: twice the blocks
  size_t queue_head_ = 0, queue_end_ = 0;
  int64_t num_free_ = 0;
  std::vector<uint64_t> map_keys_;  // 0 = empty
  std::vector<int32_t> map_values_;
  size_t map_mask_ = 0;
  std::vector<int32_t> table_of_;  // request id -> index into tables_, -1 = none
  std::vector<Table> tables_;
  std::vector<int32_t> spare_tables_;
  std::vector<int32_t> hits_;  // the last get_computed_blocks' blocks
  // With a sliding window: the hashes of hits_'s blocks, and the window's hit blocks from slot
  // window_hit_skipped_ on.
  std::vector<uint64_t> hit_hashes_;
  std::vector<int32_t> window_hits_;
  int64_t window_hit_skipped_ = 0;
  Stats stats_;
};

}  // namespace servesim
