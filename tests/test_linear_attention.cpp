// Hybrid models (issue 47): Qwen3-Next's Gated DeltaNet linear-attention layers beside its
// full-attention ones. The catalogue against the model's parameter counts, the attention block
// size and KV cache against vLLM's own logs, vLLM's hybrid KV cache manager's state blocks worked
// by hand, the linear layers' work in the roofline by hand, and what servesim refuses with them.
// scripts/oracle-v1-random.py --hybrid checks the KV cache manager against vLLM's own step by step
// (ctest oracle.v1_hybrid_random_cases).
#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"
#include "models/memory_plan.hpp"
#include "models/model.hpp"
#include "models/roofline.hpp"
#include "scheduler/kv_cache_manager.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::error_field;
using servesim::test::prompt;
using servesim::test::refused;
using servesim::test::scratch;
using servesim::test::write;

namespace {
constexpr double kGiB = 1024.0 * 1024 * 1024;
}  // namespace

TEST_CASE("catalogue: Qwen3-Next-80B-A3B's parameters", "[models][linear]") {
  const ModelSpec m = find_model("Qwen/Qwen3-Next-80B-A3B-Instruct");
  CHECK(m.name == "qwen3-next-80b-a3b");
  // The model card: 80 B parameters, 3 B activated. The checkpoint's tensors (the multi-token
  // prediction layer left out, as vLLM loads it only as a drafter) sum to 79,674,391,296, and
  // those a token passes through (10 routed experts and the shared one) to 3,874,929,408.
  CHECK(m.total_params() == 79'674'391'296);
  CHECK(m.active_params() == 3'874'929'408);
  CHECK(m.full_attention_layers() == 12);
  CHECK(m.linear_attention_layers() == 36);
  // A Gated DeltaNet layer by hand: in_proj_qkvz 2048 x (2 x 2048 + 2 x 4096), in_proj_ba 2048 x
  // 64, conv1d 8192 x 4, A_log and dt_bias 32 each, the gated norm 128, out_proj 4096 x 2048.
  CHECK(m.linear_attention_params_per_layer() ==
        2048LL * 12288 + 2048 * 64 + 8192 * 4 + 64 + 128 + 4096LL * 2048);
  // A gated full-attention layer: q_proj with its gate 2048 x 2 x 4096, k and v 2048 x 512, o
  // 4096 x 2048, q_norm and k_norm 256 each.
  CHECK(m.attention_params_per_layer() == 2048LL * (8192 + 1024) + 4096LL * 2048 + 512);
  // The shared expert's gate (2048 -> 1) rides with the router (2048 x 512), every layer.
  CHECK(m.router_params() == 48 * (2048LL * 512 + 2048));
  // Only the full-attention layers hold KV a token: 12 x 2 x 2 heads x 256 x 2 B.
  CHECK(m.kv_bytes_per_token_per_gpu(1) == 24'576);
}

TEST_CASE("memory plan: Qwen3-Next's attention block size and KV groups against vLLM's logs",
          "[memory][linear]") {
  ModelSpec m = find_model("qwen3-next-80b-a3b");
  // A linear layer's state on one GPU of TP2, in BF16: the convolution's last 3 inputs of q, k
  // and v (3 x 8192 / 2) and 16 value heads of 128 x 128.
  CHECK(m.linear_state_bytes_per_layer(2) == (3 * 4096 + 16 * 128 * 128) * 2);
  CHECK(m.linear_state_bytes_per_layer(1) == 1'097'728);
  // vLLM 0.10.2 on two H200 (TP2, BF16): "Setting attention block size to 544 tokens" and
  // "Padding mamba page size by 1.49%": a page of 544 tokens x 1,024 B (one KV head a GPU)
  // against the state's 548,864 B.
  CHECK(m.hybrid_block_size(2) == 544);
  CHECK(544.0 * 1024 / double(m.linear_state_bytes_per_layer(2)) - 1 ==
        Approx(0.0149).margin(5e-5));
  CHECK(m.hybrid_block_size(1) == 544);
  CHECK(m.hybrid_block_size(4) == 272);  // 8 value heads a GPU, KV heads replicated: by hand
  // 12 full and 36 linear layers make 4 groups of 12 (one full, three of state), a block of the
  // pool holding one group's 12 layers.
  CHECK(m.kv_cache_layers_per_block() == 12);
  CHECK(m.kv_cache_state_groups() == 3);
  ServerShape server;
  server.tp = 2;
  server.engine = Engine::kV1;
  server.block_size = 544;
  server.max_num_batched_tokens = 8192;
  server.max_num_seqs = 1024;
  const MemoryPlan p = plan_memory(find_gpu("h200"), m, {}, server);
  CHECK(p.kv_bytes_per_block == 544 * 1024 * 12);
  // "Model loading took 74.2812 GiB"; the plan's weights hold the rope cache too (262,144
  // positions x 64 rotary dimensions: partial_rotary_factor 0.25).
  CHECK(p.weight_bytes / kGiB == Approx(74.2812).epsilon(0.002));
  // "Available KV cache memory: 44.59 GiB", "num_gpu_blocks is: 7162", "GPU KV cache size:
  // 973,760 tokens" (blocks / 4 groups x the block) and "Maximum concurrency for 262,144 tokens
  // per request: 14.77x" (a request's peak: its full-attention blocks and its state blocks).
  const int64_t block = m.hybrid_block_size(2);
  const int64_t blocks = int64_t(std::floor(44.59 * kGiB / double(p.kv_bytes_per_block)));
  CHECK(std::abs(blocks - 7162) <= 1);  // 44.59 is rounded
  const int groups = 1 + m.kv_cache_state_groups();
  CHECK(7162 / groups * block == 973'760);
  KvCacheManager pool(7162 + 1, int(block), false, 262'144, nullptr, 1);
  pool.set_state_groups(m.kv_cache_state_groups());
  CHECK(7162.0 / double(pool.peak_blocks_for(262'144)) == Approx(14.77).margin(0.005));
  // servesim's own KV memory is 4.2% above that log's (46.46 GiB): vLLM 0.10.2's profile run of
  // this model peaks higher than servesim's v0.15.1 profile constants, fitted on dense models,
  // say. Held within 5%.
  CHECK(p.kv_cache_bytes / kGiB == Approx(44.59).epsilon(0.05));
  // On Blackwell, FlashInfer has no blocks of 16 for heads of 256 (flashinfer issue 1993): vLLM
  // rounds to 32 (HybridAttentionMambaModelConfig, v0.11 on), 288 tokens at TP4 against 272
  // elsewhere; at TP2 both are 544.
  CHECK(m.hybrid_block_size(4, 32) == 288);
  CHECK(m.hybrid_block_size(8, 32) == 160);
  CHECK(m.hybrid_block_size(8) == 144);
  CHECK(m.hybrid_block_size(2, 32) == 544);
  // vLLM 0.13.0 on two L40S with --kv-cache-dtype fp8: "Setting attention block size to 1072
  // tokens" and no padding (1072 x 512 B is the state's 548,864 B exactly).
  apply_serving_dtypes(m, "", "fp8");
  CHECK(m.hybrid_block_size(2) == 1072);
  CHECK(1072 * 512 == m.linear_state_bytes_per_layer(2));
}

TEST_CASE("kv cache: a state block a group beside the full-attention blocks, by hand",
          "[kv_cache][linear]") {
  // Blocks of 4 tokens, 20 usable blocks, 3 state groups, no prefix cache.
  KvCacheManager kv(21, 4, false, 100, nullptr, 3);
  kv.set_state_groups(3);
  CHECK(kv.peak_blocks_for(40) == 13);
  SeqState a = prompt(10, 30);
  // A prompt of 10: 3 full-attention blocks and a state block in each group.
  REQUIRE(kv.allocate_slots(0, a, 10, 0, false));
  CHECK(kv.blocks_held(0) == 3);
  CHECK(kv.used_blocks() == 6);
  // Its decodes: tokens 10 and 11 fit its third block; token 12 takes a fourth, no more state.
  a.num_computed_tokens = 10;
  a.generated = 1;
  REQUIRE(kv.allocate_slots(0, a, 1, 0, false));
  a.num_computed_tokens = 11;
  a.generated = 2;
  REQUIRE(kv.allocate_slots(0, a, 1, 0, false));
  CHECK(kv.used_blocks() == 6);
  a.num_computed_tokens = 12;
  a.generated = 3;
  REQUIRE(kv.allocate_slots(0, a, 1, 0, false));
  CHECK(kv.used_blocks() == 7);
  // The admission gate counts the state blocks: 44 tokens need 11 + 3 of the 13 free, refused,
  // changing nothing; 40 need 10 + 3, admitted, its first chunk taking 1 + 3.
  SeqState big = prompt(44, 1);
  CHECK_FALSE(kv.allocate_slots(1, big, 4, 0, /*full_sequence_must_fit=*/true));
  CHECK(kv.used_blocks() == 7);
  SeqState fits = prompt(40, 1);
  REQUIRE(kv.allocate_slots(2, fits, 4, 0, /*full_sequence_must_fit=*/true));
  CHECK(kv.used_blocks() == 11);
  // Without the gate, a chunk that needs more than the free blocks is refused too, state
  // included: 9 free, a new request's chunk of 28 tokens needs 7 + 3 (request 1, refused above,
  // holds nothing).
  SeqState late = prompt(28, 1);
  CHECK_FALSE(kv.allocate_slots(1, late, 28, 0, false));
  CHECK(kv.used_blocks() == 11);
  CHECK(kv.allocate_slots(1, late, 24, 0, false));  // 6 + 3
  CHECK(kv.used_blocks() == 20);
  kv.free(1, late);
  // Preempted, A gives its state back with its blocks; re-admitted, it takes it again.
  kv.free(0, a, /*preempted=*/true);
  CHECK(kv.used_blocks() == 4);
  SeqState again = prompt(13, 30);
  REQUIRE(kv.allocate_slots(0, again, 13, 0, true));
  CHECK(kv.used_blocks() == 4 + 4 + 3);
  // Freed, every group's blocks go back.
  kv.free(0, again);
  kv.free(2, fits);
  CHECK(kv.free_blocks() == 20);
}

TEST_CASE("roofline: linear layers keep a state, not KV a token, by hand", "[cost][linear]") {
  const ModelSpec m = find_model("qwen3-next-80b-a3b");
  const GpuSpec gpu = find_gpu("h100-sxm");
  const RooflineCostModel c(gpu, m, 1, hardware_params(gpu.arch), engine_params(Engine::kV1));
  // A decode at a context of 1,000 reads the 12 full layers' K and V of 1,000 more tokens than one
  // at a context of 0: 24,576 B a token. Its pairs are scored in those 12 layers alone.
  const std::vector<SeqShape> deep = {{1, 1000, false, true}}, shallow = {{1, 0, false, true}};
  CHECK(c.cost(deep).bytes - c.cost(shallow).bytes == Approx(24'576.0 * 1000));
  CHECK(c.cost(deep).flops - c.cost(shallow).flops == Approx(4.0 * 4096 * 12 * 1000));
  // Two prefill chunks of 8 against one of 16, none emitting: the same tokens through the same
  // layers; one more sequence's state read and written in the 36 linear layers (2 x 1,097,728 B
  // each), and 8 x 8 fewer pairs scored in the 12 full ones.
  const std::vector<SeqShape> two = {{8, 0, true, false}, {8, 0, true, false}},
                              one = {{16, 0, true, false}};
  CHECK(c.cost(two).bytes - c.cost(one).bytes == Approx(2.0 * 1'097'728 * 36));
  CHECK(c.cost(one).flops - c.cost(two).flops == Approx(4.0 * 4096 * 12 * 64));
  // Two decodes against one, none emitting, at a context of 0: one more token through every
  // layer, and one more state in and out. What a token adds besides (its GEMMs, norms, K and
  // V) is the difference of two decodes' and one's at the same shapes as a prefill token's.
  const std::vector<SeqShape> d2 = {{1, 0, false, false}, {1, 0, false, false}},
                              d1 = {{1, 0, false, false}};
  const std::vector<SeqShape> p2 = {{2, 0, true, false}}, p1 = {{1, 0, true, false}};
  const double state = 2.0 * 1'097'728 * 36;
  CHECK((c.cost(d2).bytes - c.cost(d1).bytes) - (c.cost(p2).bytes - c.cost(p1).bytes) ==
        Approx(state));
  // The recurrence's FLOPs a decoded token: the convolution over q, k and v (2 x 8,192 x 4) and
  // 6 x 128 x 128 a value head, in 36 layers, beside its GEMMs (twice the parameters it passes
  // through) and its one pair in the 12 full layers. A prefill token adds the chunk's products
  // (2 x 64 x 32 x (128 + 128) a layer); the second prefill token scores two pairs.
  const double recurrence = (2.0 * 8192 * 4 + 6.0 * 32 * 128 * 128) * 36;
  const double pair = 4.0 * 4096 * 12;
  const double gemms = 2.0 * double(m.active_linear_params());
  CHECK(c.cost(d2).flops - c.cost(d1).flops == Approx(gemms + pair + recurrence));
  CHECK(c.cost(p2).flops - c.cost(p1).flops ==
        Approx(gemms + 2 * pair + recurrence + 2.0 * 64 * 32 * 256 * 36));
}

TEST_CASE("qwen3-next: the prefix cache off by default, the block size raised, what is refused",
          "[cli][linear]") {
  const std::vector<std::string> base = {"run",
                                         "--model",
                                         "qwen3-next-80b-a3b",
                                         "--gpu",
                                         "h200",
                                         "--tp",
                                         "2",
                                         "--num-requests",
                                         "4",
                                         "--input-len",
                                         "fixed:64",
                                         "--output-len",
                                         "fixed:8",
                                         "--max-model-len",
                                         "8192"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  refused(with({"--enable-prefix-caching"}), "linear-attention layers");
  refused(with({"--scheduler", "vllm-v0"}), "linear-attention layers");
  refused(with({"--speculative-config", "{\"method\": \"ngram\", \"num_speculative_tokens\": 2}",
                "--spec-acceptance-rate", "0.5"}),
          "linear-attention layers");
  refused(with({"--kv-offloading-size", "1"}), "linear-attention layers");
  refused(with({"--pp", "2"}), "linear-attention layers");
  refused(with({"--prefill-replicas", "1", "--decode-replicas", "1"}), "disaggregated");
  refused(with({"--enable-lora"}), "linear-attention layers");
  refused(with({"--cost-model", "table"}), "linear-attention layers");
  // A draft model of its own groups (linear or sliding-window layers) beside the target's.
  refused(
      {"run", "--model", "qwen3-235b-a22b", "--gpu", "h200", "--tp", "8", "--num-requests", "4",
       "--speculative-config",
       R"({"method": "draft_model", "model": "qwen3-next-80b-a3b", "num_speculative_tokens": 2})",
       "--spec-acceptance-rate", "0.5"},
      "linear-attention layers (qwen3-next-80b-a3b) is not modelled");
  refused({"run", "--model", "gpt-oss-120b", "--gpu", "h200", "--num-requests", "4",
           "--speculative-config",
           R"({"method": "draft_model", "model": "gpt-oss-20b", "num_speculative_tokens": 2})",
           "--spec-acceptance-rate", "0.5"},
          "sliding-window layers (gpt-oss-20b) is not modelled");
  // vLLM's default off, the block size 544 whatever --block-size says, both recorded.
  const auto dir = scratch("linear-cli");
  const std::string json = (dir / "r.json").string();
  const CliResult ok = call_cli(with({"--block-size", "16", "--json", json}));
  INFO(ok.err);
  REQUIRE(ok.code == 0);
  CHECK_THAT(ok.out, Catch::Contains("blocks of 544 tokens"));
  CHECK_THAT(ok.out, Catch::Contains("behaviour: linear attention"));
  const nlohmann::json r = nlohmann::json::parse(servesim::test::slurp(json));
  CHECK(r["config"]["block_size"] == 544);
  CHECK(r["config"]["enable_prefix_caching"] == false);
}

TEST_CASE("model file: linear-attention keys, and what they refuse", "[models][cli][linear]") {
  const auto dir = scratch("linear-model-file");
  const std::string head =
      "name = my-next\nnum_hidden_layers = 48\nhidden_size = 2048\nnum_attention_heads = 16\n"
      "num_key_value_heads = 2\nhead_dim = 256\nintermediate_size = 512\nvocab_size = 151936\n"
      "max_position_embeddings = 262144\nnum_local_experts = 512\nnum_experts_per_tok = 10\n"
      "shared_expert_intermediate_size = 512\nshared_expert_gate = true\n"
      "attn_output_gate = true\nqk_norm = true\n";
  auto widths_of = [](int value_heads) {
    return "linear_num_key_heads = 16\nlinear_num_value_heads = " + std::to_string(value_heads) +
           "\nlinear_key_head_dim = 128\nlinear_value_head_dim = 128\nlinear_conv_kernel_dim = 4\n";
  };
  const std::string widths = widths_of(32);
  write(dir / "next.ini", head + "full_attention_interval = 4\n" + widths);
  const ModelSpec m = load_model_file((dir / "next.ini").string());
  const ModelSpec card = find_model("qwen3-next-80b-a3b");
  CHECK(m.total_params() == card.total_params());
  CHECK(m.hybrid_block_size(1) == card.hybrid_block_size(1));
  CHECK(m.kv_cache_state_groups() == 3);
  auto field_of = [&](const std::string& name, const std::string& text) {
    write(dir / name, text);
    return error_field([&] { load_model_file((dir / name).string()); });
  };
  // Widths without the interval, the interval without widths, every layer full, value heads
  // that do not group over the key heads, and a linear layer beside a sliding window.
  CHECK(field_of("a.ini", head + widths) == "linear_num_key_heads");
  CHECK(field_of("b.ini", head + "full_attention_interval = 4\n") == "linear_num_key_heads");
  CHECK(field_of("c.ini", head + "full_attention_interval = 1\n" + widths) ==
        "full_attention_interval");
  CHECK(field_of("d.ini", head + "full_attention_interval = 4\n" + widths_of(24)) ==
        "linear_num_value_heads");
  CHECK(field_of("e.ini", head + "full_attention_interval = 99\n" + widths) ==
        "full_attention_interval");
  CHECK(field_of("f.ini", head + "full_attention_interval = 4\n" + widths +
                              "sliding_window = 128\nsliding_layers = 24\n") != "");
  CHECK(field_of("g.ini", head + "full_attention_interval = 4\n" + widths +
                              "partial_rotary_factor = 0\n") == "partial_rotary_factor");
  // Its linear heads must divide over the TP group as its attention heads do: 2 key heads at
  // TP4 do not (vLLM's Gated DeltaNet splits them).
  write(dir / "two.ini", head +
                             "full_attention_interval = 4\nlinear_num_key_heads = 2\n"
                             "linear_num_value_heads = 4\nlinear_key_head_dim = 128\n"
                             "linear_value_head_dim = 128\nlinear_conv_kernel_dim = 4\n");
  refused({"run", "--model-file", (dir / "two.ini").string(), "--gpu", "h200", "--tp", "4",
           "--num-requests", "4"},
          "linear-attention heads");
}
