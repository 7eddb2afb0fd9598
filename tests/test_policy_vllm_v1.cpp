// Hand-worked batches for `vllm-v1` (vLLM V1 Scheduler.schedule(), vllm/v1/core/sched/
// scheduler.py at 9aaf83ef5).
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "sim/frontend.hpp"
#include "sim/simulation.hpp"
#include "traces/synthetic.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

SchedulerConfig v1(int64_t budget, int64_t max_num_seqs = 8, int block_size = 4,
                   bool caching = false) {
  SchedulerConfig c = config("vllm-v1", budget, max_num_seqs, 1000, block_size);
  c.enable_prefix_caching = caching;
  c.reserve_full_isl = false;
  return c;
}

// Llama-3.1-8B on an H100 under vllm-v1 with 100 KV blocks, resolved, for whole runs with a
// hand-made cost model.
SimConfig v1_run_config(bool async_scheduling) {
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.scheduler.policy = Policy::kVllmV1;
  c.scheduler.async_scheduling = async_scheduling;
  c.memory.num_gpu_blocks_override = 100;
  c.frontend_latency_s = 0;  // the engine alone
  return resolve(c);
}

}  // namespace

TEST_CASE("vllm-v1: running first in admission order, then waiting, in one token budget",
          "[policy][vllm-v1]") {
  V1Scheduler s(v1(16), 1000, 8);
  s.add_request(0, 20, 3);
  CHECK(entries(s.schedule()) == Entries{{0, 16}});
  complete_step(s);
  s.add_request(1, 8, 3);
  // 0's last 4 prompt tokens, then 1 chunked into the 12 left: no phases, one budget.
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 8}});
  CHECK(s.batch().shapes()[0].emits_token);
  complete_step(s);
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}});
  CHECK(queue_ids(s.running()) == Ids{0, 1});
}

TEST_CASE("vllm-v1: long_prefill_token_threshold caps each request's new tokens",
          "[policy][vllm-v1]") {
  SchedulerConfig c = v1(32);
  c.long_prefill_token_threshold = 10;
  V1Scheduler s(c, 1000, 8);
  s.add_request(0, 30, 3);
  s.add_request(1, 8, 3);
  CHECK(entries(s.schedule()) == Entries{{0, 10}, {1, 8}});
  complete_step(s);
  CHECK(entries(s.schedule()) == Entries{{0, 10}, {1, 1}});
}

TEST_CASE("vllm-v1: a preemption in a step stops admission in that step", "[policy][vllm-v1]") {
  // 3 usable blocks of 4 tokens (4 with vLLM's null block).
  V1Scheduler s(v1(64), 4, 8);
  s.add_request(0, 4, 5);
  s.add_request(1, 4, 5);
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}});
  complete_step(s);
  s.add_request(2, 1, 2);
  // 0's fifth token needs a second block: the last free one. 1 needs one too and, the tail of
  // `running`, preempts itself. Its block comes back, but 2 is not admitted in this step.
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  CHECK(queue_ids(s.waiting()) == Ids{1, 2});
  CHECK(s.seq(1).preemptions == 1);
  CHECK(s.seq(1).num_computed_tokens == 0);
  complete_step(s);
  // Next step admission resumes, at the head of `waiting`: 1 (5 tokens: 2 blocks) does not fit
  // in the one free block, and its failed allocation stops admission: 2, which would fit, waits.
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  CHECK(queue_ids(s.waiting()) == Ids{1, 2});
}

TEST_CASE("vllm-v1: with scheduler_reserve_full_isl a new request's whole prompt must fit",
          "[policy][vllm-v1]") {
  for (const bool reserve : {false, true}) {
    SchedulerConfig c = v1(6);
    c.reserve_full_isl = reserve;
    V1Scheduler s(c, 5, 8);  // 4 usable blocks of 4 tokens
    s.add_request(0, 8, 4);
    s.add_request(1, 12, 2);
    CHECK(entries(s.schedule()) == Entries{{0, 6}});
    complete_step(s);
    // 0 ends its prompt (2 tokens, still 2 blocks), leaving budget 4 and 2 free blocks: enough
    // for 1's first chunk, not for its 12-token prompt.
    if (reserve) {
      CHECK(entries(s.schedule()) == Entries{{0, 2}});
      CHECK(queue_ids(s.waiting()) == Ids{1});
    } else {
      CHECK(entries(s.schedule()) == Entries{{0, 2}, {1, 4}});
    }
  }
}

TEST_CASE("vllm-v1: max_num_seqs counts every running request", "[policy][vllm-v1]") {
  V1Scheduler s(v1(64, /*max_num_seqs=*/2), 1000, 8);
  for (uint32_t id = 0; id < 3; ++id)
    s.add_request(id, 4, 3);
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}});
  CHECK(queue_ids(s.waiting()) == Ids{2});
}

TEST_CASE("vllm-v1: the priority policy admits and preempts by (priority, arrival)",
          "[policy][vllm-v1]") {
  SchedulerConfig c = v1(64);
  c.scheduling_policy = WaitingOrder::kPriority;
  V1Scheduler s(c, 4, 8);  // 3 usable blocks of 4 tokens
  s.add_request(0, 4, 5, /*priority=*/5);
  s.add_request(1, 4, 5, /*priority=*/0);
  // The lower value runs first, whatever the arrival order.
  CHECK(entries(s.schedule()) == Entries{{1, 4}, {0, 4}});
  complete_step(s);
  // Both need a second block and one is free: 1 takes it; then 0, the lowest priority, is the
  // victim (itself).
  CHECK(entries(s.schedule()) == Entries{{1, 1}});
  CHECK(s.seq(0).preemptions == 1);
}

TEST_CASE("vllm-v1: between equal priorities and arrival times the victim is the first running",
          "[policy][vllm-v1]") {
  // max(self.running, key=lambda r: (r.priority, r.arrival_time)) keeps the first of equal keys.
  for (const double arrival_1 : {0.5, 0.75}) {
    SchedulerConfig c = v1(64);
    c.scheduling_policy = WaitingOrder::kPriority;
    V1Scheduler s(c, 4, 8);  // 3 usable blocks of 4 tokens
    s.add_request(0, 4, 5, /*priority=*/0, /*arrival_s=*/0.5);
    s.add_request(1, 4, 5, /*priority=*/0, arrival_1);
    CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}});
    complete_step(s);
    // 0 takes the last free block; 1 finds none and preempts the victim.
    if (arrival_1 == 0.5) {
      // A tie: the victim is 0, first in `running`; it leaves the batch and 1 takes its blocks.
      CHECK(entries(s.schedule()) == Entries{{1, 1}});
      CHECK(s.seq(0).preemptions == 1);
    } else {
      // 1 arrived later: it preempts itself.
      CHECK(entries(s.schedule()) == Entries{{0, 1}});
      CHECK(s.seq(1).preemptions == 1);
    }
  }
}

TEST_CASE(
    "vllm-v1: priority preemption of a request scheduled earlier in the step returns its "
    "budget",
    "[policy][vllm-v1]") {
  SchedulerConfig c = v1(64);
  c.scheduling_policy = WaitingOrder::kPriority;
  V1Scheduler s(c, 4, 8);  // 3 usable blocks of 4 tokens
  s.add_request(0, 4, 5, /*priority=*/9);
  CHECK(entries(s.schedule()) == Entries{{0, 4}});
  complete_step(s);
  s.add_request(1, 4, 5, /*priority=*/0);  // arrives later: after 0 in `running`
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 4}});
  complete_step(s);
  // 0 (2 blocks) is scheduled first; 1 then needs its second block and none is free. The victim
  // is 0, the lowest priority, already in this step's batch: it leaves the batch, its token goes
  // back to the budget, and 1 takes its blocks.
  CHECK(entries(s.schedule()) == Entries{{1, 1}});
  CHECK(s.batch().num_tokens() == 1);
  CHECK(s.seq(0).status == SeqStatus::kWaiting);
  CHECK(s.seq(0).preemptions == 1);
  CHECK(queue_ids(s.running()) == Ids{1});
}

TEST_CASE("vllm-v1: a preempted request hits its own cached blocks when re-admitted",
          "[policy][vllm-v1][kv_cache]") {
  GroupHasher h;
  V1Scheduler s(v1(64, 8, 4, /*caching=*/true), 6, 8, &h);  // 5 usable blocks
  s.add_request(0, 8, 2);
  s.add_request(1, 8, 9);
  CHECK(entries(s.schedule()) == Entries{{0, 8}, {1, 8}});
  complete_step(s);
  // 4 blocks used: 0 takes the fifth for its 9th token; 1 then preempts itself.
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  REQUIRE(s.seq(1).preemptions == 1);
  complete_step(s);  // 0 finishes and frees its blocks
  // 1 comes back: its first 8 tokens are still cached (freed, not evicted), so only its 9th
  // token (its sampled one) is computed.
  CHECK(entries(s.schedule()) == Entries{{1, 1}});
  CHECK(s.batch().shapes()[0].context_tokens == 8);
  CHECK(s.kv_cache_manager()->stats().preempted_hits == 8);
  CHECK(s.seq(1).cached_tokens == 0);  // vLLM's num_cached_tokens: set at the first scheduling
}

TEST_CASE("vllm-v1: requests sharing a prefix hit it, and finished requests free at once",
          "[policy][vllm-v1][kv_cache]") {
  GroupHasher h;
  h.shared = {{0, {3, 2}}, {1, {3, 2}}};
  V1Scheduler s(v1(64, 8, 4, /*caching=*/true), 100, 8, &h);
  s.add_request(0, 10, 1);
  CHECK(entries(s.schedule()) == Entries{{0, 10}});
  complete_step(s);
  // 0 finished with its one token: its blocks are free (and cached) before the next schedule.
  CHECK(s.used_blocks() == 0);
  s.add_request(1, 10, 1);
  CHECK(entries(s.schedule()) == Entries{{1, 2}});
  CHECK(s.seq(1).cached_tokens == 8);
  CHECK(s.step_cached_tokens() == 8);
}

TEST_CASE("vllm-v1: async scheduling overlaps the CPU's step work with the GPU's",
          "[policy][vllm-v1][sim]") {
  // Every step: 10 ms of GPU and 4 ms of CPU. Synchronously a step costs 14 ms; with async
  // scheduling back-to-back steps cost max(10, 4) = 10 ms, the first after idle 14 ms.
  class GpuAndCpu final : public CostModel {
   public:
    StepCost cost(std::span<const SeqShape>) const override {
      StepCost c;
      c.cpu_overhead_s = 0.004;
      c.seconds = 0.014;
      return c;
    }
    std::string name() const override { return "gpu+cpu"; }
  } cost;
  for (const bool async : {false, true}) {
    const SimConfig c = v1_run_config(async);
    Workload w(1);
    w[0].input_tokens = 4;
    w[0].output_tokens = 3;
    const RunResult r = simulate(c, w, &cost);
    const RequestRecord& q = r.requests[0];
    CHECK(q.first_token_s == Approx(0.014));
    CHECK(q.last_token_s == Approx(async ? 0.034 : 0.042));
  }
}

TEST_CASE("the API server's latency delays the engine but counts in the client's latencies",
          "[sim]") {
  // Steps of 10 ms; the front end takes 50 ms. Request 0 is sent at 0, reaches the engine at
  // 50 ms and emits its 3 tokens at 60, 70 and 80 ms; request 1, sent at 55 ms (while 0 runs,
  // as the client sees it), reaches an idle engine at 105 ms.
  const ConstantCost ten_ms(0.010);
  SimConfig c = v1_run_config(false);
  Workload w(2);
  w[0] = {0, 0.0, 4, 3};
  w[1] = {1, 0.055, 4, 1};
  const RunResult none = simulate(c, w, &ten_ms);
  c.frontend_latency_s = 0.050;  // the front end's, whatever the cost model
  const RunResult r = simulate(c, w, &ten_ms);
  // Latencies count from the send; arrival times stay the client's.
  CHECK(r.requests[0].arrival_s == 0);
  CHECK(r.requests[1].arrival_s == Approx(0.055));
  CHECK(r.requests[0].first_token_s == Approx(0.060));
  CHECK(r.requests[0].ttft_s() == Approx(none.requests[0].ttft_s() + 0.050));
  CHECK(r.requests[0].last_token_s == Approx(0.080));
  CHECK(r.requests[1].first_token_s == Approx(0.115));
  CHECK(r.requests[1].ttft_s() == Approx(0.060));
  // Without the front end, 1 arrives at 55 ms, after 0 finished at 30 ms: 10 ms.
  CHECK(none.requests[1].ttft_s() == Approx(0.010));
}

TEST_CASE("the API server's latency is the same under every engine and cost model", "[sim]") {
  // It was the step-cost interface's: the V0 engine and the table model dropped it.
  Workload w(1);
  w[0] = {0, 0.0, 16, 2};
  SimConfig base;
  base.model = find_model("llama-3.1-8b");
  base.gpu = find_gpu("h100-sxm");
  base.memory.num_gpu_blocks_override = 100;
  const ConstantCost ten_ms(0.010);
  for (const Policy p : kPolicies) {
    for (const Engine e : {Engine::kV0, Engine::kV1}) {
      SimConfig c = base;
      c.scheduler.policy = p;
      c.engine = e;
      c.engine_given = true;
      c.scheduler.async_scheduling = false;
      c = resolve(c);
      INFO(policy_name(p) << " on " << engine_name(e));
      CHECK(c.frontend_latency_s == kDefaultFrontendLatencyS);
      CHECK(simulate(c, w, &ten_ms).requests[0].ttft_s() ==
            Approx(0.010 + kDefaultFrontendLatencyS));
    }
  }
}

TEST_CASE("vllm-v1: with async scheduling a request arriving mid-step joins a step later",
          "[policy][vllm-v1][sim]") {
  // Steps of 1 s. Request 0 arrives at 0, request 1 at 0.5, during step [0, 1). Synchronously
  // step [1, 2) is decided at 1 and takes request 1. With async scheduling vLLM decided step
  // [1, 2) when it launched step [0, 1), and at 1 it decides step [2, 3), which takes request 1:
  // scheduled at 1 (vLLM's scheduled timestamp), computed in [2, 3).
  const ConstantCost one_second(1.0);
  for (const bool async : {false, true}) {
    const SimConfig c = v1_run_config(async);
    Workload w(3);
    w[0] = {0, 0.0, 4, 5};
    w[1] = {1, 0.5, 4, 2};
    w[2] = {2, 10.0, 4, 2};  // arrives to an idle engine: scheduled at once either way
    const RunResult r = simulate(c, w, &one_second);
    INFO("async " << async);
    CHECK(r.requests[0].first_token_s == 1);
    CHECK(r.requests[1].first_scheduled_s == 1);
    CHECK(r.requests[1].first_token_s == (async ? 3 : 2));
    CHECK(r.requests[2].first_token_s == 11);
    CHECK(r.summary.completed == 3);
  }
}

TEST_CASE("vllm-v1 without async scheduling equals chunked at the same budget on the same engine",
          "[policy][vllm-v1][sim]") {
  // A policy is only its scheduling: on one engine, with no prefix cache to hit and KV to spare,
  // V1's scheduler and V0's chunked prefill make the same batches, so every request's times are
  // the same. (Before engines were apart, compare ran them on different hardware fits.)
  SyntheticOptions g;
  g.num_requests = 300;
  g.request_rate = 8;
  g.input_len = LengthDist::parse("lognormal:800:0.8:16:4000", "input-len");
  g.output_len = LengthDist::parse("lognormal:200:0.8:2:1000", "output-len");
  const Workload w = generate_synthetic(g);
  for (const Engine e : {Engine::kV0, Engine::kV1}) {
    std::vector<std::vector<double>> times;
    for (const Policy p : {Policy::kChunked, Policy::kVllmV1}) {
      SimConfig c;
      c.model = find_model("llama-3.1-8b");
      c.gpu = find_gpu("h100-sxm");
      c.engine = e;
      c.engine_given = true;
      c.scheduler.policy = p;
      c.scheduler.max_num_batched_tokens = 2048;
      c.scheduler.max_num_seqs = 256;
      c.scheduler.async_scheduling = false;
      c.scheduler.enable_prefix_caching = false;
      c = resolve(c);
      const RunResult r = simulate(c, w);
      REQUIRE(r.summary.completed == w.size());
      CHECK(r.summary.preemptions == 0);
      std::vector<double> t;
      for (const RequestRecord& q : r.requests) {
        t.push_back(q.first_token_s);
        t.push_back(q.last_token_s);
      }
      times.push_back(t);
    }
    INFO("engine " << engine_name(e));
    CHECK(times[0] == times[1]);
  }
}

TEST_CASE("vllm-v1: scheduled ahead, a sampling request holds a placeholder for its token",
          "[policy][vllm-v1]") {
  // vLLM's AsyncScheduler under a batch queue of 2: each step is scheduled before the previous
  // one's output is applied. Blocks of 4 tokens.
  SchedulerConfig c = v1(64);
  c.async_scheduling = true;
  V1Scheduler s(c, 1000, 2);
  REQUIRE(s.schedules_ahead());
  s.add_request(0, 4, 3);
  s.add_request(1, 4, 1);
  // X: both prompts; both will sample, so each holds one placeholder.
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}});
  CHECK(s.seq(0).placeholders == 1);
  CHECK(s.seq(0).num_computed_tokens == 4);  // counted when scheduled
  // Y, before X's tokens are known: 0 computes the token X samples (4 + 1 placeholder - 4 = 1);
  // 1's only token is in flight (4 + 2 - 1 >= 4 + 1), so it is not scheduled again.
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  CHECK(s.batch().shapes()[0].context_tokens == 4);
  CHECK(s.seq(0).placeholders == 2);
  CHECK(s.batches_in_flight() == 2);
  CHECK(s.used_blocks() == 3);  // 0: 5 tokens in 2 blocks; 1: 1 block, held until X is applied
  std::vector<std::pair<uint32_t, bool>> tokens;
  auto record = [&](uint32_t id, int32_t, bool, bool done) { tokens.emplace_back(id, done); };
  s.update_from_output(record);  // X: a token each; 1 finishes and frees its block
  CHECK(tokens == std::vector<std::pair<uint32_t, bool>>{{0, false}, {1, true}});
  CHECK(s.seq(0).generated == 1);
  CHECK(s.seq(0).placeholders == 1);
  CHECK(s.used_blocks() == 2);
  CHECK(s.batches_in_flight() == 1);
  // Z: 0's third token is still to come (5 + 2 - 1 < 4 + 3).
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  CHECK(s.batch().shapes()[0].context_tokens == 5);
  s.update_from_output(record);  // Y
  // W: 0's last token is in flight (6 + 2 - 1 >= 7): nothing to schedule, nothing in flight added.
  CHECK(s.schedule().empty());
  CHECK(s.batches_in_flight() == 1);
  tokens.clear();
  s.update_from_output(record);  // Z: 0's third token, its last
  CHECK(tokens == std::vector<std::pair<uint32_t, bool>>{{0, true}});
  CHECK(s.seq(0).generated == 3);
  CHECK(s.used_blocks() == 0);
  CHECK(s.batches_in_flight() == 0);
}

TEST_CASE("vllm-v1: a request preempted while its step runs still gets that step's token",
          "[policy][vllm-v1]") {
  // AsyncScheduler: update_from_output appends a preempted request's sampled token (it is not
  // finished), and its recompute covers it. 3 usable blocks of 4 tokens.
  SchedulerConfig c = v1(64);
  c.async_scheduling = true;
  V1Scheduler s(c, 4, 2);
  s.add_request(0, 4, 6);
  s.add_request(1, 4, 6);
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}});  // X: one block each
  // Y: 0's token 5 needs a second block (2 + 1 of 3); then 1's needs one more: none left, so the
  // tail of `running`, 1 itself, is preempted while X still computes its prompt.
  CHECK(entries(s.schedule()) == Entries{{0, 1}});
  CHECK(s.seq(1).status == SeqStatus::kWaiting);
  CHECK(s.seq(1).num_computed_tokens == 0);
  CHECK(s.seq(1).placeholders == 1);  // X's token for it is still in flight
  complete_step(s);                   // X: 1 gets its first token while waiting
  CHECK(s.seq(1).generated == 1);
  CHECK(s.seq(1).placeholders == 0);
  CHECK(s.seq(1).status == SeqStatus::kWaiting);
}
