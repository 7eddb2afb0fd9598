// The trade-off servesim exists to show, on a loaded scenario: vLLM's prefill priority has the
// lower median TTFT; chunked prefill with a small budget has the lower tail ITL.
#include <catch2/catch.hpp>

#include "sim/simulation.hpp"
#include "traces/synthetic.hpp"

using namespace servesim;

TEST_CASE("trade-off: vllm-v0 wins TTFT p50, chunked:512 wins ITL p99 under load", "[tradeoff]") {
  SyntheticOptions w;  // the default scenario of `servesim compare`, shortened
  w.num_requests = 800;
  w.request_rate = 9;
  w.input_len = LengthDist::parse("lognormal:1024:0.8:16:6000", "input-len");
  w.output_len = LengthDist::parse("lognormal:256:0.8:4:2000", "output-len");
  w.seed = 1;
  const Workload workload = generate_synthetic(w);
  auto run = [&](const char* policy, int64_t budget) {
    SimConfig c;
    c.model = find_model("llama-3.1-8b");
    c.gpu = find_gpu("h100-sxm");
    c.scheduler.policy = parse_policy(policy);
    c.scheduler.max_num_batched_tokens = budget;
    return simulate(resolve(c), workload).summary;
  };
  const RunSummary v0 = run("vllm-v0", 0), chunked = run("chunked", 512);
  REQUIRE(v0.completed == workload.size());
  REQUIRE(chunked.completed == workload.size());
  CHECK(v0.ttft_ms.p50 < chunked.ttft_ms.p50);
  CHECK(chunked.itl_ms.p99 < v0.itl_ms.p99);
  // And the mechanism: vllm-v0 never mixes prefill and decode in a step; chunked does.
  CHECK(v0.mixed_steps == 0);
  CHECK(chunked.mixed_steps > 0);
}
