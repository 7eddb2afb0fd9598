#include "scheduler/kv_cache_manager.hpp"

#include <algorithm>
#include <cassert>

#include "util/hash_slots.hpp"

namespace servesim {

KvCacheManager::KvCacheManager(int64_t num_gpu_blocks, int block_size, bool enable_caching,
                               int64_t max_model_len, const BlockHasher* hasher,
                               size_t num_requests)
    : block_size_(block_size),
      fast_block_size_(block_size),
      caching_(enable_caching),
      max_model_len_(max_model_len),
      hasher_(hasher),
      usable_(num_gpu_blocks - 1),
      blocks_(size_t(num_gpu_blocks)),
      cached_(size_t(num_gpu_blocks), kNotCached),
      hashed_(enable_caching ? size_t(num_gpu_blocks) : 0),
      queue_(size_t(num_gpu_blocks) * 2, 0),
      table_of_(num_requests, -1) {
  assert(num_gpu_blocks >= 2 && block_size > 0 && max_model_len > 0);
  assert(num_gpu_blocks <= int64_t(kIdMask));
  assert(!enable_caching || hasher != nullptr);
  // BlockPool.__init__: every block in the free queue in id order; the null block (0) is taken
  // out for good.
  for (int32_t b = 1; b < int32_t(num_gpu_blocks); ++b)
    queue_append(b);
  size_t cap = 16;
  while (cap < size_t(num_gpu_blocks) * 2)
    cap *= 2;
  if (caching_) {
    map_keys_.assign(cap, 0);
    map_values_.assign(cap, -1);
    map_mask_ = cap - 1;
  }
  hits_.reserve(size_t(blocks_for(max_model_len)));
}

// --- free queue -------------------------------------------------------------------------------

void KvCacheManager::queue_append(int32_t b) {
  if (queue_end_ == queue_.size()) {
    // Compact: the free blocks (at most all but the null block, half of queue_) to the front, in
    // order, their removed entries dropped.
    size_t to = 0;
    for (size_t i = queue_head_; i < queue_end_; ++i) {
      const uint32_t e = queue_[i];
      if (e == 0) continue;
      queue_[to] = e;
      blocks_[e & kIdMask].queue_pos = int32_t(to);
      ++to;
    }
    std::fill(queue_.begin() + std::ptrdiff_t(to), queue_.end(), 0);
    queue_head_ = 0;
    queue_end_ = to;
  }
  blocks_[size_t(b)].queue_pos = int32_t(queue_end_);
  queue_[queue_end_++] = uint32_t(b) | uint32_t(cached_[size_t(b)]) << kStateShift;
  ++num_free_;
}

void KvCacheManager::queue_remove(int32_t b) {
  Block& k = blocks_[size_t(b)];
  assert(k.queue_pos >= 0 && (queue_[size_t(k.queue_pos)] & kIdMask) == uint32_t(b));
  queue_[size_t(k.queue_pos)] = 0;
  k.queue_pos = -1;
  --num_free_;
}

uint32_t KvCacheManager::queue_pop_front() {
  assert(num_free_ > 0);
  while (queue_[queue_head_] == 0)
    ++queue_head_;
  // Its queue_pos is stale until it is free again, and read only while it is.
  --num_free_;
  return queue_[queue_head_++];
}

bool KvCacheManager::is_cached(int32_t block) const {
  if (cached_[size_t(block)] != kNotCached) return true;
  for (const int32_t t : table_of_) {  // held: among its table's cached blocks
    if (t < 0) continue;
    const Table& k = tables_[size_t(t)];
    for (int64_t i = 0; i < k.num_cached; ++i) {
      if (k.blocks[size_t(i)] == block) return true;
    }
  }
  return false;
}

std::vector<int32_t> KvCacheManager::free_queue() const {
  std::vector<int32_t> out;
  for (size_t i = queue_head_; i < queue_end_; ++i) {
    if (queue_[i] != 0) out.push_back(int32_t(queue_[i] & kIdMask));
  }
  return out;
}

// --- hash map ---------------------------------------------------------------------------------

size_t KvCacheManager::slot_of(uint64_t hash) const {
  return probe_slot(map_keys_, map_mask_, hash);
}

int32_t KvCacheManager::lookup(uint64_t hash) const {
  const size_t i = slot_of(hash);
  return map_keys_[i] == hash ? map_values_[i] : -1;
}

void KvCacheManager::erase(uint64_t hash) {
  const size_t i = slot_of(hash);
  if (map_keys_[i] != hash) return;
  const size_t hole = backward_shift(map_keys_, map_mask_, i, [&](size_t to, size_t from) {
    map_values_[to] = map_values_[from];
  });
  map_values_[hole] = -1;
}

void KvCacheManager::uncache(int32_t b) {
  uint8_t& state = cached_[size_t(b)];
  if (state == kHashed) {
    Hashed& k = hashed_[size_t(b)];
    if (k.dup_prev >= 0) {
      hashed_[size_t(k.dup_prev)].dup_next = k.dup_next;
      if (k.dup_next >= 0) hashed_[size_t(k.dup_next)].dup_prev = k.dup_prev;
    } else if (k.dup_next >= 0) {  // the chain's head: its successor becomes the one found
      hashed_[size_t(k.dup_next)].dup_prev = -1;
      map_values_[slot_of(k.hash)] = k.dup_next;
    } else {
      erase(k.hash);
      if (k.shared && sink_ != nullptr) sink_->hash_removed(k.hash);  // shared content's last
    }
    k = Hashed{};
  }
  state = kNotCached;
}

template <class F>
void KvCacheManager::for_each_shared_hash(F f) const {
  for (size_t i = 0; i < map_keys_.size(); ++i) {
    if (map_keys_[i] != 0 && hashed_[size_t(map_values_[i])].shared) f(map_keys_[i]);
  }
}

void KvCacheManager::set_event_sink(KvEventSink* sink) {
  sink_ = sink;
  if (sink_ != nullptr) for_each_shared_hash([&](uint64_t h) { sink_->hash_stored(h); });
}

bool KvCacheManager::reset_prefix_cache() {
  if (used_blocks() > 0) return false;
  // AllBlocksCleared, hash by hash.
  if (sink_ != nullptr) for_each_shared_hash([&](uint64_t h) { sink_->hash_removed(h); });
  std::fill(cached_.begin(), cached_.end(), uint8_t(kNotCached));
  std::fill(hashed_.begin(), hashed_.end(), Hashed{});
  for (size_t i = queue_head_; i < queue_end_; ++i)
    queue_[i] &= kIdMask;  // every free block's entry: not cached
  std::fill(map_keys_.begin(), map_keys_.end(), 0);
  return true;
}

// --- request tables ---------------------------------------------------------------------------

KvCacheManager::Table& KvCacheManager::table(uint32_t id) {
  int32_t& t = table_of_[id];
  if (t < 0) {
    if (!spare_tables_.empty()) {
      t = spare_tables_.back();
      spare_tables_.pop_back();
    } else {
      t = int32_t(tables_.size());
      tables_.emplace_back();
    }
  }
  return tables_[size_t(t)];
}

void KvCacheManager::release_table(uint32_t id) {
  const int32_t t = table_of_[id];
  if (t < 0) return;
  Table& k = tables_[size_t(t)];
  k.blocks.clear();  // keeps its capacity for the next request
  k.num_cached = 0;
  k.last_hash = 0;
  k.shared_blocks = -1;
  k.window.clear();
  k.window_skipped = 0;
  k.window_num_cached = 0;
  k.window_last_hash = 0;
  k.state.clear();
  spare_tables_.push_back(t);
  table_of_[id] = -1;
}

std::span<const int32_t> KvCacheManager::blocks_of(uint32_t id) const {
  const int32_t t = table_of_[id];
  if (t < 0) return {};
  return tables_[size_t(t)].blocks;
}

// --- vLLM's KVCacheManager --------------------------------------------------------------------

void KvCacheManager::window_hit() {
  // SlidingWindowManager.find_longest_cache_hit within the full layers' hit (the simple hybrid's
  // one pass): from the right, the first run of cdiv(window - 1, block) cached blocks ends the
  // hit; without one, the run of cached blocks from block 0 is the hit.
  const int64_t needed = (window_ - 1 + block_size_ - 1) / block_size_;
  int64_t run = 0, end = -1;
  for (int64_t i = int64_t(hits_.size()) - 1; i >= 0; --i) {
    if (lookup(window_hash(hit_hashes_[size_t(i)])) < 0) {
      run = 0;
      continue;
    }
    if (++run >= needed) {
      end = i + run;
      break;
    }
  }
  if (end < 0) end = run;
  hits_.resize(size_t(end));  // the full layers' blocks trimmed to the hit
  // The window's cached blocks from the first the hit's next token still attends to.
  window_hit_skipped_ = window_skipped_blocks(end * block_size_);
  for (int64_t k = window_hit_skipped_; k < end; ++k)
    window_hits_.push_back(lookup(window_hash(hit_hashes_[size_t(k)])));
}

int64_t KvCacheManager::get_computed_blocks(uint32_t id, const SeqState& s) {
  hits_.clear();
  hit_hashes_.clear();
  window_hits_.clear();
  if (!caching_) return 0;
  // "When all tokens hit the cache, we must recompute the last token to obtain logits":
  // max_cache_hit_length = num_tokens - 1, in whole blocks (find_longest_cache_hit).
  int64_t max_blocks = (int64_t(s.num_tokens()) - 1) / block_size_;
  // Before its first preemption no block of its own content exists anywhere.
  if (s.preemptions == 0) max_blocks = std::min(max_blocks, hasher_->shared_blocks(id));
  uint64_t parent = 0;
  for (int64_t k = 0; k < max_blocks; ++k) {
    const uint64_t h = hasher_->block_hash(id, k, parent);
    const int32_t b = lookup(h);
    if (b < 0) break;
    hits_.push_back(b);
    if (window_ > 0) hit_hashes_.push_back(h);
    parent = h;
  }
  if (window_ > 0) window_hit();
  if (drop_last_hit_ && !hits_.empty()) hits_.pop_back();
  const int64_t hit_tokens = int64_t(hits_.size()) * block_size_;
  // PrefixCacheStats.record(num_tokens, num_hits, preempted).
  if (s.preemptions > 0) {
    stats_.preempted_queries += s.num_tokens();
    stats_.preempted_hits += hit_tokens;
  } else {
    stats_.queries += s.num_tokens();
    stats_.hits += hit_tokens;
  }
  return hit_tokens;
}

int64_t KvCacheManager::cached_prefix_blocks(const BlockHasher& hasher, uint32_t id,
                                             int64_t num_tokens) const {
  if (!caching_) return 0;
  const int64_t max_blocks = num_tokens / block_size_;
  uint64_t parent = 0;
  int64_t k = 0;
  for (; k < max_blocks; ++k) {
    const uint64_t h = hasher.block_hash(id, k, parent);
    if (lookup(h) < 0) break;
    parent = h;
  }
  return k;
}

int64_t KvCacheManager::num_evictable_hits() const {
  // A hit block nobody holds sits in the free queue: touching it takes it out, so it counts
  // against the free blocks (get_num_blocks_to_allocate, num_evictable_blocks).
  int64_t n = 0;
  for (int32_t b : hits_)
    n += blocks_[size_t(b)].ref == 0;
  return n;
}

void KvCacheManager::set_sliding_window(int window_tokens, int64_t max_num_batched_tokens) {
  assert(window_tokens >= 0 && max_num_batched_tokens > 0);
  assert(!(drop_last_hit_ && window_tokens > 0));  // EAGLE with a window: not modelled
  window_ = window_tokens;
  fast_block_size_ = window_tokens > 0 ? 0 : block_size_;
  if (window_tokens > 0) {  // a hit's hashes and window blocks, at most a request's blocks
    hit_hashes_.reserve(size_t(blocks_for(max_model_len_)));
    window_hits_.reserve(size_t(blocks_for(max_model_len_)));
  }
  window_max_blocks_ = window_tokens > 0
                           ? sliding_window_max_blocks(window_tokens, block_size_,
                                                       max_num_batched_tokens, max_model_len_)
                           : 0;
}

[[gnu::always_inline]] inline int32_t KvCacheManager::take_free_block() {
  const uint32_t e = queue_pop_front();
  const int32_t b = int32_t(e & kIdMask);
  if (const uint32_t state = e >> kStateShift; state != kNotCached) {  // _maybe_evict_cached_block
    if (state == kOwn) {
      cached_[size_t(b)] = kNotCached;  // unmapped: nothing else to undo
    } else {
      uncache(b);
    }
    ++stats_.evictions;
  }
  assert(blocks_[size_t(b)].ref == 0);
  blocks_[size_t(b)].ref = 1;
  return b;
}

int32_t KvCacheManager::touch(int32_t b) {
  Block& k = blocks_[size_t(b)];
  if (k.ref == 0) queue_remove(b);
  ++k.ref;
  return b;
}

void KvCacheManager::release_group_block(int32_t b) {
  int32_t& ref = blocks_[size_t(b)].ref;
  assert(ref > 0);
  if (--ref == 0) queue_append(b);  // its cache state rides in its entry
}

void KvCacheManager::free_skipped(Table& t, int64_t total_computed) {
  const int64_t slots = t.window_skipped + int64_t(t.window.size());
  const int64_t skipped = std::min(window_skipped_blocks(total_computed), slots);
  if (skipped <= t.window_skipped) return;
  const size_t n = size_t(skipped - t.window_skipped);
  for (size_t k = n; k-- > 0;)  // the latest first
    release_group_block(t.window[k]);
  t.window.erase(t.window.begin(), t.window.begin() + std::ptrdiff_t(n));
  t.window_skipped = skipped;
}

bool KvCacheManager::allocate_new_blocks(uint32_t id, SeqState& s, int64_t num_new_tokens,
                                         int64_t num_new_computed_tokens,
                                         bool full_sequence_must_fit, int64_t num_lookahead_tokens,
                                         bool delay_cache) {
  // Compiled twice, so that a model without a window pays no test of it per allocation.
  return window_ > 0 ? allocate<true>(id, s, num_new_tokens, num_new_computed_tokens,
                                      full_sequence_must_fit, num_lookahead_tokens, delay_cache)
                     : allocate<false>(id, s, num_new_tokens, num_new_computed_tokens,
                                       full_sequence_must_fit, num_lookahead_tokens, delay_cache);
}

template <bool kWindow>
bool KvCacheManager::allocate(uint32_t id, SeqState& s, int64_t num_new_tokens,
                              int64_t num_new_computed_tokens, bool full_sequence_must_fit,
                              int64_t num_lookahead_tokens, bool delay_cache) {
  assert(num_new_tokens > 0);
  const bool with_hits = num_new_computed_tokens > 0;
  assert(!with_hits || num_new_computed_tokens == int64_t(hits_.size()) * block_size_);
  const int64_t held = blocks_held(id);
  const int64_t hit_blocks = with_hits ? int64_t(hits_.size()) : 0;
  const int64_t evictable = with_hits ? num_evictable_hits() : 0;
  const int64_t total_computed =
      std::min<int64_t>(s.num_computed_tokens + num_new_computed_tokens, max_model_len_);
  // The sliding-window group (get_num_blocks_to_allocate): the slots beyond those held or hit,
  // none for the skipped ones; a hit's blocks inside the window counted as taken from the free
  // queue (held = its slots, the same as the full group's). Nothing without a window.
  int64_t skipped = 0, window_hits = 0, window_held = 0;
  if constexpr (kWindow) {
    skipped = window_skipped_blocks(total_computed);
    window_held = std::max(skipped, held + hit_blocks);
    // The hit's blocks in the window that sit in the free queue (num_evictable_blocks).
    if (with_hits) {
      assert(skipped == window_hit_skipped_);
      for (int32_t b : window_hits_)
        window_hits += blocks_[size_t(b)].ref == 0;
    }
  }
  // The state groups' one block each, at the first allocation (MambaManager's
  // get_num_blocks_to_allocate: cdiv(tokens, max_model_len) blocks, none held yet).
  const int64_t state_new = held == 0 ? state_groups_ : 0;
  if (full_sequence_must_fit) {
    const int64_t full = std::min<int64_t>(s.num_tokens(), max_model_len_);
    int64_t need =
        std::max<int64_t>(blocks_for(full) - held - hit_blocks, 0) + evictable + state_new;
    if constexpr (kWindow) {
      need += std::max<int64_t>(std::min(blocks_for(full), window_max_blocks_) - window_held, 0) +
              window_hits;
    }
    if (need > num_free_) return false;
  }
  const int64_t need_slot =
      std::min(total_computed + num_new_tokens + num_lookahead_tokens, max_model_len_);
  const int64_t num_new_blocks = std::max<int64_t>(blocks_for(need_slot) - held - hit_blocks, 0);
  int64_t window_new = 0;
  if constexpr (kWindow) {
    // remove_skipped_blocks, before the free blocks are counted.
    if (held > 0) free_skipped(tables_[size_t(table_of_[id])], total_computed);
    window_new = std::max<int64_t>(blocks_for(need_slot) - window_held, 0) + window_hits;
  }
  if (num_new_blocks + evictable + window_new + state_new > num_free_) return false;

  Table& t = table(id);
  for (int64_t g = 0; g < state_new; ++g)
    t.state.push_back(take_free_block());
  if (with_hits) {
    // allocate_new_computed_blocks: touch the hits (out of the free queue) and take them.
    for (int32_t b : hits_)
      t.blocks.push_back(touch(b));
    t.num_cached = hit_blocks;
    t.last_hash = hashed_[size_t(hits_.back())].hash;  // a hit is always kHashed
  }
  if constexpr (kWindow) {
    // The sliding-window group first: a new request's skipped slots null, its hit's window,
    // then the new slots (as many as the full group's).
    if (with_hits) {
      // allocate_new_computed_blocks: the skipped slots null, the window's hits touched.
      t.window_skipped = window_hit_skipped_;
      for (int32_t b : window_hits_)
        t.window.push_back(touch(b));
      t.window_num_cached = hit_blocks;
      t.window_last_hash = hit_hashes_[size_t(hit_blocks - 1)];
      window_hits_.clear();
    }
    const int64_t slots = held + hit_blocks + num_new_blocks;
    for (int64_t k = t.window_skipped + int64_t(t.window.size()); k < slots; ++k)
      t.window.push_back(take_free_block());
  }
  // allocate_new_blocks: from the head of the free queue, evicting what they cached.
  for (int64_t i = 0; i < num_new_blocks; ++i)
    t.blocks.push_back(take_free_block());
  keep(s, t);
  hits_.clear();
  // "P/D: delay caching blocks if we have to recv from remote"; else "cap the number at
  // request.num_tokens": only tokens that exist are cached.
  if (!delay_cache) {
    cache_tokens(id, s, std::min<int64_t>(total_computed + num_new_tokens, s.num_tokens()));
  }
  return true;
}

void KvCacheManager::cache_blocks(uint32_t id, Table& t, int64_t num_tokens) {
  const int64_t num_full = num_tokens / block_size_;
  // Asked once a request: it reads the request's spec, a line of its own in a large workload.
  if (t.shared_blocks < 0) t.shared_blocks = hasher_->shared_blocks(id);
  // Blocks of the request's own content (from shared_blocks on) are hashed when a lookup may ask
  // for them (free() of a preempted request) and marked cached when freed: nothing to do now,
  // not even reading their ids (a line a request, cold in a large fleet).
  const int64_t shared_end = std::min(num_full, t.shared_blocks);
  for (int64_t k = t.num_cached; k < shared_end; ++k) {
    const int32_t b = t.blocks[size_t(k)];
    assert(cached_[size_t(b)] == kNotCached);
    hashed_[size_t(b)].shared = true;
    t.last_hash = hasher_->block_hash(id, k, t.last_hash);
    map_block(b, t.last_hash);
  }
  t.num_cached = num_full;
  if (window_ > 0) cache_window(id, t, num_full);
}

void KvCacheManager::cache_window(uint32_t id, Table& t, int64_t num_full) {
  // The sliding-window group's full blocks, each under its hash keyed by the group (vLLM's
  // BlockHashWithGroupId), its own content too (only its request can look that up); a slot
  // already skipped is null and cached as nothing, its hash still chained.
  for (int64_t k = t.window_num_cached; k < num_full; ++k) {
    t.window_last_hash = hasher_->block_hash(id, k, t.window_last_hash);
    if (k < t.window_skipped) continue;
    const int32_t b = t.window[size_t(k - t.window_skipped)];
    assert(cached_[size_t(b)] == kNotCached);
    map_block(b, window_hash(t.window_last_hash));
  }
  t.window_num_cached = std::max(t.window_num_cached, num_full);
}

void KvCacheManager::map_block(int32_t b, uint64_t h) {
  Hashed& blk = hashed_[size_t(b)];
  blk.hash = h;
  cached_[size_t(b)] = kHashed;
  const size_t slot = slot_of(h);
  if (map_keys_[slot] != h) {  // the first block with this content (one probe for both)
    map_keys_[slot] = h;
    map_values_[slot] = b;
    if (blk.shared && sink_ != nullptr) sink_->hash_stored(h);
    return;
  }
  // BlockHashToBlockMap.insert: no de-duplication, the newer block joins the end of the chain
  // (chains are short: one block per request computing the content at once).
  int32_t last = map_values_[slot];
  while (hashed_[size_t(last)].dup_next >= 0)
    last = hashed_[size_t(last)].dup_next;
  hashed_[size_t(last)].dup_next = b;
  blk.dup_prev = last;
}

void KvCacheManager::free(uint32_t id, SeqState& s, bool preempted) {
  s.blocks = 0;
  s.next_cached_block_end = INT32_MAX;
  const int32_t ti = table_of_[id];
  if (ti < 0) return;
  Table& t = tables_[size_t(ti)];
  if (preempted) {
    // Its own cached blocks, in the order they were cached, are hashed and become findable: by
    // it alone.
    uint64_t parent = 0;
    for (int64_t k = 0; k < t.num_cached; ++k) {
      const int32_t b = t.blocks[size_t(k)];
      if (cached_[size_t(b)] != kHashed) map_block(b, hasher_->block_hash(id, k, parent));
      parent = hashed_[size_t(b)].hash;
    }
  }
  // The state groups' and the sliding-window group's blocks first (their managers come first).
  for (int32_t b : t.state)
    release_group_block(b);
  for (size_t k = t.window.size(); k-- > 0;)
    release_group_block(t.window[k]);
  // single_type_kv_cache_manager.free: reversed, so that the tail blocks are evicted first. A
  // block among the table's cached ones that nobody else holds is cached content of the
  // request's own, unless it was mapped (kOwn: cache_blocks left it unmarked).
  for (size_t k = t.blocks.size(); k-- > 0;) {
    const int32_t b = t.blocks[k];
    int32_t& ref = blocks_[size_t(b)].ref;
    assert(ref > 0);
    if (--ref > 0) continue;
    if (int64_t(k) < t.num_cached && cached_[size_t(b)] == kNotCached) cached_[size_t(b)] = kOwn;
    queue_append(b);
  }
  release_table(id);
}

}  // namespace servesim
