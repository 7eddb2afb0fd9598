// Pipeline parallelism (issue 47): vLLM's layer partition, the memory plan of a PP=2 x TP=4 70B
// worked by hand, one step's stage and send times, the engine loop's batch queue with one and with
// two batches in flight (the bubble and its filling), and the start-up refusals.
#include <catch2/catch.hpp>

#include <cmath>

#include "cli_helpers.hpp"
#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/memory_plan.hpp"
#include "models/parallel.hpp"
#include "models/roofline.hpp"
#include "sim/simulation.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::error_field;
using servesim::test::ideal_params;
using servesim::test::slow_gpu;
using servesim::test::tiny_model;

TEST_CASE("pipeline: layers split as vLLM's get_pp_indices", "[pipeline]") {
  CHECK(pp_layer_partition(80, 2) == std::vector<int>{40, 40});
  CHECK(pp_layer_partition(80, 1) == std::vector<int>{80});
  // The remainder goes one each to the stages before the last, from the second-to-last back.
  CHECK(pp_layer_partition(61, 4) == std::vector<int>{15, 15, 16, 15});
  CHECK(pp_layer_partition(10, 3) == std::vector<int>{3, 4, 3});
  CHECK(pp_layer_partition(7, 4) == std::vector<int>{2, 2, 2, 1});
  CHECK(pp_layer_partition(4, 4) == std::vector<int>{1, 1, 1, 1});
  // Ranks fill nodes in order: TP4 stages on nodes of 8 leave a node between stages 1 and 2.
  CHECK_FALSE(pp_send_crosses_node(0, 4, 8));
  CHECK(pp_send_crosses_node(1, 4, 8));
  CHECK(pp_send_crosses_node(0, 8, 8));
  CHECK_FALSE(pp_send_crosses_node(0, 1, 8));
  // TP6 on nodes of 8: ranks 2-5 of stage 0 send to 8-11, on the next node.
  CHECK(pp_send_crosses_node(0, 6, 8));
  CHECK_FALSE(pp_stage_straddles_nodes(0, 6, 8));
  CHECK(pp_stage_straddles_nodes(1, 6, 8));         // ranks 6-11
  CHECK_FALSE(pp_stage_straddles_nodes(1, 16, 8));  // whole nodes
}

TEST_CASE("memory plan: Llama-3.1-70B at PP2 x TP4 on H100, each stage by hand",
          "[pipeline][memory]") {
  const ModelSpec m = find_model("llama-3.1-70b");
  // A layer: q/k/v 8192 x (8192 + 2 x 1024) + o 8192 x 8192 = 150,994,944; MLP 3 x 8192 x 28672 =
  // 704,643,072; two norms 16,384: 855,654,400 parameters. Embedding and LM head 128256 x 8192 =
  // 1,050,673,152 each, the final norm 8192. BF16, split 4 ways; 40 layers a stage.
  const double first = (40.0 * 855'654'400 + 1'050'673'152) * 2 / 4;
  const double last = (40.0 * 855'654'400 + 1'050'673'152 + 8192) * 2 / 4;
  CHECK(m.stage_weight_bytes_per_gpu(4, 40, true, false) == 17'638'424'576);
  CHECK(first == 17'638'424'576);
  CHECK(m.stage_weight_bytes_per_gpu(4, 40, false, true) == 17'638'428'672);
  CHECK(last == 17'638'428'672);
  // Both stages of one pipeline hold the whole model once between them.
  CHECK(m.stage_weight_bytes_per_gpu(4, 40, true, false) +
            m.stage_weight_bytes_per_gpu(4, 40, false, true) ==
        Approx(m.weight_bytes_per_gpu(4)).epsilon(1e-12));
  ServerShape server;
  server.engine = Engine::kV1;
  server.tp = 4;
  server.pp = 2;
  server.max_num_batched_tokens = 8192;
  server.max_num_seqs = 1024;
  const MemoryPlan p = plan_memory(find_gpu("h100-sxm"), m, {}, server);
  // H100 SXM: 79.22 GiB as CUDA reports it, x 0.9, rounded up.
  const double usable = std::ceil(79.22 * 1024 * 1024 * 1024 * 0.9);
  CHECK(usable == 76'555'644'568);
  const double rope = 131072.0 * 128 * 2;  // the rotary cache on every GPU
  // The last stage runs the sampler: 38 B x 1024 rows x 128,256 logits and the hidden states 4 B x
  // 8192 x 8192; the first the hidden states alone. NCCL's reserve 0.64 GiB on both.
  const double act_last = 38.0 * 1024 * 128256 + 4.0 * 8192 * 8192;
  const double act_first = 4.0 * 8192 * 8192;
  const double reserve = 0.64 * 1024 * 1024 * 1024;
  // KV of a token on a GPU of a stage: 40 layers x (8 KV heads / 4) x 128 x K and V x 2 B = 40,960.
  CHECK(p.kv_bytes_per_block == 16 * 40'960);
  const double kv_first = usable - first - rope - act_first - reserve;
  const double kv_last = usable - last - rope - act_last - reserve;
  CHECK(std::floor(kv_first / 655'360) == 88'391);
  CHECK(std::floor(kv_last / 655'360) == 80'775);
  // Every stage gets the fewest blocks of any (get_kv_cache_configs): the last's.
  CHECK(p.stage == 1);
  CHECK(p.stages == 2);
  CHECK(p.weight_bytes == last + rope);
  CHECK(p.activation_bytes == act_last);
  CHECK(p.num_gpu_blocks == 80'775);
  // The same 8 GPUs at TP8: the whole model split 8 ways, the same KV bytes a token a GPU.
  server.tp = 8;
  server.pp = 1;
  const MemoryPlan tp8 = plan_memory(find_gpu("h100-sxm"), m, {}, server);
  CHECK(tp8.kv_bytes_per_block == p.kv_bytes_per_block);
  CHECK(tp8.stages == 1);
  CHECK(tp8.num_gpu_blocks == 80'775);
  // One H100 a stage: four stages of 20 layers (35 GB of weights; KV 20 x 8 x 128 x 2 x 2 B =
  // 81,920 B a token); the last (LM head and sampler) has the least room: 26,129 blocks. Two
  // stages of 70.5 GB leave 8 blocks (vLLM would then refuse the 131,072-token context); one GPU
  // (141 GB) does not hold the weights.
  server.tp = 1;
  server.pp = 4;
  const MemoryPlan pp4 = plan_memory(find_gpu("h100-sxm"), m, {}, server);
  const double last4 = (20.0 * 855'654'400 + 1'050'673'152 + 8192) * 2 + rope;
  CHECK(pp4.stage == 3);
  CHECK(pp4.num_gpu_blocks ==
        int64_t(std::floor((usable - last4 - act_last - reserve) / 1'310'720)));
  CHECK(pp4.num_gpu_blocks == 26'129);
  server.pp = 2;
  CHECK(plan_memory(find_gpu("h100-sxm"), m, {}, server).num_gpu_blocks == 8);
  server.pp = 1;
  CHECK(error_field([&] { plan_memory(find_gpu("h100-sxm"), m, {}, server); }) == "model");
}

TEST_CASE("roofline: a pipeline's stages split the step's layers, sends by hand", "[pipeline]") {
  // tiny_model (2 layers) on the slow GPU (NVLink 1000 B/s one way), every efficiency 1, no
  // latency: at PP2 each stage runs one layer.
  const ModelSpec m = tiny_model();
  const RooflineParams ideal = ideal_params();
  const RooflineCostModel whole(slow_gpu(), m, 1, ideal.hw, ideal.engine);
  const RooflineCostModel pipe(slow_gpu(), m, 1, ideal.hw, ideal.engine, 2);
  CHECK(whole.pipeline_stages() == 1);
  CHECK(pipe.pipeline_stages() == 2);
  std::vector<SeqShape> batch(1);
  batch[0].new_tokens = 10;
  batch[0].prefill = true;
  batch[0].emits_token = true;
  const BatchTotals totals = BatchTotals::of(batch);
  const StepCost c = pipe.cost(batch, totals);
  // The whole model's step is the same one with or without stages.
  CHECK(c.seconds == whole.cost(batch, totals).seconds);
  double out[3];
  pipe.pipeline_seconds(c, totals, out);
  const double layers = c.linear_s + c.attention_s + c.elementwise_s + c.allreduce_s;
  CHECK(out[0] == Approx(layers / 2 + c.engine_s));
  CHECK(out[2] == Approx(layers / 2 + c.engine_s + c.lm_head_s));
  // The send: hidden states and residual, 2 x 10 tokens x 8 x 2 B = 320 B at 1000 B/s.
  CHECK(out[1] == Approx(0.320));
  // TP2 stages: each GPU sends half (160 B), then the receivers all-gather the 320 B: (2 - 1) /
  // 2 x 320 B at 1000 B/s.
  const RooflineCostModel tp2(slow_gpu(), m, 2, ideal.hw, ideal.engine, 2);
  const StepCost c2 = tp2.cost(batch, totals);
  tp2.pipeline_seconds(c2, totals, out);
  CHECK(out[1] == Approx(0.160 + 0.160));
  // Across nodes (nodes of 2 GPUs, so the TP2 stages meet over the NICs: 1e-9 GB/s at 0.94 and
  // 20 us of latency).
  GpuSpec small = slow_gpu();
  small.gpus_per_node = 2;
  small.network_gb_per_s = 1e-6;
  const RooflineCostModel nodes(small, m, 2, ideal.hw, ideal.engine, 2);
  nodes.pipeline_seconds(nodes.cost(batch, totals), totals, out);
  CHECK(out[1] == Approx(20e-6 + 160 / (1000 * 0.94) + 0.160));
}

namespace {

// Every stage 10 ms and every send 1 ms, whatever the batch; 2 ms of the engine core's CPU.
class TwoStages final : public CostModel {
 public:
  StepCost cost(std::span<const SeqShape>) const override {
    StepCost c;
    c.cpu_overhead_s = 0.002;
    c.seconds = 0.023;
    return c;
  }
  std::string name() const override { return "two stages"; }
  int pipeline_stages() const override { return 2; }
  void pipeline_seconds(const StepCost&, const BatchTotals&, std::span<double> out) const override {
    out[0] = 0.010;
    out[1] = 0.001;
    out[2] = 0.010;
  }
};

SimConfig pp2_config() {
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.scheduler.policy = Policy::kVllmV1;
  c.pp = 2;
  c.memory.num_gpu_blocks_override = 100;
  c.frontend_latency_s = 0;
  return resolve(c);
}

}  // namespace

TEST_CASE("pipeline: the batch queue, one batch in flight (a bubble) and two (filled)",
          "[pipeline][sim]") {
  const TwoStages cost;
  const SimConfig c = pp2_config();
  SECTION("one request: its next token waits for its last, so one stage idles at a time") {
    // Each token: 2 ms of CPU, stage 0 (10 ms), the send (1 ms), stage 1 (10 ms): 23 ms apart.
    Workload w(1);
    w[0] = {0, 0.0, 16, 3};
    const RunResult r = simulate(c, w, &cost);
    CHECK(r.requests[0].first_token_s == Approx(0.023));
    CHECK(r.requests[0].last_token_s == Approx(0.069));
    // The steps' records tile the time the pipeline delivered: 3 x 23 ms.
    CHECK(r.summary.steps == 3);
  }
  SECTION("two requests a step apart: two batches in flight fill the bubble") {
    // A at 0: CPU to 2 ms, stage 0 2-12, send, stage 1 13-23. B arrives at 1 ms; the engine core
    // is free at 2 ms, A not done: B's batch, CPU to 4, stage 0 12-22 (after A), send, stage 1
    // 23-33. The queue is full: A's output at 23, A again (CPU to 25, stage 0 25-35, stage 1
    // 36-46); B's at 33, B again (CPU to 35, stage 0 35-45, stage 1 46-56); and so on.
    Workload w(2);
    w[0] = {0, 0.0, 16, 3};
    w[1] = {1, 0.001, 16, 3};
    const RunResult r = simulate(c, w, &cost);
    CHECK(r.requests[0].first_token_s == Approx(0.023));
    CHECK(r.requests[1].first_token_s == Approx(0.033));
    // A's tokens 23 ms apart, B's too: each still crosses both stages, but the stages now
    // alternate between them, and two tokens come out every 23 ms instead of one.
    CHECK(r.requests[0].last_token_s == Approx(0.069));
    CHECK(r.requests[1].last_token_s == Approx(0.079));
    CHECK(r.summary.steps == 6);
  }
}

TEST_CASE("pipeline: what vLLM refuses and what servesim does not model", "[pipeline][cli]") {
  const auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "--model",    "llama-3.1-8b", "--num-prompts",
                                     "4",   "--interval", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    return call_cli(args);
  };
  CHECK(run({"--pp", "2"}).code == 0);
  CHECK(run({"--pipeline-parallel-size", "2", "--tp", "2"}).code == 0);
  // Every stage needs a layer (Llama-3.1-8B has 32).
  const auto too_deep = run({"--pp", "33"});
  CHECK(too_deep.code == 2);
  CHECK_THAT(too_deep.err, Catch::Contains("field 'pipeline-parallel-size'") &&
                               Catch::Contains("must be in [1, 32]"));
  CHECK(run({"--pp", "0"}).code == 2);
  // Llama-3.1-70B has 80 layers; servesim keeps up to 32 batches in flight.
  CHECK_THAT(call_cli({"run", "--model", "llama-3.1-70b", "--pp", "40", "--num-prompts", "4"}).err,
             Catch::Contains("must be in [1, 32]") && Catch::Contains("up to 32 stages"));
  CHECK_THAT(run({"--pp", "2", "--pipeline-parallel-size", "4"}).err,
             Catch::Contains("field 'pp'") && Catch::Contains("conflicts"));
  // V0 ran a scheduler per stage (virtual engines): not modelled.
  CHECK_THAT(
      run({"--pp", "2", "--scheduler", "chunked"}).err,
      Catch::Contains("field 'pipeline-parallel-size'") && Catch::Contains("virtual engines"));
  CHECK_THAT(run({"--pp", "2", "--enable-lora"}).err,
             Catch::Contains("does not model it with --pipeline-parallel-size"));
  CHECK_THAT(run({"--pp", "2", "--prefill-replicas", "1", "--decode-replicas", "1"}).err,
             Catch::Contains("disaggregated pools with pipeline stages"));
  // TP4 stages on nodes of 6 GPUs: the second stage (ranks 4-7) would have GPUs on two nodes.
  const auto dir = servesim::test::scratch("pipeline_nodes");
  servesim::test::write(dir / "six.ini",
                        "name = six\nbf16_tflops = 989.4\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
                        "interconnect_gb_per_s = 450\narch = hopper\ngpus_per_node = 6\n");
  const auto straddle =
      call_cli({"run", "--model", "llama-3.1-70b", "--gpu-file", (dir / "six.ini").string(), "--tp",
                "4", "--pp", "2", "--num-prompts", "4"});
  CHECK(straddle.code == 2);
  CHECK_THAT(straddle.err, Catch::Contains("stage 2's TP group of 4 GPUs would straddle two "
                                           "nodes of 6"));
}

TEST_CASE("pipeline: a run names its stages and records them", "[pipeline][cli]") {
  const auto r = call_cli({"run", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4",
                           "--pp", "2", "--num-prompts", "20", "--interval", "none"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("h100-sxm x8 (TP4 x PP2)"));
  CHECK_THAT(r.out, Catch::Contains("a batch queue of 2 through 2 pipeline stages"));
  CHECK_THAT(r.out, Catch::Contains("80775 blocks"));
  CHECK_THAT(r.out, Catch::Contains("pipeline stage 2 of 2"));
}

TEST_CASE("capacity: parallel layouts as lists, the ones vLLM refuses left out and named",
          "[pipeline][cli]") {
  const auto r =
      call_cli({"capacity", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "1,2,4",
                "--pp", "1,2", "--slo", "ttft_p99_ms=3000", "--num-requests", "40"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  // 70B on one H100 does not fit; on two (TP2, or TP1 x PP2) it leaves 8 blocks, fewer than the
  // context: vLLM refuses all three at start-up. TP2 x PP2, TP4 and TP4 x PP2 are searched.
  CHECK_THAT(r.out, Catch::Contains("layouts left out, as vLLM refuses them at start-up:"));
  CHECK_THAT(r.out, Catch::Contains("--tp 1 --pp 1: llama-3.1-70b does not fit"));
  CHECK_THAT(r.out, Catch::Contains("--tp 1 --pp 2: vLLM would not start"));
  CHECK_THAT(r.out, Catch::Contains("--tp 2 --pp 1: vLLM would not start"));
  CHECK_THAT(r.out, Catch::Contains("h100-sxm pp2  llama-3.1-70b   2     4"));
  CHECK_THAT(r.out, Catch::Contains("h100-sxm      llama-3.1-70b   4     4"));
  CHECK_THAT(r.out, Catch::Contains("h100-sxm pp2  llama-3.1-70b   4     8"));
  // Every layout refused: an error naming the first. A misspelt model is never a layout.
  const auto none = call_cli({"capacity", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp",
                              "1,2", "--slo", "ttft_p99_ms=3000", "--num-requests", "40"});
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Catch::Contains("no parallel layout listed can run"));
  const auto typo = call_cli({"capacity", "--model", "llama-3.1-70b,lama-8b", "--tp", "1,2",
                              "--slo", "ttft_p99_ms=3000", "--num-requests", "40"});
  CHECK(typo.code == 2);
  CHECK_THAT(typo.err, Catch::Contains("lama-8b"));
}
