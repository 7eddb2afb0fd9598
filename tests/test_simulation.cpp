// The host and event loop, end to end, with hand-computable timings.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "sim/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

SimConfig small_config(const std::string& policy, int64_t budget) {
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.scheduler.policy = parse_policy(policy);
  c.scheduler.max_num_batched_tokens = budget;
  c.scheduler.max_model_len = 8192;
  c.frontend_latency_s = 0;  // the engine alone: hand-computed step times
  return resolve(c);
}

Workload requests(std::initializer_list<std::tuple<double, int, int>> specs) {
  Workload w;
  for (const auto& [t, in, out] : specs) {
    w.push_back(RequestSpec{static_cast<uint32_t>(w.size()), t, in, out});
  }
  return w;
}

}  // namespace

TEST_CASE("host: first token at the end of the step that computes the last prompt token", "[sim]") {
  const ConstantCost one_second(1.0);
  // chunked:4, prompt 10: chunks of 4, 4, 2 end at t = 1, 2, 3; then decodes at 4 and 5.
  const RunResult r = simulate(small_config("chunked", 4), requests({{0.0, 10, 3}}), &one_second);
  const RequestRecord& q = r.requests[0];
  CHECK(q.finished());
  CHECK(q.first_scheduled_s == 0);
  CHECK(q.first_token_s == 3);
  CHECK(q.last_token_s == 5);
  CHECK(q.ttft_s() == 3);
  CHECK(q.e2e_s() == 5);
  CHECK(q.tpot_s() == 1);
  CHECK(q.max_itl_s == 1);
  CHECK(q.otps() == Approx(1.5));  // 3 tokens / (5 - 3) s
  CHECK(r.summary.steps == 5);
  CHECK(r.summary.itl_ms.count == 2);
  CHECK(r.summary.itl_ms.p50 == Approx(1000));
  CHECK(r.summary.otps_p50_ratio == Approx(1.5));
  CHECK(r.summary.makespan_s == 5);
  CHECK(r.summary.step_time_fraction == Approx(1));
}

TEST_CASE("host: a request arriving during a step waits for the next decision", "[sim]") {
  const ConstantCost one_second(1.0);
  // vllm-v0: request 0 prefills in [0, 1); request 1 arrives at 0.5 and is prefilled in [1, 2),
  // alone (prefill priority), so 0's first decode waits until [2, 3).
  const RunResult r = simulate(small_config("vllm-v0", 4096),
                               requests({{0.0, 100, 2}, {0.5, 100, 2}}), &one_second);
  CHECK(r.requests[0].first_token_s == 1);
  CHECK(r.requests[1].first_scheduled_s == 1);
  CHECK(r.requests[1].queue_s() == 0.5);
  CHECK(r.requests[1].first_token_s == 2);
  CHECK(r.requests[0].last_token_s == 3);  // its decode stalled behind 1's prefill
  CHECK(r.requests[0].max_itl_s == 2);
  CHECK(r.summary.prefill_only_steps == 2);
  CHECK(r.summary.decode_only_steps == 1);
  CHECK(r.summary.mixed_steps == 0);
}

TEST_CASE("host: requests arriving at the same instant share the first step", "[sim]") {
  const ConstantCost one_second(1.0);
  const RunResult r = simulate(small_config("vllm-v0", 4096),
                               requests({{0.0, 10, 1}, {0.0, 10, 1}, {0.0, 10, 1}}), &one_second);
  for (const RequestRecord& q : r.requests)
    CHECK(q.first_token_s == 1);
  CHECK(r.summary.steps == 1);
  // One-token answers: E2E = TTFT, no decode time, OTPS undefined and left out.
  CHECK(r.summary.otps.count == 0);
  CHECK(r.summary.tpot_ms.count == 0);
  CHECK(r.summary.e2e_ms.p50 == r.summary.ttft_ms.p50);
}

TEST_CASE("host: the GPU idles between bursts and the makespan covers it", "[sim]") {
  const ConstantCost one_second(1.0);
  const RunResult r =
      simulate(small_config("chunked", 2048), requests({{0.0, 10, 1}, {10.0, 10, 1}}), &one_second);
  CHECK(r.requests[1].first_token_s == 11);
  CHECK(r.summary.makespan_s == 11);
  CHECK(r.summary.step_time_fraction == Approx(2.0 / 11));
}

TEST_CASE("host: rejected requests are reported with their reason, never lost", "[sim]") {
  SimConfig c = small_config("vllm-v0", 4096);
  const RunResult r = simulate(c, requests({{0.0, 8000, 500}, {0.0, 100, 10}}));
  CHECK(r.summary.rejected == 1);
  CHECK(r.summary.completed == 1);
  CHECK(r.requests[0].status == SeqStatus::kRejected);
  CHECK(r.requests[0].reject == RejectReason::kContextLength);
}

TEST_CASE("resolve: vLLM's defaults and the checks on flags", "[sim]") {
  SimConfig c;
  c.model = find_model("llama-3-8b");
  c.gpu = find_gpu("a100-80g");
  c.scheduler.policy = Policy::kVllmV0;
  SimConfig r = resolve(c);
  CHECK(r.scheduler.max_model_len == 8192);
  CHECK(r.scheduler.max_num_batched_tokens == 8192);  // max(max_model_len, 2048)
  c.scheduler.policy = Policy::kChunked;
  CHECK(resolve(c).scheduler.max_num_batched_tokens == 2048);
  c.scheduler.max_model_len = 1024;
  c.scheduler.policy = Policy::kVllmV0;
  CHECK(resolve(c).scheduler.max_num_batched_tokens == 2048);
  c.scheduler.max_model_len = 9000;
  CHECK_THROWS_WITH(resolve(c), Catch::Contains("max-model-len"));
  c.scheduler.max_model_len = 0;
  c.tp = 3;
  CHECK_THROWS_WITH(resolve(c), Catch::Contains("must divide"));
  c.tp = 1;
  c.scheduler.max_num_batched_tokens = -5;
  CHECK_THROWS_WITH(resolve(c), Catch::Contains("max-num-batched-tokens"));
  c.scheduler.max_num_batched_tokens = 0;
  CHECK_THROWS_WITH(parse_policy("fcfs"), Catch::Contains("unknown scheduler 'fcfs'"));
  CHECK(parse_policy("VLLM-V0") == Policy::kVllmV0);
}
