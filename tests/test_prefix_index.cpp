// The fleet's prefix index (sim/prefix_index.hpp): fed by the replicas' KV events, it answers
// what asking every replica's cache answers, for any number of replicas; the KV cache reports
// only content other requests may hold; a prefix-aware fleet routes the same with it or without.
#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "scheduler/kv_cache_manager.hpp"
#include "sim/prefix_index.hpp"
#include "sim/workload_block_hasher.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

// Records a cache's events as the set of hashes it holds.
struct Recorder final : KvEventSink {
  std::multiset<uint64_t> held;
  int stored = 0, removed = 0;
  void hash_stored(uint64_t h) override {
    CHECK(held.count(h) == 0);  // a content is stored once, until removed
    held.insert(h);
    ++stored;
  }
  void hash_removed(uint64_t h) override {
    REQUIRE(held.count(h) == 1);
    held.erase(h);
    ++removed;
  }
};

}  // namespace

TEST_CASE("kv events: shared content is stored once and removed with its last block",
          "[kv_cache][fleet]") {
  GroupHasher h;
  h.shared = {{0, {7, 2}}, {1, {7, 2}}};      // requests 0 and 1 share two blocks; 2 shares nothing
  KvCacheManager kv(7, 4, true, 100, &h, 4);  // 6 usable blocks of 4 tokens
  std::vector<SeqState> s = {prompt(16), prompt(8), prompt(16), prompt(8)};  // by request id
  Recorder rec;
  kv.set_event_sink(&rec);
  REQUIRE(kv.allocate_slots(0, s[0], 16, 0, false));  // 4 blocks, the first 2 shared
  CHECK(rec.stored == 2);
  CHECK(rec.held.size() == 2);
  // Request 1 computes the same two blocks again (no hit asked for): duplicates, no event.
  REQUIRE(kv.allocate_slots(1, s[1], 8, 0, false));
  CHECK(rec.stored == 2);
  kv.free(0, s[0]);
  kv.free(1, s[1]);
  // Request 2's own blocks evict the free ones, oldest freed first: request 0's tail (its own
  // blocks, never reported), then its shared blocks while request 1's copies stay cached.
  REQUIRE(kv.allocate_slots(2, s[2], 16, 0, false));
  CHECK(rec.removed == 0);
  CHECK(rec.held.size() == 2);
  // Two more blocks evict request 1's copies, the content's last blocks: removed.
  REQUIRE(kv.allocate_slots(3, s[3], 8, 0, false));
  CHECK(rec.removed == 2);
  CHECK(rec.held.empty());
  kv.free(2, s[2]);
  kv.free(3, s[3]);
  REQUIRE(kv.allocate_slots(0, s[0], 16, 0, false));  // stored again
  CHECK(rec.held.size() == 2);
  kv.free(0, s[0]);
  CHECK(kv.reset_prefix_cache());  // AllBlocksCleared
  CHECK(rec.held.empty());
  // A sink set late is told of the shared content already cached.
  kv.set_event_sink(nullptr);
  REQUIRE(kv.allocate_slots(0, s[0], 16, 0, false));
  Recorder late;
  kv.set_event_sink(&late);
  CHECK(late.held.size() == 2);
}

TEST_CASE("prefix index: leading blocks as each replica's cache counts them", "[fleet]") {
  // Replicas cache random runs of a few shared prompts' blocks; the index, fed by their events,
  // answers every prompt as asking each cache does. 70 replicas: two words of replica bits.
  const size_t n = 70;
  GroupHasher h;
  for (uint32_t id = 0; id < 40; ++id)
    h.shared[id] = {id % 5, 6};  // five prompt groups of six shared blocks (4 tokens each)
  std::vector<std::unique_ptr<KvCacheManager>> caches;
  PrefixIndex index(n);
  for (size_t i = 0; i < n; ++i) {
    caches.push_back(std::make_unique<KvCacheManager>(20, 4, true, 100, &h, 40));
    caches.back()->set_event_sink(index.sink(i));
  }
  std::mt19937_64 rng(7);
  std::vector<std::vector<SeqState>> states(n, std::vector<SeqState>(40));  // by replica, id
  std::vector<int64_t> out(n);
  for (int round = 0; round < 300; ++round) {
    const size_t i = rng() % n;
    const uint32_t id = uint32_t(rng() % 40);
    KvCacheManager& kv = *caches[i];
    SeqState& st = states[i][id];
    if (kv.blocks_held(id) > 0) {
      kv.free(id, st);
    } else {
      const int32_t tokens = int32_t(4 + rng() % 28);
      st = prompt(tokens);
      if (!kv.allocate_slots(id, st, tokens, 0, false)) continue;
      if (rng() % 2) kv.free(id, st);
    }
    for (uint32_t q = 0; q < 5; ++q) {
      index.leading_blocks(h, q, 6, out);
      for (size_t r = 0; r < n; ++r) {
        INFO("round " << round << " replica " << r << " prompt " << q);
        REQUIRE(out[r] == caches[r]->cached_prefix_blocks(h, q, 24));
      }
    }
  }
  CHECK(index.hashes() > 0);
  // Every cache emptied: the index is too.
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t id = 0; id < 40; ++id)
      caches[i]->free(id, states[i][id]);
    REQUIRE(caches[i]->reset_prefix_cache());
  }
  CHECK(index.hashes() == 0);
}

TEST_CASE("prefix index: a request's own tokens are shared with nobody", "[fleet]") {
  Workload w(3);
  for (uint32_t i = 0; i < 3; ++i) {
    w[i].id = i;
    w[i].input_tokens = 100;
  }
  w.spans = {{stream_id(StreamKind::kPrefix, 1), 0, 0, 40},
             {stream_id(StreamKind::kSession, 2), 0, 0, 100}};
  w[1].first_span = 0;  // a 40-token shared prefix, then its own 60 tokens
  w[1].num_spans = 1;
  w[2].first_span = 1;  // a session turn: the prompt and, continuing, the output shared
  w[2].num_spans = 1;
  w[2].output_continues = true;
  const WorkloadBlockHasher h(w, 16);
  CHECK(h.shared_blocks(0) == 0);          // no span: all its own
  CHECK(h.shared_blocks(1) == 40 / 16);    // the blocks wholly inside the prefix
  CHECK(h.shared_blocks(2) == INT64_MAX);  // everything continues the session's stream
}

TEST_CASE("prefix-aware: the KV-event index routes every request as asking each replica does",
          "[fleet][cli]") {
  for (const char* dataset : {"multi_turn", "prefix_repetition"}) {
    auto run = [&](const char* index) {
      return call_cli({"run", "--num-requests", "400", "--request-rate", "80", "--dataset-name",
                       dataset, "--scheduler", "vllm-v1:2048", "--num-replicas", "70", "--router",
                       "prefix-aware", "--prefix-index", index, "--num-gpu-blocks", "400"});
    };
    const CliResult a = run("per-replica"), b = run("kv-events");
    INFO(dataset << a.err << b.err);
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    CHECK(a.out == b.out);
    CHECK(a.out.find("hit rate 0.0%") == std::string::npos);  // the caches were hit
  }
  refused({"run", "--num-replicas", "2", "--router", "prefix-aware", "--prefix-index", "exact"},
          "expected per-replica | kv-events");
  refused({"run", "--num-replicas", "2", "--router", "least-kv", "--prefix-index", "kv-events"},
          "only --router prefix-aware");
}
