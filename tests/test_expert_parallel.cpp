// Expert parallelism across data-parallel ranks (issue 47): DeepSeek-V3's memory plan at EP8 x
// DP8 on eight H200s worked by hand, one step's dispatch and combine bytes and time, the busiest
// GPU's share under uniform routing, and what is refused.
#include <catch2/catch.hpp>

#include <cmath>

#include "capacity_fixtures.hpp"
#include "cli_helpers.hpp"
#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/hardware.hpp"
#include "models/memory_plan.hpp"
#include "models/parallel.hpp"
#include "models/roofline.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::ideal_params;
using servesim::test::slow_gpu;
using servesim::test::tiny_model;

TEST_CASE("memory plan: DeepSeek-V3 at EP8 x DP8 on eight H200s, by hand", "[expert][memory]") {
  const ModelSpec m = find_model("deepseek-v3");
  // Routed experts: 58 MoE layers x 256 x 44,040,192 parameters in FP8 = 653,908,770,816 B;
  // the rest (MLA, the dense layers, shared experts, routers, embedding, LM head) 19,078,428,672
  // B (of 672,987,199,488: tests/test_model_families.cpp).
  CHECK(m.routed_expert_bytes() == 653'908'770'816);
  // TP1 on every rank: the rest whole on each GPU, and 256 / 8 = 32 whole experts a layer.
  CHECK(local_experts(256, 8) == 32);
  CHECK(m.ep_weight_bytes_per_gpu(1, 8) == 19'078'428'672.0 + 58.0 * 32 * 44'040'192);
  CHECK(m.ep_weight_bytes_per_gpu(1, 8) == 100'817'025'024);
  // Experts that do not divide: the first ranks hold one more (linear placement).
  CHECK(local_experts(256, 12) == 22);
  ServerShape server;
  server.engine = Engine::kV1;
  server.tp = 1;
  server.ep = 8;
  server.block_size = 64;
  server.max_num_batched_tokens = 8192;
  server.max_num_seqs = 1024;
  const MemoryPlan p = plan_memory(find_gpu("h200-sxm"), m, {}, server);
  // + the rope cache (163840 x 64 x 2 B); the sampler's peak and the hidden states; the reserve
  // of a GPU in an NCCL group (0.64 GiB); usable ceil(141 GiB x 0.9).
  const double weights = 100'817'025'024.0 + 163840.0 * 64 * 2;
  CHECK(p.weight_bytes == weights);
  const double act = 38.0 * 1024 * 129280 + 4.0 * 8192 * 7168;
  CHECK(p.activation_bytes == act);
  const double usable = std::ceil(141.0 * 1024 * 1024 * 1024 * 0.9);
  const double kv = usable - weights - act - 0.64 * 1024 * 1024 * 1024;
  // Each rank its own latent cache: 61 x 576 x 2 B a token, blocks of 64 tokens.
  CHECK(p.kv_bytes_per_block == 64 * 61 * 576 * 2);
  CHECK(p.num_gpu_blocks == int64_t(std::floor(kv / (64.0 * 61 * 576 * 2))));
  CHECK(p.num_gpu_blocks == 6552);  // 419,328 tokens a rank, 3.35 M over the eight
  // Eight H100s at EP8 hold 94 GiB of weights a GPU no better than TP8's 79 GiB: neither fits.
  CHECK_THROWS_WITH(plan_memory(find_gpu("h100-sxm"), m, {}, server),
                    Catch::Contains("deepseek-v3 does not fit on h100-sxm"));
  // EP over TP alone (one rank) holds what TP holds: whole experts instead of slices.
  const ModelSpec mixtral = find_model("mixtral-8x7b");
  CHECK(mixtral.ep_weight_bytes_per_gpu(4, 4) == Approx(mixtral.weight_bytes_per_gpu(4)));
}

TEST_CASE("expert parallelism: one step's dispatch and combine, by hand", "[expert][cost]") {
  // DeepSeek-V3, eight ranks at TP1, 64 tokens a rank: each GPU gathers the other seven ranks'
  // 448 tokens' hidden states (7168) and router logits (256), and reduce-scatters 7168 outputs
  // each, in BF16: 7/8 x 512 x (7168 + 256 + 7168) x 2 B = 13,074,432 B a MoE layer.
  const ModelSpec m = find_model("deepseek-v3");
  const GpuSpec h200 = find_gpu("h200-sxm");
  const HardwareParams hw = hardware_params(GpuArch::kHopper);
  const RooflineCostModel ep(h200, m, 1, hw, engine_params(Engine::kV1), 1, 8);
  CHECK(ep.all_to_all_bytes(512) == 13'074'432);
  // Two NCCL calls' latency and the bytes over one NVLink direction at the fit's efficiency.
  const double one = 2 * hw.allreduce_latency_s + 13'074'432 / (450e9 * hw.interconnect_efficiency);
  CHECK(ep.all_to_all_seconds(512) == Approx(one));
  std::vector<SeqShape> batch(64);
  for (SeqShape& s : batch) {
    s.new_tokens = 1;
    s.context_tokens = 1000;
    s.emits_token = true;
  }
  const StepCost c = ep.cost(batch);
  // 58 MoE layers a step.
  CHECK(c.all_to_all_s == Approx(58 * one));
  // One rank (DP1): no exchange.
  const RooflineCostModel alone(h200, m, 8, hw, engine_params(Engine::kV1), 1, 1);
  CHECK(alone.all_to_all_bytes(512) == 0);
  CHECK(alone.cost(batch).all_to_all_s == 0);
  // Ranks on two nodes (16 GPUs at TP1, nodes of 8): the NICs at 0.94 and 20 us a call.
  const RooflineCostModel two_nodes(h200, m, 1, hw, engine_params(Engine::kV1), 1, 16);
  CHECK(two_nodes.all_to_all_seconds(1024) ==
        Approx(2 * 20e-6 + 15.0 / 16 * 1024 * 14592 * 2 / (50e9 * 0.94)));
}

TEST_CASE("expert parallelism: the busiest GPU under uniform routing", "[expert][cost]") {
  CHECK(ep_imbalance(100, 1) == 1);
  CHECK(ep_imbalance(0, 8) == 1);
  // 1 + sqrt(2 ln 8 / mean): 8 pairs a GPU -> 1.72; 800 -> 1.072; never more than every pair.
  CHECK(ep_imbalance(8, 8) == Approx(1 + std::sqrt(2 * std::log(8.0) / 8)));
  CHECK(ep_imbalance(800, 8) == Approx(1.0721).epsilon(1e-4));
  CHECK(ep_imbalance(1e-6, 8) == 8);
}

TEST_CASE("expert parallelism: a step's expert GEMMs and bytes, by hand", "[expert][cost]") {
  // tiny_model with 4 experts of 3 x 8 x 16 = 384 parameters, 2 a token, in both layers; 2 ranks
  // at TP1 (EP2: 2 experts a GPU); ideal efficiencies on the slow GPU (1000 B/s).
  ModelSpec m = tiny_model();
  m.num_experts = 4;
  m.experts_per_token = 2;
  const RooflineParams ideal = ideal_params();
  std::vector<SeqShape> batch(4);
  for (SeqShape& s : batch) {
    s.new_tokens = 1;
    s.context_tokens = 10;
    s.emits_token = true;
  }
  // Per token, the TP group's GEMMs without the routed experts: attention 2 x 192 and routers
  // 2 x 32 parameters (896 FLOPs); weights read 896 B; in and out 608 B of the whole MLP count
  // less the experts' widths 2 x (3 x 16 x 2 layers x 2 B) = 384: 224 B. Four tokens: 3,584
  // FLOPs, 896 + 4 x 224 = 1,792 B.
  // The experts: 8 tokens over both ranks, 16 pairs, 8 a GPU on average; the busiest GPU gets
  // 8 x (1 + sqrt(2 ln 2 / 8)) pairs, each 2 x 384 x 2 = 1,536 FLOPs and (2 x 8 + 3 x 16) x 2
  // layers x 2 B = 256 B; its 2 experts (1,536 B each, both layers) are read when some token
  // reaches them: 1 - (1/2)^8.
  const double pairs = 8 * (1 + std::sqrt(2 * std::log(2.0) / 8));
  const double experts = 2 * (1 - std::pow(0.5, 8)) * 1536;
  SECTION("compute-bound") {
    const RooflineCostModel ep(slow_gpu(), m, 1, ideal.hw, ideal.engine, 1, 2);
    const StepCost c = ep.cost(batch);
    CHECK(c.linear_s == Approx(3.584 + 1536 * pairs / 1000));
    // The exchange: 1/2 x 8 tokens x ((8 + 4) + 8) x 2 B = 160 B a layer at 1000 B/s, no
    // latency, in each of the 2 layers.
    CHECK(c.all_to_all_s == Approx(2 * 0.160));
  }
  SECTION("memory-bound: the bytes") {
    GpuSpec fast = slow_gpu();
    fast.bf16_tflops = 1;  // 1e12 FLOP/s: compute is free
    const RooflineCostModel ep(fast, m, 1, ideal.hw, ideal.engine, 1, 2);
    const StepCost c = ep.cost(batch);
    CHECK(c.linear_s == Approx(1.792 + (experts + 256 * pairs) / 1000).epsilon(1e-6));
    // This rank's bytes: its own part and the average GPU's 8 pairs. Without expert parallelism
    // the same GPU reads 896 B of weights, 4 x (1 - (1/2)^4) = 3.75 experts of 1,536 B and 4 x
    // 608 B in and out (9,088 B); the other parts are the same.
    const RooflineCostModel tp(fast, m, 1, ideal.hw, ideal.engine);
    const StepCost t = tp.cost(batch);
    CHECK(c.bytes - t.bytes == Approx(1792 + experts + 256 * 8 - 9088));
    CHECK(c.flops == Approx(t.flops));
  }
}

TEST_CASE("expert parallelism: runs, records and refusals", "[expert][cli]") {
  const auto r = call_cli({"run", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2",
                           "--data-parallel-size", "4", "--enable-expert-parallel", "--num-prompts",
                           "40", "--interval", "none"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out,
             Catch::Contains("4 replicas") && Catch::Contains("experts spread over 8 GPUs (EP8)"));
  CHECK_THAT(r.out, Catch::Contains("approximated (servesim list vllm-args): "
                                    "--enable-expert-parallel"));
  // vLLM's data-parallel ranks are V1 engine cores.
  CHECK_THAT(call_cli({"run", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2",
                       "--scheduler", "chunked", "--enable-expert-parallel", "--num-prompts", "4"})
                 .err,
             Catch::Contains("field 'enable-expert-parallel'") && Catch::Contains("not chunked"));
  const auto dense = call_cli(
      {"run", "--model", "llama-3.1-8b", "--enable-expert-parallel", "--num-prompts", "4"});
  CHECK(dense.code == 2);
  CHECK_THAT(dense.err, Catch::Contains("is dense"));
  const auto pp = call_cli({"run", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2",
                            "--pp", "2", "--enable-expert-parallel", "--num-prompts", "4"});
  CHECK(pp.code == 2);
  CHECK_THAT(pp.err, Catch::Contains("field 'enable-expert-parallel'") &&
                         Catch::Contains("pipeline-parallel-size"));
  const auto scaled =
      call_cli({"run", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2",
                "--enable-expert-parallel", "--autoscale", "running", "--autoscale-target", "8",
                "--max-replicas", "4", "--num-prompts", "4"});
  CHECK(scaled.code == 2);
  CHECK_THAT(scaled.err, Catch::Contains("fixed group"));
  // Capacity sizes one expert-parallel group: copies of it are not modelled.
  const auto sized = call_cli({"capacity", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp",
                               "2", "--enable-expert-parallel", "--slo", "ttft_p99_ms=2000",
                               "--num-requests", "20", "--target-rate", "50"});
  CHECK(sized.code == 2);
  CHECK_THAT(sized.err, Catch::Contains("copies of an expert-parallel group are not modelled"));
  const auto planned =
      call_cli({"capacity", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2",
                "--enable-expert-parallel", "--slo", "ttft_p99_ms=2000", "--num-requests", "20",
                "--over-time", "600", "--rate-pattern", "diurnal", "--request-rate", "2"});
  CHECK(planned.code == 2);
  CHECK_THAT(planned.err, Catch::Contains("copies of an expert-parallel group are not modelled"));
}

TEST_CASE("capacity: expert-parallel groups over TP x DP layouts", "[expert][cli]") {
  const auto dir = servesim::test::scratch("ep-capacity");
  const std::string csv = (dir / "cap.csv").string();
  const auto r = call_cli({"capacity",
                           "--model",
                           "mixtral-8x7b",
                           "--gpu",
                           "h100-sxm",
                           "--tp",
                           "1,2",
                           "--enable-expert-parallel",
                           "--data-parallel-size",
                           "1,2",
                           "--slo",
                           "ttft_p99_ms=2000,itl_p99_ms=100",
                           "--num-requests",
                           "200",
                           "--input-len",
                           "fixed:512",
                           "--output-len",
                           "fixed:128",
                           "--csv",
                           csv});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  // Mixtral's 87 GiB do not fit one H100: TP1 x DP1 is left out, named; the others are groups
  // of TP x DP GPUs sharing the experts, each probe running the whole group.
  CHECK_THAT(r.out, Catch::Contains("--tp 1 --data-parallel-size 1: mixtral-8x7b does not fit"));
  // Rows: TP1 x DP2, TP2 x DP1, TP2 x DP2 (the first flag listed varies slowest).
  const auto rows = servesim::test::read_csv(csv);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].at("fleet") == "2x h100-sxm (EP2)");
  CHECK(rows[1].at("fleet") == "h100-sxm (EP2)");
  CHECK(rows[2].at("fleet") == "2x h100-sxm (EP4)");
  CHECK(rows[0].at("gpus") == "2");
  CHECK(rows[1].at("gpus") == "2");
  CHECK(rows[2].at("gpus") == "4");
  // Two TP2 ranks sharing the experts serve more than one.
  CHECK(servesim::test::num(rows[2], "capacity_req_s") >
        servesim::test::num(rows[1], "capacity_req_s"));
}

TEST_CASE("expert parallelism: skewed routing loads the busiest GPU, by hand", "[expert][cost]") {
  // Four experts over two GPUs, Zipf 1: shares 12/25 x (1, 1/2, 1/3, 1/4) = 0.48, 0.24, 0.16,
  // 0.12. Placed at random, the hottest shares a GPU with each of the others alike: the busiest
  // GPU holds 0.72, 0.64 or 0.60, 0.6533 expected.
  CHECK(ep_busiest_share(4, 2, 1.0) == Approx((0.72 + 0.64 + 0.60) / 3));
  // Uneven: 4 experts over 3 GPUs are 2, 1, 1 (vLLM's linear map: one more on the first E mod
  // EP). The first GPU's pair is {0,1} 0.72, {0,2} 0.64, {0,3} 0.60, or one of three pairs under
  // a lone 0.48 elsewhere: (0.72 + 0.64 + 0.60 + 3 x 0.48) / 6.
  CHECK(ep_busiest_share(4, 3, 1.0) == Approx((0.72 + 0.64 + 0.60 + 3 * 0.48) / 6));
  // Uniform routing: the most experts a GPU holds over all of them.
  CHECK(ep_busiest_share(8, 3, 0.0) == Approx(3.0 / 8));
  CHECK(ep_busiest_share(4, 3, 0.0) == Approx(2.0 / 4));
  CHECK(ep_busiest_share(256, 8, 0.0) == Approx(1.0 / 8));
  // Past 8 experts, a mean over placements drawn from a fixed seed: the same every call, above
  // the uniform share and growing with the skew.
  const double mild = ep_busiest_share(256, 8, 0.5), steep = ep_busiest_share(256, 8, 1.5);
  // The placements are drawn by servesim's own shuffle: this value under GCC and Clang alike.
  CHECK(mild == Approx(0.15515516345790734).epsilon(1e-12));
  CHECK(mild > 1.0 / 8);
  CHECK(steep > mild);
  CHECK(steep < 1.0);
  // A step of DeepSeek-V3 at EP8: its expert GEMMs wait for the busiest GPU; skew 0 is the
  // uniform model itself.
  const ModelSpec m = find_model("deepseek-v3");
  const GpuSpec gpu = find_gpu("h200-sxm");
  const HardwareParams hw = hardware_params(gpu.arch);
  const EngineParams engine = engine_params(Engine::kV1);
  const RooflineCostModel uniform(gpu, m, 1, hw, engine, 1, 8),
      zero(gpu, m, 1, hw, engine, 1, 8, 0.0), skewed(gpu, m, 1, hw, engine, 1, 8, 1.0);
  std::vector<SeqShape> batch(64, SeqShape{1, 1000, false, true});
  CHECK(zero.cost(batch).seconds == uniform.cost(batch).seconds);
  CHECK(skewed.cost(batch).linear_s > uniform.cost(batch).linear_s);
  CHECK(skewed.cost(batch).attention_s == uniform.cost(batch).attention_s);
}

TEST_CASE("expert parallelism: --expert-skew is refused without it and recorded with it",
          "[expert][cli]") {
  const std::vector<std::string> base = {"run",         "--model",        "mixtral-8x7b",
                                         "--gpu",       "h100-sxm",       "--tp",
                                         "2",           "--num-requests", "4",
                                         "--input-len", "fixed:64",       "--output-len",
                                         "fixed:8"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  servesim::test::refused(with({"--expert-skew", "1"}), "give --enable-expert-parallel");
  servesim::test::refused(with({"--enable-expert-parallel", "--expert-skew", "5"}),
                          "must be in [0, 4]");
  const auto ok = call_cli(with({"--enable-expert-parallel", "--expert-skew", "1.25"}));
  INFO(ok.err);
  REQUIRE(ok.code == 0);
}
