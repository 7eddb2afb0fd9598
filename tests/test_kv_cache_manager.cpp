// Hand-worked cases for KvCacheManager, vLLM V1's KV cache with its prefix cache
// (vllm/v1/core/kv_cache_manager.py, block_pool.py).
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "scheduler/kv_cache_manager.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

using Blocks = std::vector<int32_t>;

Blocks held(const KvCacheManager& kv, uint32_t id) {
  const auto b = kv.blocks_of(id);
  return Blocks(b.begin(), b.end());
}

}  // namespace

TEST_CASE("kv cache: the null block is reserved and blocks are taken in id order", "[kv_cache]") {
  GroupHasher h;
  KvCacheManager kv(5, 4, true, 100, &h, 4);
  CHECK(kv.usable_blocks() == 4);
  CHECK(kv.free_queue() == Blocks{1, 2, 3, 4});
  SeqState s = prompt(10);
  REQUIRE(kv.allocate_slots(0, s, 10, 0, false));
  CHECK(held(kv, 0) == Blocks{1, 2, 3});
  // Full blocks (8 of the 10 tokens) are cached as soon as they are scheduled; the partial
  // third block is not.
  CHECK(kv.is_cached(1));
  CHECK(kv.is_cached(2));
  CHECK_FALSE(kv.is_cached(3));
  CHECK(kv.free_blocks() == 1);
}

TEST_CASE("kv cache: a request frees its tail first, so its last blocks are evicted first",
          "[kv_cache]") {
  GroupHasher h;
  KvCacheManager kv(5, 4, true, 100, &h, 4);
  SeqState s = prompt(10);
  REQUIRE(kv.allocate_slots(0, s, 10, 0, false));
  kv.free(0, s);
  // The never-used block 4 first, then 0's blocks in reverse: 3 (partial), 2, 1.
  CHECK(kv.free_queue() == Blocks{4, 3, 2, 1});
  CHECK(kv.free_blocks() == 4);
  CHECK(kv.is_cached(1));  // freed but still cached
  // A new request of 3 blocks takes 4, 3 and 2: block 2 is evicted (it was cached), block 3 had
  // no hash.
  SeqState t = prompt(12);
  REQUIRE(kv.get_computed_blocks(1, t) == 0);
  REQUIRE(kv.allocate_slots(1, t, 12, 0, false));
  CHECK(held(kv, 1) == Blocks{4, 3, 2});
  CHECK(kv.stats().evictions == 1);
  CHECK(kv.free_queue() == Blocks{1});
}

TEST_CASE("kv cache: a hit takes cached blocks out of the free queue and counts them as used",
          "[kv_cache]") {
  GroupHasher h;
  h.shared = {{0, {7, 2}}, {1, {7, 2}}};  // 0 and 1 share their first two blocks
  KvCacheManager kv(5, 4, true, 100, &h, 4);
  SeqState a = prompt(10);
  REQUIRE(kv.get_computed_blocks(0, a) == 0);
  REQUIRE(kv.allocate_slots(0, a, 10, 0, false));
  kv.free(0, a);
  SeqState b = prompt(12);
  const int64_t hit = kv.get_computed_blocks(1, b);
  CHECK(hit == 8);
  CHECK(kv.stats().queries == 10 + 12);
  CHECK(kv.stats().hits == 8);
  REQUIRE(kv.allocate_slots(1, b, 12 - hit, hit, true));
  // The two hits (blocks 1 and 2), then one new block from the head of the free queue.
  CHECK(held(kv, 1) == Blocks{1, 2, 4});
  CHECK(kv.free_queue() == Blocks{3});
  CHECK(kv.ref_count(1) == 1);
  CHECK(kv.is_cached(4));  // its third block is full: cached too
}

TEST_CASE("kv cache: shared blocks are reference counted", "[kv_cache]") {
  GroupHasher h;
  h.shared = {{0, {7, 2}}, {1, {7, 2}}};
  KvCacheManager kv(9, 4, true, 100, &h, 4);
  SeqState a = prompt(10);
  REQUIRE(kv.allocate_slots(0, a, 10, 0, false));
  SeqState b = prompt(10);
  const int64_t hit = kv.get_computed_blocks(1, b);
  REQUIRE(hit == 8);
  REQUIRE(kv.allocate_slots(1, b, 2, hit, false));
  CHECK(kv.ref_count(1) == 2);
  CHECK(kv.ref_count(2) == 2);
  CHECK(kv.used_blocks() == 4);  // 1, 2 shared; 3 and one new block for b's tail
  kv.free(0, a);
  CHECK(kv.ref_count(1) == 1);
  CHECK(kv.free_blocks() == 5);  // only 0's own partial block came back
  kv.free(1, b);
  CHECK(kv.free_blocks() == 8);
  CHECK(kv.ref_count(1) == 0);
}

TEST_CASE("kv cache: a hit is at most num_tokens - 1 tokens, in whole blocks", "[kv_cache]") {
  GroupHasher h;
  h.shared = {{0, {7, 2}}, {1, {7, 2}}};
  KvCacheManager kv(9, 4, true, 100, &h, 4);
  SeqState a = prompt(8);
  REQUIRE(kv.allocate_slots(0, a, 8, 0, false));
  // The same 8 tokens: both blocks are cached, but the last token must be computed for its
  // logits, so only (8 - 1) / 4 = 1 block hits.
  SeqState b = prompt(8);
  CHECK(kv.get_computed_blocks(1, b) == 4);
}

TEST_CASE("kv cache: blocks computed twice at once are both cached and evicted one by one",
          "[kv_cache]") {
  // vLLM's BlockHashToBlockMap does not de-duplicate: a lookup finds the earliest block still
  // cached under the hash, and evicting it leaves the later copy findable.
  GroupHasher h;
  h.shared = {{0, {7, 2}}, {1, {7, 2}}, {2, {7, 2}}};
  KvCacheManager kv(8, 4, true, 100, &h, 4);
  SeqState a = prompt(9), b = prompt(9);
  // Both ask before either is scheduled: no hit; each computes the shared two blocks.
  REQUIRE(kv.get_computed_blocks(0, a) == 0);
  REQUIRE(kv.get_computed_blocks(1, b) == 0);
  REQUIRE(kv.allocate_slots(0, a, 9, 0, false));
  REQUIRE(kv.allocate_slots(1, b, 9, 0, false));
  CHECK(held(kv, 0) == Blocks{1, 2, 3});
  CHECK(held(kv, 1) == Blocks{4, 5, 6});
  CHECK((kv.is_cached(1) && kv.is_cached(2) && kv.is_cached(4) && kv.is_cached(5)));
  kv.free(0, a);
  kv.free(1, b);
  CHECK(kv.free_queue() == Blocks{7, 3, 2, 1, 6, 5, 4});
  SeqState c = prompt(12);
  REQUIRE(kv.get_computed_blocks(2, c) == 8);
  // A request of its own content takes 7, 3, 2 and 1, evicting the first copies (2 and 1);
  // its last block is partial, so block 1 is no longer cached under any hash...
  SeqState d = prompt(15);
  REQUIRE(kv.get_computed_blocks(3, d) == 0);
  REQUIRE(kv.allocate_slots(3, d, 15, 0, false));
  CHECK(held(kv, 3) == Blocks{7, 3, 2, 1});
  CHECK(kv.stats().evictions == 2);
  CHECK_FALSE(kv.is_cached(1));
  // ...and the second copies still hit.
  REQUIRE(kv.get_computed_blocks(2, c) == 8);
  REQUIRE(kv.allocate_slots(2, c, 4, 8, false));
  CHECK(held(kv, 2) == Blocks{4, 5, 6});
  CHECK(kv.ref_count(4) == 1);
}

TEST_CASE("kv cache: an allocation that does not fit changes nothing", "[kv_cache]") {
  GroupHasher h;
  KvCacheManager kv(4, 4, true, 100, &h, 4);
  SeqState a = prompt(8);
  REQUIRE(kv.allocate_slots(0, a, 8, 0, false));
  SeqState b = prompt(8);
  CHECK_FALSE(kv.allocate_slots(1, b, 8, 0, false));
  CHECK(kv.free_blocks() == 1);
  CHECK(kv.blocks_held(1) == 0);
  // The full-prompt gate refuses what the first chunk alone would get.
  CHECK(kv.allocate_slots(1, b, 4, 0, false));
  kv.free(1, b);
  CHECK_FALSE(kv.allocate_slots(1, b, 4, 0, true));
}

TEST_CASE("kv cache: without caching nothing is hashed or hit", "[kv_cache]") {
  KvCacheManager kv(5, 4, false, 100, nullptr, 4);
  SeqState a = prompt(10);
  CHECK(kv.get_computed_blocks(0, a) == 0);
  REQUIRE(kv.allocate_slots(0, a, 10, 0, false));
  CHECK_FALSE(kv.is_cached(1));
  CHECK(kv.stats().queries == 0);
}

TEST_CASE("kv cache: a prefix cache reset forgets every block, and waits for none in use",
          "[kv_cache][autoscale]") {
  GroupHasher h;
  h.shared = {{0, {7, 4}}, {1, {7, 4}}};  // requests 0 and 1 share their four blocks
  KvCacheManager kv(9, 4, true, 100, &h, 4);
  SeqState s = prompt(16);
  REQUIRE(kv.allocate_slots(0, s, 16, 0, false));
  CHECK_FALSE(kv.reset_prefix_cache());  // request 0 holds blocks: nothing changes
  CHECK(kv.is_cached(1));
  kv.free(0, s);
  CHECK(kv.cached_prefix_blocks(h, 1, 16) == 4);
  CHECK(kv.reset_prefix_cache());
  CHECK(kv.cached_prefix_blocks(h, 1, 16) == 0);
  for (int32_t b = 1; b <= 8; ++b)
    CHECK_FALSE(kv.is_cached(b));
  CHECK(kv.free_blocks() == kv.usable_blocks());
  // The cache fills again afterwards.
  SeqState t = prompt(16);
  REQUIRE(kv.allocate_slots(1, t, 16, 0, false));
  CHECK(kv.is_cached(kv.blocks_of(1)[0]));
}

TEST_CASE("kv cache: the request's state carries its blocks and its next block to cache",
          "[kv_cache]") {
  // allocate_slots' no-new-block case reads only the state: it must follow the table.
  GroupHasher h;
  h.shared = {{0, {7, 3}}};  // request 0's first three blocks are shared content
  KvCacheManager kv(9, 4, true, 100, &h, 4);
  SeqState s = prompt(6, 4);  // 6 prompt tokens, 4 to generate
  REQUIRE(kv.allocate_slots(0, s, 6, 0, false));
  CHECK(s.blocks == 2);
  CHECK(s.next_cached_block_end == 8);  // block 0 cached; block 1 fills at 8 tokens
  s.num_computed_tokens = 6;
  s.generated = 1;  // 7 tokens known: a decode inside block 1, nothing new to cache
  REQUIRE(kv.allocate_slots(0, s, 1, 0, false));
  CHECK(s.blocks == 2);
  CHECK_FALSE(kv.is_cached(kv.blocks_of(0)[1]));
  s.num_computed_tokens = 7;
  s.generated = 2;  // the 8th token fills block 1: cached in place
  REQUIRE(kv.allocate_slots(0, s, 1, 0, false));
  CHECK(kv.is_cached(kv.blocks_of(0)[1]));
  CHECK(s.next_cached_block_end == 12);
  s.num_computed_tokens = 8;
  s.generated = 3;  // the 9th token needs a third block
  REQUIRE(kv.allocate_slots(0, s, 1, 0, false));
  CHECK(s.blocks == 3);
  CHECK(kv.blocks_held(0) == 3);
  kv.free(0, s);
  CHECK(s.blocks == 0);
  CHECK(s.next_cached_block_end == INT32_MAX);
  // Without caching nothing is ever due.
  KvCacheManager off(9, 4, false, 100, nullptr, 4);
  SeqState t = prompt(6, 4);
  REQUIRE(off.allocate_slots(0, t, 6, 0, false));
  CHECK(t.blocks == 2);
  CHECK(t.next_cached_block_end == INT32_MAX);
}
