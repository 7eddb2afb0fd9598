#include "scheduler/kv_offload.hpp"

#include <algorithm>
#include <cassert>

#include "util/hash_slots.hpp"

namespace servesim {

const char* offload_backend_name(OffloadBackend b) {
  switch (b) {
    case OffloadBackend::kNative:
      return "native";
    case OffloadBackend::kLmcache:
      return "lmcache";
    case OffloadBackend::kNone:
      break;
  }
  return "none";
}

// --- the CPU tier ------------------------------------------------------------------------------

CpuKvTier::CpuKvTier(int64_t num_blocks) : entries_(size_t(std::max<int64_t>(num_blocks, 0))) {
  free_.reserve(entries_.size());
  for (int32_t s = int32_t(entries_.size()) - 1; s >= 0; --s)
    free_.push_back(s);
  size_t cap = 16;
  while (cap < entries_.size() * 2)
    cap *= 2;
  keys_.assign(cap, 0);
  values_.assign(cap, -1);
  mask_ = cap - 1;
}

int32_t CpuKvTier::find(uint64_t hash) const {
  const size_t i = probe_slot(keys_, mask_, hash);
  return keys_[i] == hash ? values_[i] : -1;
}

void CpuKvTier::unlink(int32_t s) {
  Entry& e = entries_[size_t(s)];
  (e.prev >= 0 ? entries_[size_t(e.prev)].next : head_) = e.next;
  (e.next >= 0 ? entries_[size_t(e.next)].prev : tail_) = e.prev;
  e.prev = e.next = -1;
}

void CpuKvTier::append(int32_t s) {
  Entry& e = entries_[size_t(s)];
  e.prev = tail_;
  e.next = -1;
  (tail_ >= 0 ? entries_[size_t(tail_)].next : head_) = s;
  tail_ = s;
}

void CpuKvTier::touch(int32_t s) {
  if (s == tail_) return;
  unlink(s);
  append(s);
}

void CpuKvTier::erase_key(uint64_t hash) {
  const size_t i = probe_slot(keys_, mask_, hash);
  if (keys_[i] != hash) return;
  const size_t hole =
      backward_shift(keys_, mask_, i, [&](size_t to, size_t from) { values_[to] = values_[from]; });
  values_[hole] = -1;
}

bool CpuKvTier::make_room(int64_t n, std::span<const int32_t> protect) {
  const int64_t need = n - int64_t(free_.size());
  if (need <= 0) return true;
  for (const int32_t s : protect)
    entries_[size_t(s)].kept = true;
  // LRUCachePolicy.evict: the first N evictable from the LRU end, or none at all.
  int64_t found = 0;
  for (int32_t s = head_; s >= 0 && found < need; s = entries_[size_t(s)].next)
    found += evictable(entries_[size_t(s)]);
  if (found < need) {
    for (const int32_t s : protect)
      entries_[size_t(s)].kept = false;
    return false;
  }
  int32_t s = head_;
  for (int64_t evicted = 0; evicted < need;) {
    const int32_t next = entries_[size_t(s)].next;
    Entry& e = entries_[size_t(s)];
    if (evictable(e)) {
      unlink(s);
      erase_key(e.hash);
      e = Entry{};
      free_.push_back(s);
      --used_;
      ++evictions_;
      ++evicted;
    }
    s = next;
  }
  for (const int32_t p : protect)
    entries_[size_t(p)].kept = false;
  return true;
}

int32_t CpuKvTier::insert(uint64_t hash) {
  assert(!free_.empty() && find(hash) < 0);
  const int32_t s = free_.back();
  free_.pop_back();
  Entry& e = entries_[size_t(s)];
  e.hash = hash;
  e.ready = false;  // ref_cnt -1 until complete_store
  e.readers = 0;
  append(s);
  const size_t i = probe_slot(keys_, mask_, hash);
  keys_[i] = hash;
  values_[i] = s;
  ++used_;
  return s;
}

// --- the connector -----------------------------------------------------------------------------

KvOffloadConnector::KvOffloadConnector(const KvOffloadConfig& config, int block_size,
                                       const BlockHasher* hasher, bool gpu_caching,
                                       size_t num_requests)
    : config_(config),
      block_size_(block_size),
      gpu_caching_(gpu_caching),
      hasher_(hasher),
      tier_(config.num_cpu_blocks),
      requests_(num_requests),
      load_pending_(num_requests, 0) {
  assert(hasher != nullptr && config.block_size_factor >= 1);
}

void KvOffloadConnector::add_request_slot() {
  requests_.emplace_back();
  load_pending_.push_back(0);
}

void KvOffloadConnector::reserve(size_t n) {
  requests_.reserve(n);
  load_pending_.reserve(n);
}

uint64_t KvOffloadConnector::block_hash(uint32_t id, int64_t k, uint64_t parent) const {
  // An offloaded block of several GPU blocks is named by the hash of its last GPU block (the
  // chain covers the ones before it): OffloadKey strides the request's block hashes.
  const int64_t f = config_.block_size_factor;
  uint64_t h = parent;
  for (int64_t j = k * f; j < (k + 1) * f; ++j)
    h = hasher_->block_hash(id, j, h);
  return h;
}

int64_t KvOffloadConnector::matched_tokens(uint32_t id, const SeqState& s, int64_t gpu_hit) {
  const int64_t per_block = offloaded_tokens();
  const int64_t first = gpu_hit / per_block;  // _lookup starts at the GPU hit's block
  const int64_t full = int64_t(s.num_tokens()) / per_block;
  scratch_.clear();
  uint64_t parent = 0;
  bool defer = false;
  for (int64_t k = 0; k < full; ++k) {
    const uint64_t h = block_hash(id, k, parent);
    parent = h;
    const int32_t slot = tier_.find(h);
    if (slot < 0) {
      if (k >= first) break;
      continue;
    }
    tier_.touch(slot);  // _touch: every block of the request the tier holds
    if (k < first) continue;
    // _maximal_prefix_lookup: a block still being stored answers None; a block another request
    // is loading is waited for (the load will land it in the GPU's prefix cache).
    if (!tier_.ready(slot) || (gpu_caching_ && tier_.readers(slot) > 0)) defer = true;
    scratch_.push_back(slot);
  }
  if (defer) {
    ++stats_.deferrals;
    return -1;
  }
  if (scratch_.empty()) return 0;
  int64_t hit = (first + int64_t(scratch_.size())) * per_block - gpu_hit;
  // LMCache answers one token short of a full hit (the last token is computed for its logits);
  // the native connector returns it whole and the scheduler recomputes it on promotion.
  if (!config_.async_load() && gpu_hit + hit >= s.num_tokens()) hit = s.num_tokens() - 1 - gpu_hit;
  return std::max<int64_t>(hit, 0);
}

void KvOffloadConnector::admitted(uint32_t id, const SeqState& s, int64_t gpu_hit,
                                  int64_t external) {
  const int64_t queries = int64_t(s.num_tokens()) - gpu_hit;
  if (queries != 0) {
    (s.preemptions > 0 ? stats_.preempted_queries : stats_.queries) += queries;
    (s.preemptions > 0 ? stats_.preempted_hits : stats_.hits) += external;
  }
  PerRequest& r = requests_[id];
  const int64_t per_block = offloaded_tokens();
  // Stores start past what the GPU hit and the load already hold (update_state_after_alloc).
  const int64_t held = (gpu_hit + external) / per_block;
  r.next_stored = 0;
  r.last_hash = 0;
  for (; r.next_stored < held; ++r.next_stored)
    r.last_hash = block_hash(id, r.next_stored, r.last_hash);
  if (external <= 0) return;
  // The load reads the slots matched_tokens found: those after the GPU hit.
  const int64_t first = gpu_hit / per_block;
  const int64_t blocks = (gpu_hit + external + per_block - 1) / per_block - first;
  int32_t count = 0;
  uint64_t parent = 0;
  for (int64_t k = 0; k < first + blocks; ++k) {
    parent = block_hash(id, k, parent);
    if (k < first) continue;
    const int32_t slot = tier_.find(parent);
    assert(slot >= 0);
    tier_.add_reader(slot);
    loads_.slots.push_back(slot);
    ++count;
  }
  loads_.counts.push_back(count);
  loads_.ids.push_back(id);
  load_pending_[id] = 1;
  ++stats_.loads;
  stats_.loaded_tokens += external;
  const double bytes = double(count) * config_.bytes_per_block;
  stats_.loaded_bytes += bytes;
  transfers_.push_back({id, true, int32_t(external), bytes});
}

void KvOffloadConnector::store(uint32_t id, const SeqState& s) {
  PerRequest& r = requests_[id];
  const int64_t limit =
      config_.store_output() ? s.num_tokens() : std::min(s.num_tokens(), s.input_tokens);
  const int64_t full = std::min<int64_t>(s.num_computed_tokens, limit) / offloaded_tokens();
  if (full <= r.next_stored) return;
  // prepare_store: the new blocks (those the tier lacks), room for them, none of this request's
  // own blocks evicted for it.
  hashes_.clear();
  scratch_.clear();
  uint64_t parent = r.last_hash;
  for (int64_t k = r.next_stored; k < full; ++k) {
    parent = block_hash(id, k, parent);
    const int32_t slot = tier_.find(parent);
    if (slot >= 0) {
      scratch_.push_back(slot);
    } else {
      hashes_.push_back(parent);
    }
  }
  if (!hashes_.empty() && !tier_.make_room(int64_t(hashes_.size()), scratch_)) {
    ++stats_.store_failures;  // "cannot store blocks": the index stays, tried next step
    return;
  }
  r.next_stored = full;
  r.last_hash = parent;
  for (int32_t slot : scratch_)
    tier_.touch(slot);
  if (hashes_.empty()) return;
  for (uint64_t h : hashes_)
    stores_.slots.push_back(tier_.insert(h));
  stores_.counts.push_back(int32_t(hashes_.size()));
  stores_.ids.push_back(id);
  ++stats_.stores;
  stats_.stored_blocks += int64_t(hashes_.size());
  const double bytes = double(hashes_.size()) * config_.bytes_per_block;
  stats_.stored_bytes += bytes;
  transfers_.push_back({id, false, int32_t(int64_t(hashes_.size()) * offloaded_tokens()), bytes});
}

void KvOffloadConnector::release(uint32_t id, bool /*preempted*/) {
  // The next admission (a preempted request looks the tier up again) restarts the store index.
  requests_[id] = PerRequest{};
}

void KvOffloadConnector::transfers_done(size_t loads, size_t stores) {
  loads_.finish(
      loads, [this](int32_t slot) { tier_.remove_reader(slot); },
      [this](uint32_t id) { load_pending_[id] = 0; });
  stores_.finish(
      stores, [this](int32_t slot) { tier_.store_done(slot); }, [](uint32_t) {});
}

}  // namespace servesim
