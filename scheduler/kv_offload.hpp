// KV offload to CPU memory, the scheduler's side of it: vLLM V1's OffloadingConnector
// (--kv-offloading-size, or --kv-transfer-config with kv_connector OffloadingConnector;
// vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py and vllm/v1/kv_offload/
// cpu/manager.py at the revision of scheduler/vllm_revision.hpp), and LMCache's CPU tier where it
// differs (LMCacheConnectorV1 with its documented defaults). The connector never reads the clock:
// it asks for transfers, the host times them on the GPU's host link and says when they are done.
//  - Stores, native: write-through. At the end of every schedule(), each scheduled request's full
//    offloaded blocks not yet stored (prompt and output: min(computed after the step, num_tokens)
//    tokens) are stored, the ones the CPU tier holds already skipped (_build_store_jobs,
//    CPUOffloadingManager.prepare_store): room is made by evicting the least recently used CPU
//    blocks that no load reads and no store is still writing; when there is not enough such
//    room nothing of the request is stored this step and it is tried again next step. A block
//    being stored is in the tier but cannot be loaded until its store completes.
//  - Loads, native: a request admitted from `waiting` with nothing computed looks up the CPU tier
//    after the GPU's prefix cache (get_num_new_matched_tokens): the run of offloaded blocks
//    contiguous after the GPU hit, at least one block; if one of them is still being stored, or
//    being loaded for another request, the request is deferred to the next step. On a hit its
//    blocks are allocated (their caching delayed), it waits in WAITING_FOR_REMOTE_KVS (in
//    `skipped_waiting`, holding its blocks, computing nothing) while the load runs on the host
//    link beside the next step's forward pass, and the step after the one whose poll saw the
//    load done admits it, with the loaded tokens computed (all but the last when the whole
//    prompt hit: _update_waiting_for_remote_kv). Loaded blocks are not stored again.
//  - The CPU tier's LRU is touched at every lookup and store (all of the request's blocks it
//    holds); its size is --kv-offloading-size over the bytes of one offloaded block on every GPU
//    of the TP group (CPUOffloadingSpec: the size is the total over the ranks).
//  - LMCache (LMCacheConnectorV1, lmcache/v1 defaults: chunk_size 256, save_decode_cache false,
//    save_unfull_chunk false, LRU, max_local_cpu_size per rank): 256-token chunks, only prompt
//    tokens stored, and loads synchronous: the request is scheduled in the step that finds the
//    hit, its computed tokens including the hit (all but one on a full hit), and the load's time
//    adds to that step, as LMCache retrieves in start_load_kv before the forward pass; its
//    stores are copied before the step ends (wait_for_save) and add to it too.
// Not modelled: vLLM's flush wait when a GPU block with a store in flight is reused, ARC
// eviction, store_threshold, KV load failures, LMCache's disk and remote tiers.
// Promises: the CPU tier never holds more than its blocks; a block is evicted only when no load
// reads it and its store is complete; no allocation once warm but for a request's first table.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "scheduler/block_hasher.hpp"
#include "scheduler/sequence.hpp"

namespace servesim {

enum class OffloadBackend : uint8_t { kNone, kNative, kLmcache };

const char* offload_backend_name(OffloadBackend b);  // "native", "lmcache" ("none")

struct KvOffloadConfig {
  OffloadBackend backend = OffloadBackend::kNone;
  int64_t num_cpu_blocks = 0;  // offloaded blocks the CPU tier holds
  int block_size_factor = 1;   // GPU blocks per offloaded block (LMCache: chunk_size / block_size)
  // Bytes of one offloaded block on each GPU of the TP group: what crosses each GPU's host link.
  double bytes_per_block = 0;
  bool enabled() const { return backend != OffloadBackend::kNone && num_cpu_blocks > 0; }
  // Native loads overlap the forward passes (WAITING_FOR_REMOTE_KVS); LMCache's are synchronous.
  bool async_load() const { return backend == OffloadBackend::kNative; }
  // The native connector stores output blocks too; LMCache only the prompt's.
  bool store_output() const { return backend == OffloadBackend::kNative; }
};

// A copy between the GPU and the CPU tier that a schedule() asked for: its request, its bytes on
// each GPU of the TP group, and whether it loads (CPU to GPU) or stores.
struct KvTransfer {
  uint32_t request = 0;
  bool load = false;
  int32_t tokens = 0;  // tokens whose KV it moves
  double bytes = 0;
  bool operator==(const KvTransfer&) const = default;
};

// The CPU tier: offloaded blocks by content hash, least recently used first.
class CpuKvTier {
 public:
  explicit CpuKvTier(int64_t num_blocks);
  CpuKvTier(const CpuKvTier&) = delete;
  CpuKvTier& operator=(const CpuKvTier&) = delete;

  int64_t capacity() const { return int64_t(entries_.size()); }
  int64_t used() const { return used_; }
  // The slot holding HASH, or -1.
  int32_t find(uint64_t hash) const;
  // Whether slot S can be loaded: its store is complete.
  bool ready(int32_t s) const { return entries_[size_t(s)].ready; }
  // Loads reading slot S.
  int32_t readers(int32_t s) const { return entries_[size_t(s)].readers; }
  // Moves slot S to the most recently used end.
  void touch(int32_t s);
  // Makes room for N new blocks, evicting the least recently used blocks that no load reads and
  // whose store is complete, none of PROTECTED (slots); false, evicting nothing, when too few
  // qualify. Counts its evictions.
  bool make_room(int64_t n, std::span<const int32_t> protect);
  // Inserts HASH, being stored (not ready), most recently used. REQUIRES: room; HASH absent.
  int32_t insert(uint64_t hash);
  void store_done(int32_t s) { entries_[size_t(s)].ready = true; }
  void add_reader(int32_t s) { ++entries_[size_t(s)].readers; }
  void remove_reader(int32_t s) { --entries_[size_t(s)].readers; }
  int64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    uint64_t hash = 0;  // 0: free
    int32_t readers = 0;
    int32_t prev = -1, next = -1;  // LRU list: head evicted first
    bool ready = false;
    bool kept = false;  // protected from the eviction under way
  };
  bool evictable(const Entry& e) const { return e.ready && e.readers == 0 && !e.kept; }
  void unlink(int32_t s);
  void append(int32_t s);
  void erase_key(uint64_t hash);

  std::vector<Entry> entries_;
  std::vector<int32_t> free_;  // LIFO, as CPUOffloadingManager's _free_list
  int32_t head_ = -1, tail_ = -1;
  int64_t used_ = 0;
  std::vector<uint64_t> keys_;  // hash slots (util/hash_slots.hpp), 0 = empty
  std::vector<int32_t> values_;
  size_t mask_ = 0;
  int64_t evictions_ = 0;
};

// The connector's scheduler side for one replica.
class KvOffloadConnector {
 public:
  // HASHER names block contents (the same hashes as the GPU prefix cache); it outlives this.
  // GPU_CACHING: the GPU's prefix cache is on.
  KvOffloadConnector(const KvOffloadConfig& config, int block_size, const BlockHasher* hasher,
                     bool gpu_caching, size_t num_requests);
  KvOffloadConnector(const KvOffloadConnector&) = delete;
  KvOffloadConnector& operator=(const KvOffloadConnector&) = delete;

  const KvOffloadConfig& config() const { return config_; }
  void add_request_slot();
  void reserve(size_t n);
  // The start of a schedule(): no transfer asked for yet.
  void begin_step() { transfers_.clear(); }

  // get_num_new_matched_tokens for request ID (state S, nothing computed) after a GPU hit of
  // GPU_HIT tokens: the tokens the CPU tier holds beyond it (0: none), or -1 to defer the request
  // to the next step (a block of the hit still being stored, or loaded for another request).
  // Touches the request's blocks in the tier.
  int64_t matched_tokens(uint32_t id, const SeqState& s, int64_t gpu_hit);
  // The request matched EXTERNAL tokens after GPU_HIT and its blocks were allocated: its load is
  // asked for (update_state_after_alloc), and its stored blocks start past the loaded ones.
  // Records the lookup's statistics (vLLM's connector_prefix_cache_stats) either way.
  void admitted(uint32_t id, const SeqState& s, int64_t gpu_hit, int64_t external);
  // Whether request ID's load has completed (finished_recving).
  bool load_done(uint32_t id) const { return !load_pending_[id]; }
  // build_connector_meta's stores: request ID (state S) computes up to S.num_computed_tokens
  // this step.
  void store(uint32_t id, const SeqState& s);
  // Request ID left (finished or preempted: preempted, it will look the tier up again).
  void release(uint32_t id, bool preempted);

  // The transfers the current schedule() asked for, loads and stores in submission order.
  std::span<const KvTransfer> transfers() const { return transfers_; }
  // The oldest LOADS loads and STORES stores asked for have completed (each direction is FIFO).
  void transfers_done(size_t loads, size_t stores);

  struct Stats {
    int64_t queries = 0, hits = 0;  // tokens looked up in the CPU tier and found (not preempted)
    int64_t preempted_queries = 0, preempted_hits = 0;
    int64_t loads = 0, loaded_tokens = 0, stores = 0, stored_blocks = 0;
    double loaded_bytes = 0, stored_bytes = 0;  // per GPU
    int64_t deferrals = 0;                      // lookups deferred to the next step
    int64_t store_failures = 0;                 // store jobs refused for want of room
    // A fleet's: every replica's summed.
    void add(const Stats& o) {
      queries += o.queries;
      hits += o.hits;
      preempted_queries += o.preempted_queries;
      preempted_hits += o.preempted_hits;
      loads += o.loads;
      loaded_tokens += o.loaded_tokens;
      stores += o.stores;
      stored_blocks += o.stored_blocks;
      loaded_bytes += o.loaded_bytes;
      stored_bytes += o.stored_bytes;
      deferrals += o.deferrals;
      store_failures += o.store_failures;
    }
  };
  const Stats& stats() const { return stats_; }
  const CpuKvTier& tier() const { return tier_; }
  int64_t transfers_in_flight() const { return int64_t(loads_.size() + stores_.size()); }

 private:
  struct PerRequest {
    int64_t next_stored = 0;  // offloaded blocks stored or skipped so far
    uint64_t last_hash = 0;   // the hash of block next_stored - 1 (the chain's parent)
  };
  // The hash of request ID's offloaded block K whose predecessor hashes to PARENT.
  uint64_t block_hash(uint32_t id, int64_t k, uint64_t parent) const;
  int64_t offloaded_tokens() const { return int64_t(block_size_) * config_.block_size_factor; }

  KvOffloadConfig config_;
  int block_size_;
  bool gpu_caching_;
  const BlockHasher* hasher_;
  CpuKvTier tier_;
  std::vector<PerRequest> requests_;
  std::vector<uint8_t> load_pending_;
  std::vector<KvTransfer> transfers_;
  // In-flight jobs of one direction, FIFO: each job's request and the tier slots it reads or
  // writes (SLOTS holds every job's, COUNTS how many are each one's).
  struct InFlight {
    std::deque<uint32_t> ids;
    std::deque<int32_t> counts, slots;
    size_t size() const { return ids.size(); }
    // Ends the N oldest jobs: ON_SLOT(slot) for each of their slots, ON_JOB(request) for each.
    template <class SlotFn, class JobFn>
    void finish(size_t n, SlotFn&& on_slot, JobFn&& on_job) {
      for (size_t i = 0; i < n; ++i) {
        for (int32_t j = counts.front(); j > 0; --j) {
          on_slot(slots.front());
          slots.pop_front();
        }
        counts.pop_front();
        on_job(ids.front());
        ids.pop_front();
      }
    }
  };
  InFlight loads_, stores_;
  std::vector<int32_t> scratch_;  // a lookup's or a store's slots
  std::vector<uint64_t> hashes_;  // a store's new hashes
  Stats stats_;
};

}  // namespace servesim
