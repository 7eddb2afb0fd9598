// gpt-oss (issue 47): sliding-window layers beside full-attention ones, attention sinks, biased
// experts in MXFP4. The catalogue against the model card, the KV cache against vLLM's own logs
// and its hybrid KV cache manager worked by hand, the windowed attention's work by hand, and what
// servesim refuses with a sliding window. scripts/oracle-v1-random.py --sliding-window checks the
// KV cache manager against vLLM's own step by step (ctest oracle.v1_sliding_window_random_cases).
#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"
#include "models/memory_plan.hpp"
#include "models/model.hpp"
#include "models/roofline.hpp"
#include "scheduler/kv_cache_manager.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::CliResult;
using servesim::test::error_field;
using servesim::test::GroupHasher;
using servesim::test::prompt;
using servesim::test::refused;
using servesim::test::scratch;
using servesim::test::write;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// The model card's convention for "active": the parameters a token passes through, the
// unembedding counted and the embedding not (gpt-oss model card, arXiv 2508.10925, Table 1).
double card_active(const ModelSpec& m) {
  return double(m.active_params() - int64_t(m.vocab_size) * m.hidden_size);
}

}  // namespace

TEST_CASE("catalogue: gpt-oss against its model card", "[models][sliding]") {
  // gpt-oss model card (OpenAI, August 2025), Table 1: 120b 116.83 B parameters, 5.13 B active,
  // a 60.8 GiB checkpoint; 20b 20.91 B, 3.61 B active, 12.8 GiB.
  const ModelSpec big = find_model("openai/gpt-oss-120b");
  CHECK(big.name == "gpt-oss-120b");
  CHECK(double(big.total_params()) == Approx(116.83e9).epsilon(0.0005));
  CHECK(card_active(big) == Approx(5.13e9).epsilon(0.002));
  CHECK((double(big.weight_bytes()) - big.mxfp4_load_extra_bytes()) / kGiB ==
        Approx(60.8).epsilon(0.002));
  const ModelSpec small = find_model("gpt-oss-20b");
  CHECK(double(small.total_params()) == Approx(20.91e9).epsilon(0.0005));
  CHECK(card_active(small) == Approx(3.61e9).epsilon(0.003));
  CHECK((double(small.weight_bytes()) - small.mxfp4_load_extra_bytes()) / kGiB ==
        Approx(12.8).epsilon(0.005));
  // One layer by hand: q, k, v, o with biases (2880 x (4096 + 2 x 512) + 4096 x 2880 + 4096 + 2 x
  // 512 + 2880) and 64 sink logits; an expert's gate/up and down with their biases (3 x 2880^2 +
  // 2 x 2880 + 2880); the router with its bias (2880 x 128 + 128).
  CHECK(big.attention_params_per_layer() == 26'550'144);
  CHECK(big.expert_params() == 24'891'840);
  CHECK(big.router_params() == 36 * 368'768);
  CHECK(big.quantization() == "mxfp4");
  CHECK(big.sliding_layers == 18);
  CHECK(big.kv_cache_layers_per_block() == 18);
  CHECK(small.kv_cache_layers_per_block() == 12);
}

TEST_CASE("memory plan: gpt-oss-120b on one H100 against vLLM's logs", "[memory][sliding]") {
  const ModelSpec m = find_model("gpt-oss-120b");
  // K and V of 8 heads of 64 in BF16 on 36 layers: 73,728 B a token; a block of 16 tokens holds
  // one group's 18 layers (vLLM's page of 32,768 B a layer).
  CHECK(m.kv_bytes_per_token_per_gpu(1) == 73'728);
  ServerShape server;
  server.engine = Engine::kV1;
  server.max_num_batched_tokens = 8192;
  server.max_num_seqs = 6;
  MemoryPlanOptions opt;
  opt.gpu_memory_utilization = 0.96;
  const MemoryPlan p = plan_memory(find_gpu("h100-sxm"), m, opt, server);
  CHECK(p.kv_bytes_per_block == 16 * 2048 * 18);
  // vLLM 0.14.1's Triton MXFP4 path on an H100: "Model loading took 64.38 GiB" (vllm issue
  // 33155); the plan's weights hold the rope cache too (131072 x 64 x 2 B).
  CHECK(p.weight_bytes / kGiB == Approx(64.38).epsilon(0.01));
  // vLLM 0.11.2 (blog.huikang.dev, 2025-12-28, max_model_len 98304): "Available KV cache memory:
  // 8.99 GiB", "GPU KV cache size: 130,960 tokens" (blocks / 2 groups x 16), "Maximum
  // concurrency for 98,304 tokens per request: 2.46x" (each holds 6144 full-attention blocks and
  // at most cdiv(127 + 8192, 16) + 1 = 521 window blocks).
  const double blocks = std::floor(8.99 * kGiB / double(p.kv_bytes_per_block));
  CHECK(std::abs(std::floor(blocks / 2) * 16 - 130'960) <= 80);  // 8.99 is rounded
  CHECK(sliding_window_max_blocks(128, 16, 8192, 98304) == 521);
  CHECK(blocks / (6144 + 521) == Approx(2.46).margin(0.005));
  // At vLLM's defaults (utilization 0.9, max_num_seqs 1024) there is no room for the KV cache:
  // vLLM 0.10.1 logged "Available KV cache memory: -2.14 GiB" with Marlin's 65.97 GiB of weights
  // (vllm issue 23278); the Triton path's 1.6 GiB less still leaves none.
  server.max_num_seqs = 1024;
  CHECK(error_field([&] { plan_memory(find_gpu("h100-sxm"), m, {}, server); }) == "model");
}

TEST_CASE("kv cache: a sliding-window group beside the full one, by hand", "[kv_cache][sliding]") {
  // Blocks of 4 tokens, a window of 8, 29 usable blocks, no prefix cache.
  KvCacheManager kv(30, 4, false, 100, nullptr, 2);
  kv.set_sliding_window(8, 64);
  SeqState s = prompt(20, 30);
  // A prompt of 20 in one chunk: 5 slots in each group, nothing before the window yet.
  REQUIRE(kv.allocate_slots(0, s, 20, 0, false));
  CHECK(kv.blocks_held(0) == 5);
  CHECK(kv.window_blocks_held(0) == 5);
  CHECK(kv.used_blocks() == 10);
  s.num_computed_tokens = 20;
  s.generated = 1;
  // Its first decode: token 20's window is tokens 13-20, so blocks 0-2 (tokens 0-11) are freed
  // (remove_skipped_blocks) before a sixth slot is added to each group.
  REQUIRE(kv.allocate_slots(0, s, 1, 0, false));
  CHECK(kv.blocks_held(0) == 6);
  CHECK(kv.window_blocks_held(0) == 3);
  CHECK(kv.used_blocks() == 9);
  // Decoding on, the window holds at most 8 / 4 + 1 blocks.
  for (int t = 21; t < 48; ++t) {
    s.num_computed_tokens = t;
    s.generated = t - 19;
    REQUIRE(kv.allocate_slots(0, s, 1, 0, false));
    CHECK(kv.window_blocks_held(0) <= 3);
  }
  CHECK(kv.blocks_held(0) == 12);
  CHECK(kv.used_blocks() == 12 + kv.window_blocks_held(0));
  // Freed, both groups go back: the pool is whole again.
  kv.free(0, s);
  CHECK(kv.used_blocks() == 0);
  CHECK(kv.free_blocks() == 29);
  // The admission gate counts at most sliding_window_max_blocks for the window: cdiv(7 + 64,
  // 4) + 1 = 19. A request of 80 tokens needs 20 full-attention blocks, which the 29 free would
  // hold, and 19 of the window besides: refused, changing nothing.
  CHECK(sliding_window_max_blocks(8, 4, 64, 100) == 19);
  CHECK(kv.peak_blocks_for(80) == 39);
  SeqState big = prompt(80, 1);
  CHECK_FALSE(kv.allocate_slots(1, big, 16, 0, /*full_sequence_must_fit=*/true));
  CHECK(kv.used_blocks() == 0);
  // Where the cap decides: a budget of 4 tokens caps the window at cdiv(7 + 4, 4) + 1 = 4
  // blocks, so a request of 40 tokens is admitted to a pool of 15 (10 + 4 blocks, not 10 + 10).
  KvCacheManager small(16, 4, false, 100, nullptr, 1);
  small.set_sliding_window(8, 4);
  CHECK(small.peak_blocks_for(40) == 14);
  SeqState mid = prompt(40, 1);
  CHECK(small.allocate_slots(0, mid, 4, 0, /*full_sequence_must_fit=*/true));
  CHECK(small.used_blocks() == 2);  // the first chunk's block in each group
}

TEST_CASE("kv cache: a prefix hit needs the window's blocks before it cached too, by hand",
          "[kv_cache][sliding]") {
  // Blocks of 4, a window of 8: a hit must end in cdiv(8 - 1, 4) = 2 cached window blocks.
  // Requests 0 and 1 share their first 3 blocks.
  GroupHasher h;
  h.shared = {{0, {7, 3}}, {1, {7, 3}}};
  {
    KvCacheManager kv(30, 4, true, 100, &h, 4);
    kv.set_sliding_window(8, 64);
    SeqState a = prompt(12, 1);
    REQUIRE(kv.get_computed_blocks(0, a) == 0);
    REQUIRE(kv.allocate_slots(0, a, 12, 0, false));  // 3 blocks a group, all full and cached
    kv.free(0, a);
    // B's 16 tokens begin with A's 12: the full layers hit 3 blocks, and the window's two before
    // the hit are cached, so the hit is 12 tokens. Token 12's window is tokens 5-12: B's window
    // slot 0 is null, slots 1-2 are A's blocks, slot 3 is new; its full group A's 3 and a new.
    SeqState b = prompt(16, 1);
    CHECK(kv.get_computed_blocks(1, b) == 12);
    REQUIRE(kv.allocate_slots(1, b, 4, 12, false));
    CHECK(kv.blocks_held(1) == 4);
    CHECK(kv.window_blocks_held(1) == 3);
    CHECK(kv.used_blocks() == 7);
  }
  {
    // The same, but a request of its own content (52 tokens: 13 blocks a group) first takes the
    // 23 never-used blocks and then A's window blocks, freed before A's full ones: the full
    // layers' 3 blocks are still cached, the window's are not, and B's hit is none.
    KvCacheManager kv(30, 4, true, 100, &h, 4);
    kv.set_sliding_window(8, 64);
    SeqState a = prompt(12, 1);
    REQUIRE(kv.get_computed_blocks(0, a) == 0);
    REQUIRE(kv.allocate_slots(0, a, 12, 0, false));
    kv.free(0, a);
    SeqState e = prompt(52, 1);
    REQUIRE(kv.get_computed_blocks(3, e) == 0);
    REQUIRE(kv.allocate_slots(3, e, 52, 0, false));
    CHECK(kv.stats().evictions == 3);
    CHECK(kv.cached_prefix_blocks(h, 1, 16) == 3);  // the full layers' blocks are there
    SeqState b = prompt(16, 1);
    CHECK(kv.get_computed_blocks(1, b) == 0);
  }
}

TEST_CASE("memory plan: gpt-oss's KV groups per pipeline stage and its experts under EP",
          "[memory][sliding]") {
  const ModelSpec m = find_model("gpt-oss-120b");
  // vLLM groups each stage's own layers: at PP4 a stage of 9 layers has 5 of one kind and 4 of
  // the other, so a block holds 5 layers (within 1.5 times: the larger count), not 4.5.
  CHECK(m.kv_cache_layers_per_block(0, 9) == 5);  // layers 0-8: 5 sliding, 4 full
  CHECK(m.kv_cache_layers_per_block(9, 9) == 5);  // layers 9-17: 4 sliding, 5 full
  CHECK(m.kv_cache_layers_per_block(0, 1) == 1);  // one kind alone: one group
  CHECK(m.kv_cache_layers_per_block(0, 36) == 18);
  ServerShape server;
  server.engine = Engine::kV1;
  server.pp = 4;
  server.max_num_batched_tokens = 8192;
  server.max_num_seqs = 256;
  CHECK(plan_memory(find_gpu("h100-sxm"), m, {}, server).kv_bytes_per_block == 16 * 2048 * 5);
  // Under expert parallelism the MXFP4 load extra goes with the experts: a GPU of EP8 holds 16
  // of the 128 experts' weights and their share of it.
  const double extra = m.mxfp4_load_extra_bytes();
  CHECK(extra > 3 * kGiB);
  CHECK(m.routed_expert_bytes() ==
        Approx(double(m.moe_layers()) * m.num_experts * m.expert_bytes() + extra));
  CHECK(m.ep_weight_bytes_per_gpu(1, 8) ==
        Approx(double(m.weight_bytes()) - m.routed_expert_bytes() * (1 - 16.0 / 128)));
}

TEST_CASE("roofline: sliding-window layers attend to the window alone, by hand",
          "[cost][sliding]") {
  const ModelSpec sliding = find_model("gpt-oss-120b");
  ModelSpec full = sliding;
  full.sliding_layers = 0;
  full.sliding_window = 0;
  const GpuSpec gpu = find_gpu("h100-sxm");
  const HardwareParams hw = hardware_params(gpu.arch);
  const EngineParams engine = engine_params(Engine::kV1);
  const RooflineCostModel a(gpu, sliding, 1, hw, engine), b(gpu, full, 1, hw, engine);
  // One decode at a context of 10,000: a full layer reads 10,001 tokens' K and V and scores
  // 10,001 pairs; a sliding one reads the 127 before and the new token, and scores 128. Half the
  // layers slide.
  const std::vector<SeqShape> decode = {{1, 10000, false, true}};
  const StepCost ca = a.cost(decode), cb = b.cost(decode);
  CHECK(cb.bytes - ca.bytes == Approx(73728.0 * 0.5 * (10001 - 128)));
  CHECK(cb.flops - ca.flops == Approx(4.0 * 4096 * 36 * 0.5 * (10001 - 128)));
  CHECK(ca.attention_s < cb.attention_s);
  // A prefill chunk of 300 after 100 cached tokens: token p scores min(p + 1, 128) pairs,
  // 28 x 128 ... by the closed form: (101 + 128) x 28 / 2 + (400 - 128) x 128 = 38,022 against
  // 300 x 100 + 300 x 301 / 2 = 75,150; it reads 100 + 300 tokens against 127 capped at 100.
  const std::vector<SeqShape> chunk = {{300, 100, true, true}};
  const StepCost pa = a.cost(chunk), pb = b.cost(chunk);
  CHECK(pb.flops - pa.flops == Approx(4.0 * 4096 * 36 * 0.5 * (75150 - 38022)));
  CHECK(pb.bytes == Approx(pa.bytes));  // the window holds all 100 cached tokens
  // Below the window the two models are the same step.
  const std::vector<SeqShape> short_decode = {{1, 50, false, true}};
  CHECK(a.cost(short_decode).seconds == Approx(b.cost(short_decode).seconds));
}

TEST_CASE("gpt-oss: what servesim refuses with sliding-window layers", "[cli][sliding]") {
  const std::vector<std::string> base = {
      "run", "--model",     "gpt-oss-20b", "--gpu",        "h100-sxm", "--num-requests",
      "4",   "--input-len", "fixed:64",    "--output-len", "fixed:8",  "--max-model-len",
      "4096"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  refused(with({"--scheduler", "vllm-v0"}), "sliding-window layers");
  refused(with({"--scheduler", "chunked"}), "sliding-window layers");
  refused(with({"--speculative-config", "{\"method\": \"ngram\", \"num_speculative_tokens\": 2}",
                "--spec-acceptance-rate", "0.5"}),
          "sliding-window layers");
  refused(with({"--kv-offloading-size", "1"}), "sliding-window layers");
  refused(with({"--prefill-replicas", "1", "--decode-replicas", "1"}), "disaggregated");
  refused(with({"--quantization", "fp8"}), "mxfp4 checkpoint");
  // gpt-oss-120b on one H100 with the flags vLLM's recipe gives (0.95, a budget of 1024): 3.28
  // GiB of KV, whose 5,963 blocks less a request's 73 of the window hold 94,240 tokens, under
  // the default max_model_len (vLLM refused it too: vllm issue 27508).
  refused({"run", "--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--num-requests", "4",
           "--gpu-memory-utilization", "0.95", "--max-num-batched-tokens", "1024"},
          "(94240: 5963 blocks of 16 on h100-sxm at TP1, 3.28 GiB per GPU)");
  // And it runs on vllm-v1, its approximations named.
  const CliResult ok = call_cli(with({"--enable-prefix-caching"}));
  INFO(ok.err);
  REQUIRE(ok.code == 0);
  CHECK(ok.out.find("sliding-window prefix cache") == std::string::npos);
  CHECK_THAT(ok.out, Catch::Contains("behaviour: MXFP4 experts"));
}

TEST_CASE("model file: sliding-window, sink, bias and mxfp4 keys, and what they refuse",
          "[models][cli][sliding]") {
  const auto dir = scratch("sliding-model-file");
  const std::string head =
      "name = my-oss\nnum_hidden_layers = 24\nhidden_size = 2880\nnum_attention_heads = 64\n"
      "num_key_value_heads = 8\nhead_dim = 64\nintermediate_size = 2880\nvocab_size = 201088\n"
      "max_position_embeddings = 131072\nnum_local_experts = 32\nnum_experts_per_tok = 4\n"
      "qkv_bias = true\n";
  const std::string oss = head +
                          "o_bias = true\nattention_sinks = true\nmoe_bias = true\n"
                          "sliding_window = 128\nsliding_layers = 12\nquantization = mxfp4\n";
  write(dir / "oss.ini", oss);
  const ModelSpec m = load_model_file((dir / "oss.ini").string());
  const ModelSpec card = find_model("gpt-oss-20b");
  CHECK(m.total_params() == card.total_params());
  CHECK(m.weight_bytes() == card.weight_bytes());
  CHECK(m.kv_cache_layers_per_block() == 12);
  // A window without its layers, layers without a window, every layer sliding, a layout of
  // more than one group of a kind, and MXFP4 or expert biases on a dense model.
  auto field_of = [&](const std::string& name, const std::string& text) {
    write(dir / name, text);
    return error_field([&] { load_model_file((dir / name).string()); });
  };
  CHECK(field_of("a.ini", head + "sliding_window = 128\n") == "sliding_window");
  CHECK(field_of("b.ini", head + "sliding_layers = 12\n") == "sliding_layers");
  CHECK(field_of("c.ini", head + "sliding_window = 128\nsliding_layers = 24\n") ==
        "sliding_layers");
  CHECK(field_of("d.ini", head + "sliding_window = 128\nsliding_layers = 20\n") ==
        "sliding_layers");
  CHECK(field_of("e.ini", head + "sliding_window = -1\nsliding_layers = 12\n") == "sliding_window");
  // Not alternating from layer 0.
  CHECK(field_of("i.ini", head + "sliding_window = 128\nsliding_layers = 11\n") ==
        "sliding_layers");
  const std::string dense =
      "name = d\nnum_hidden_layers = 2\nhidden_size = 64\nnum_attention_heads = 4\n"
      "intermediate_size = 128\nvocab_size = 100\nmax_position_embeddings = 512\n";
  CHECK(field_of("f.ini", dense + "quantization = mxfp4\n") == "quantization");
  CHECK(field_of("g.ini", dense + "moe_bias = true\n") == "moe_bias");
  CHECK(field_of("h.ini", dense + "quantization = int4\n") == "quantization");
}
