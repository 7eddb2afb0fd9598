// Hand-worked batches for `chunked` (vLLM V0 Scheduler._schedule_chunked_prefill).
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace servesim;
using namespace servesim::test;

TEST_CASE("chunked: decodes first, then the partial prefill, then new prompts, within budget",
          "[policy][chunked]") {
  V0Scheduler s(config("chunked", 32), 1000, 8);
  s.add_request(0, 8, 10);
  s.add_request(1, 8, 10);
  s.add_request(2, 8, 10);
  s.add_request(3, 66, 10);
  // Step 1: three whole prompts and the first 8 tokens of request 3.
  CHECK(entries(s.schedule()) == Entries{{0, 8}, {1, 8}, {2, 8}, {3, 8}});
  CHECK_FALSE(s.batch().shapes()[3].emits_token);
  complete_step(s);
  CHECK(s.seq(3).generated == 0);
  CHECK(s.seq(3).num_computed_tokens == 8);
  // All blocks of 3's prompt were allocated at admission: ceil(66 / 16) = 5.
  CHECK(s.seq(3).blocks == 5);

  // Step 2: one token per decode, the rest of the budget (29) to the partial prefill.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}, {3, 29}});
  CHECK(s.batch().shapes()[3].context_tokens == 8);
  CHECK(s.batch().shapes()[3].prefill);
  complete_step(s);

  // A new request arrives, but the budget is spent by decodes and 3's last 29 tokens.
  s.add_request(4, 5, 10);
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}, {3, 29}});
  CHECK(s.batch().shapes()[3].emits_token);
  CHECK(queue_ids(s.waiting()) == Ids{4});
  complete_step(s);
  CHECK(s.seq(3).generated == 1);

  // Step 4: four decodes, then 4's whole prompt: prefill and decode in one step.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 5}});
  CHECK(s.batch().prefill_tokens() == 5);
  CHECK(s.batch().decode_tokens() == 4);
}

TEST_CASE("chunked: running is rebuilt as decodes, partial prefills, new prefills",
          "[policy][chunked]") {
  V0Scheduler s(config("chunked", 20), 1000, 8);
  s.add_request(0, 30, 10);  // a long prompt, chunked
  s.add_request(1, 4, 10);
  CHECK(entries(s.schedule()) == Entries{{0, 20}});
  complete_step(s);
  // 0 continues (10 tokens) and 1 is admitted whole; 0 finishes its prompt.
  CHECK(entries(s.schedule()) == Entries{{0, 10}, {1, 4}});
  complete_step(s);
  s.add_request(2, 40, 10);
  // 0 and 1 decode; 2 gets the remaining 18 tokens.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 18}});
  complete_step(s);
  CHECK(queue_ids(s.running()) == Ids{0, 1, 2});
  s.add_request(3, 40, 10);
  // The partial prefill 2 goes after the decodes; nothing is left for 3.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 18}});
  CHECK(queue_ids(s.waiting()) == Ids{3});
}

TEST_CASE("chunked: new prompts wait while running decodes take the whole budget",
          "[policy][chunked]") {
  V0Scheduler s(config("chunked", 3, /*max_num_seqs=*/4), 1000, 8);
  for (uint32_t id = 0; id < 4; ++id)
    s.add_request(id, 1, 10);
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}});
  complete_step(s);
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}});
  CHECK(queue_ids(s.waiting()) == Ids{3});
}

TEST_CASE("chunked: prompts are not limited by the budget, only by max_model_len",
          "[policy][chunked]") {
  V0Scheduler s(config("chunked", 16, 8, /*max_model_len=*/1000), 1000, 8);
  s.add_request(0, 100, 5);  // longer than the budget: chunked, not ignored
  CHECK(entries(s.schedule()) == Entries{{0, 16}});
  CHECK(s.seq(0).status == SeqStatus::kRunning);
}

TEST_CASE("chunked: preemption takes the tail, then the request itself, both requeue in order",
          "[policy][chunked]") {
  SchedulerConfig c = config("chunked", 16, 8, 1000, /*block_size=*/4);
  c.watermark = 0.0;
  V0Scheduler s(c, 3, 8);
  for (uint32_t id = 0; id < 3; ++id)
    s.add_request(id, 4, 3);  // lifetime: 6 tokens, 2 blocks
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}, {2, 4}});
  complete_step(s);
  REQUIRE(s.block_manager().free_blocks() == 0);
  // 0 needs a block: the tail (2) is preempted and 0 takes its block. 1 then finds none and,
  // last in `running`, preempts itself. vLLM's extendleft keeps their running order.
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  CHECK(queue_ids(s.waiting()) == Ids{1, 2});
  CHECK(s.seq(1).preemptions == 1);
  CHECK(s.seq(2).preemptions == 1);
  CHECK(s.seq(2).num_new_tokens() == 5);  // 4 prompt + 1 generated to recompute
}

TEST_CASE("chunked: a partial prefill with no free block preempts itself (vLLM touched block)",
          "[policy][chunked]") {
  SchedulerConfig c = config("chunked", 8, 8, 1000, /*block_size=*/4);
  c.watermark = 0.0;
  V0Scheduler s(c, 4, 8);
  s.add_request(0, 4, 5);
  s.add_request(1, 6, 3);  // 2 blocks, allocated whole at admission
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}});
  complete_step(s);
  // 0's decode takes the last free block; 1's last chunk needs no new block, but vLLM counts
  // one touched block against zero free, so 1 is preempted (by itself, the last in running).
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  CHECK(queue_ids(s.waiting()) == Ids{1});
  CHECK(s.seq(1).num_new_tokens() == 6);
  complete_step(s);
  // Its blocks are back: 0 decodes and 1 is admitted again, whole.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 6}});
  CHECK(s.batch().shapes()[1].emits_token);
}
