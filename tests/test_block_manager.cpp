#include <catch2/catch.hpp>

#include "scheduler/block_manager.hpp"

using namespace servesim;

namespace {
SeqState seq(int32_t input, int32_t generated = 0) {
  SeqState s;
  s.input_tokens = input;
  s.output_tokens = 100;
  s.generated = generated;
  return s;
}
}  // namespace

TEST_CASE("block manager: can_allocate answers OK, LATER and NEVER around the watermark",
          "[block_manager]") {
  BlockManager bm(100, 16, 0.05);  // watermark int(0.05 * 100) = 5 blocks
  REQUIRE(bm.watermark_blocks() == 5);
  // 95 blocks leave exactly the watermark: OK; 96 blocks could never leave it: NEVER.
  CHECK(bm.can_allocate(seq(95 * 16)) == AllocStatus::kOk);
  CHECK(bm.can_allocate(seq(95 * 16 + 1)) == AllocStatus::kNever);
  SeqState a = seq(50 * 16);
  bm.allocate(a);
  CHECK(a.blocks == 50);
  CHECK(bm.free_blocks() == 50);
  // 45 blocks leave 5 free: OK; 46 would leave 4 < 5: LATER, not NEVER.
  CHECK(bm.can_allocate(seq(45 * 16)) == AllocStatus::kOk);
  CHECK(bm.can_allocate(seq(45 * 16 + 1)) == AllocStatus::kLater);
  bm.free(a);
  CHECK(bm.free_blocks() == 100);
  CHECK(a.blocks == 0);
}

TEST_CASE("block manager: allocation covers every known token, prompt and generated",
          "[block_manager]") {
  BlockManager bm(10, 4, 0.0);
  SeqState s = seq(5, 2);  // recompute after preemption: 7 known tokens -> 2 blocks
  bm.allocate(s);
  CHECK(s.blocks == 2);
  CHECK(s.table_tokens == 7);
  CHECK(bm.used_blocks() == 2);
}

TEST_CASE("block manager: a one-token append touches one block even with room left (vLLM)",
          "[block_manager]") {
  BlockManager bm(3, 4, 0.0);
  SeqState s = seq(5);  // 5 tokens -> 2 blocks, 3 slots free in the last one
  bm.allocate(s);
  SeqState filler = seq(4);  // takes the last free block
  bm.allocate(filler);
  REQUIRE(bm.free_blocks() == 0);
  s.generated = 1;  // the first output token needs a slot
  // vLLM's get_num_blocks_touched_by_append_slots counts 1 block although the last block has
  // room, so with no free block the request cannot append and must be preempted.
  CHECK_FALSE(bm.can_append_slots(s));
  bm.free(filler);
  REQUIRE(bm.can_append_slots(s));
  bm.append_slots(s);
  CHECK(s.blocks == 2);  // 6 tokens still fit 2 blocks: nothing allocated
  CHECK(bm.free_blocks() == 1);
  for (int32_t g = 2; g <= 4; ++g) {  // tokens 7 and 8 fill block 2; token 9 opens block 3
    s.generated = g;
    REQUIRE(bm.can_append_slots(s));
    bm.append_slots(s);
  }
  CHECK(s.blocks == 3);
  CHECK(bm.free_blocks() == 0);
}

TEST_CASE("block manager: appending several tokens counts every block they touch",
          "[block_manager]") {
  BlockManager tight(4, 4, 0.0);
  SeqState t = seq(4);  // exactly one full block
  tight.allocate(t);
  t.generated = 9;  // 9 unseen tokens after a full block touch 1 + ceil((9 - 4) / 4) = 3 blocks
  CHECK(tight.can_append_slots(t));  // 3 touched <= 3 free
  t.generated = 13;                  // 1 + ceil((13 - 4) / 4) = 4 touched > 3 free
  CHECK_FALSE(tight.can_append_slots(t));
}
