// Hand-worked batches for `vllm-v0` (vLLM V0 Scheduler._schedule_default).
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace servesim;
using namespace servesim::test;

TEST_CASE("vllm-v0: the first prompt that does not fit the budget stops admission",
          "[policy][vllm-v0]") {
  V0Scheduler s(config("vllm-v0", 100), 1000, 8);
  s.add_request(0, 60, 5);
  s.add_request(1, 50, 5);
  s.add_request(2, 10, 5);  // would fit after 0, but FCFS never skips 1
  CHECK(entries(s.schedule()) == Entries{{0, 60}});
  const SeqShape first = s.batch().shapes()[0];
  CHECK(first.prefill);
  CHECK(first.context_tokens == 0);
  CHECK(first.emits_token);
  complete_step(s);
  CHECK(s.seq(0).generated == 1);

  // Prefill priority: the waiting prompts run before 0's first decode, and without it.
  CHECK(entries(s.schedule()) == Entries{{1, 50}, {2, 10}});
  complete_step(s);
  // Now all decode, one token each, in `running` order.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}});
  for (const SeqShape& sh : s.batch().shapes())
    CHECK_FALSE(sh.prefill);
  CHECK(s.batch().shapes()[0].context_tokens == 60);
  CHECK(queue_ids(s.running()) == Ids{0, 1, 2});
}

TEST_CASE("vllm-v0: a step is all prefill or all decode", "[policy][vllm-v0]") {
  V0Scheduler s(config("vllm-v0", 4096), 1000, 8);
  s.add_request(0, 100, 10);
  s.schedule();
  complete_step(s);
  s.schedule();  // decode of 0
  CHECK(s.batch().decode_tokens() == 1);
  complete_step(s);
  s.add_request(1, 200, 10);  // arrives: the next step is its prefill alone
  CHECK(entries(s.schedule()) == Entries{{1, 200}});
  CHECK(s.batch().decode_tokens() == 0);
  complete_step(s);
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}});
}

TEST_CASE("vllm-v0: running requests hold their max_num_seqs slots first", "[policy][vllm-v0]") {
  V0Scheduler s(config("vllm-v0", 4096, /*max_num_seqs=*/2), 1000, 8);
  s.add_request(0, 10, 10);
  s.schedule();
  complete_step(s);
  s.add_request(1, 10, 10);
  s.add_request(2, 10, 10);
  // 1 running + 1 new = max_num_seqs: request 2 must wait.
  CHECK(entries(s.schedule()) == Entries{{1, 10}});
  CHECK(queue_ids(s.waiting()) == Ids{2});
}

TEST_CASE("vllm-v0: requests that could outgrow min(max_model_len, budget) are rejected up front",
          "[policy][vllm-v0]") {
  // vLLM ignores a prompt over the prompt limit; a preempted request recomputes input plus
  // generated tokens as one prompt, so servesim rejects when input + output - 1 could exceed it.
  V0Scheduler s(config("vllm-v0", 100, 8, /*max_model_len=*/1000), 1000, 8);
  CHECK(s.add_request(0, 150, 5) == RejectReason::kPromptLimit);
  CHECK(s.add_request(1, 95, 7) == RejectReason::kPromptLimit);  // 101 tokens if preempted late
  CHECK(s.add_request(2, 95, 6) == RejectReason::kNone);         // 100: fits
  s.add_request(3, 6, 5);
  CHECK(entries(s.schedule()) == Entries{{2, 95}});  // the queue moves on; 3 does not fit with 2
  CHECK(s.seq(0).status == SeqStatus::kRejected);
  // With chunked prefill the budget limits nothing: only max_model_len does.
  V0Scheduler t(config("chunked", 100, 8, 1000), 1000, 8);
  CHECK(t.add_request(0, 150, 5) == RejectReason::kNone);
}

TEST_CASE("front end: input + output over max_model_len is rejected before scheduling",
          "[policy]") {
  V0Scheduler s(config("vllm-v0", 2048, 8, /*max_model_len=*/100), 1000, 8);
  CHECK(s.add_request(0, 90, 11) == RejectReason::kContextLength);
  CHECK(s.add_request(1, 90, 10) == RejectReason::kNone);
  CHECK(s.seq(0).status == SeqStatus::kRejected);
  CHECK(queue_ids(s.waiting()) == Ids{1});
}

TEST_CASE("front end: a request the KV cache can never finish is rejected up front", "[policy]") {
  // 10 blocks of 16, watermark int(0.01 x 10) = 0, and vLLM's can_append_slots always wants one
  // free block: a request may hold at most 9 blocks (144 tokens) over its lifetime.
  V0Scheduler s(config("chunked", 512, 8, 1000, /*block_size=*/16), /*num_gpu_blocks=*/10, 8);
  CHECK(s.add_request(0, 100, 46) == RejectReason::kKvCapacity);  // 145 tokens: 10 blocks
  CHECK(s.add_request(1, 100, 45) == RejectReason::kNone);        // 144 tokens: 9 blocks
  // 1000 blocks: the watermark (10 blocks) is what must stay free.
  V0Scheduler t(config("chunked", 512, 8, 100000, 16), 1000, 8);
  CHECK(t.add_request(0, 990 * 16, 1) == RejectReason::kNone);
  CHECK(t.add_request(1, 990 * 16 + 1, 1) == RejectReason::kKvCapacity);
}

TEST_CASE("vllm-v0: the block manager's LATER stops admission", "[policy][vllm-v0]") {
  SchedulerConfig c = config("vllm-v0", 4096, 8, 1000, /*block_size=*/4);
  c.watermark = 0.2;  // int(0.2 * 10) = 2 blocks
  V0Scheduler s(c, /*num_gpu_blocks=*/10, 8);
  s.add_request(0, 32, 1);  // 8 blocks: 10 - 8 = 2 >= watermark: OK
  s.add_request(1, 4, 2);   // 1 block: 2 free - 1 < 2: LATER, so it waits
  s.add_request(2, 1, 1);   // would fit the budget, but FCFS never skips 1
  CHECK(entries(s.schedule()) == Entries{{0, 32}});
  CHECK(queue_ids(s.waiting()) == Ids{1, 2});
  complete_step(s);  // 0 finishes and frees its blocks
  CHECK(entries(s.schedule()) == Entries{{1, 4}, {2, 1}});
}

TEST_CASE("vllm-v0: preemption takes the tail of running, requeues it first, and recomputes",
          "[policy][vllm-v0]") {
  SchedulerConfig c = config("vllm-v0", 4096, 8, 1000, /*block_size=*/4);
  c.watermark = 0.0;
  V0Scheduler s(c, /*num_gpu_blocks=*/6, 8);
  for (uint32_t id = 0; id < 3; ++id)
    s.add_request(id, 4, 10);
  s.add_request(3, 4, 10);  // admitted later, once blocks free up
  // Step 1: prefill 0, 1, 2 (a block each); 3 gets the fourth block too.
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}, {2, 4}, {3, 4}});
  complete_step(s);
  // Step 2: decodes need a second block each: 2 free blocks for 4 requests. 0 and 1 take them;
  // 2 finds none and preempts the tail (3), which frees one block for 2.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}});
  CHECK(queue_ids(s.waiting()) == Ids{3});
  CHECK(s.seq(3).preemptions == 1);
  CHECK(s.seq(3).status == SeqStatus::kWaiting);
  CHECK(s.seq(3).num_computed_tokens == 0);
  CHECK(s.num_preemptions() == 1);
  CHECK(s.block_manager().free_blocks() == 0);
  complete_step(s);
  // Step 3: no free block. 0 cannot append (vLLM counts a touched block): the tail (2) is
  // preempted and requeued in front of 3, then 0 and 1 run.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}});
  CHECK(queue_ids(s.waiting()) == Ids{2, 3});
  CHECK(s.seq(2).generated == 2);
  complete_step(s);
}

TEST_CASE("vllm-v0: a preempted request recomputes prompt and generated tokens in one prefill",
          "[policy][vllm-v0]") {
  SchedulerConfig c = config("vllm-v0", 4096, 8, 1000, /*block_size=*/4);
  c.watermark = 0.0;
  V0Scheduler s(c, 3, 8);
  s.add_request(0, 4, 2);
  s.add_request(1, 4, 3);
  s.schedule();  // prefill both: a block each, one left
  complete_step(s);
  // 0 takes the last block for its second token; 1 finds none and, being the last in
  // `running`, preempts itself.
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  CHECK(queue_ids(s.waiting()) == Ids{1});
  CHECK(s.seq(1).generated == 1);
  complete_step(s);  // 0 finishes and frees its blocks
  CHECK(s.seq(0).status == SeqStatus::kFinished);
  CHECK(s.block_manager().free_blocks() == 3);
  // 1 recomputes its prompt and its generated token (4 + 1) and then samples its second token.
  const Batch& b = s.schedule();
  REQUIRE(entries(b) == Entries{{1, 5}});
  CHECK(b.shapes()[0].prefill);
  CHECK(b.shapes()[0].emits_token);
  complete_step(s);
  CHECK(s.seq(1).generated == 2);
  CHECK(s.discarded_tokens() == 4);  // the prompt computed once before the preemption
}
