// Model families beyond dense GQA and deployments beyond one node (issue 47): multi-head latent
// attention (DeepSeek-V3/R1, Kimi-K2) and MoE models whose layers mix dense and routed MLPs (Llama
// 4 Maverick), with their parameter counts against the model cards, KV bytes against vLLM's own
// computation, a memory plan and an MLA step worked by hand, the model file's new keys, good and
// hostile; and TP groups that span nodes.
#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/drafter.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"
#include "models/memory_plan.hpp"
#include "models/model.hpp"
#include "models/roofline.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::error_field;
using servesim::test::ideal_params;
using servesim::test::scratch;
using servesim::test::slow_gpu;
using servesim::test::write;

namespace {

// tiny_model's widths in one layer, MLA over its two heads, no q latent: q_proj 8 x 2 x (2 + 2)
// = 64, kv_a 8 x (4 + 2) = 48, kv_b 4 x 2 x (2 + 2) = 32, o 2 x 2 x 8 = 32: 176 attention
// parameters.
ModelSpec tiny_mla() {
  ModelSpec m = servesim::test::tiny_model();
  m.name = "tiny-mla";
  m.num_layers = 1;
  m.num_kv_heads = 2;
  m.kv_lora_rank = 4;
  m.qk_nope_head_dim = 2;
  m.qk_rope_head_dim = 2;
  m.v_head_dim = 2;
  return m;
}

}  // namespace

TEST_CASE("catalogue: MLA and large MoE models against their model cards", "[cost][models]") {
  // Totals and active parameters as the model cards round them (DeepSeek-V3 technical report:
  // 671 B, 37 B activated; Qwen3-235B-A22B; Qwen3-30B-A3B, 30.5 B and 3.3 B; Llama 4 Maverick 400
  // B, 17 B active; Kimi K2's card "1T" and "32B activated"): totals within 1%, active counts
  // (given to two digits) within 2%, Kimi's (one digit) within 3%. The cards' active counts leave
  // out the input embedding, a lookup; ours count it (DeepSeek-V3: 37.55 B, 36.63 B without it).
  struct Card {
    const char* id;
    double total_b, active_b, total_tolerance, active_tolerance;
  };
  for (const Card& c : {Card{"deepseek-ai/DeepSeek-V3", 671, 37, 0.01, 0.02},
                        Card{"deepseek-ai/DeepSeek-R1", 671, 37, 0.01, 0.02},
                        Card{"Qwen/Qwen3-235B-A22B", 235, 22, 0.01, 0.02},
                        Card{"Qwen/Qwen3-30B-A3B", 30.5, 3.3, 0.01, 0.02},
                        Card{"meta-llama/Llama-4-Maverick-17B-128E-Instruct", 400, 17, 0.01, 0.02},
                        Card{"moonshotai/Kimi-K2-Instruct", 1000, 32, 0.03, 0.03}}) {
    INFO(c.id);
    const ModelSpec m = find_model(c.id);
    CHECK(double(m.total_params()) == Approx(c.total_b * 1e9).epsilon(c.total_tolerance));
    CHECK(double(m.active_params()) == Approx(c.active_b * 1e9).epsilon(c.active_tolerance));
  }
  // DeepSeek-V3 by hand: MLA 7168 x 1536 + 1536 x 128 x 192 + 7168 x 576 + 512 x 128 x 256 +
  // 128 x 128 x 7168 a layer; 58 MoE layers of 257 experts of 3 x 7168 x 2048 and a router of
  // 7168 x 256; 3 dense layers of 3 x 7168 x 18432; norms 2 x 7168 + 1536 + 512 a layer; the
  // embedding and the LM head 129280 x 7168 each; the final norm.
  const ModelSpec v3 = find_model("deepseek-v3");
  CHECK(v3.attention_params_per_layer() == 187'105'280);
  CHECK(v3.moe_layers() == 58);
  CHECK(v3.total_params() == 61LL * 187'105'280 + 58LL * 257 * 44'040'192 + 58LL * 7168 * 256 +
                                 3LL * 396'361'728 + 61LL * (2 * 7168 + 2048) +
                                 2LL * 129280 * 7168 + 7168);
  // Active: 8 routed and the shared expert in the MoE layers.
  CHECK(v3.total_params() - v3.active_params() == 58LL * 248 * 44'040'192);
  // FP8 but the routers, norms, embedding and LM head.
  CHECK(v3.quantization() == "fp8");
  // R1 is V3's architecture under its own id.
  CHECK(find_model("deepseek-ai/DeepSeek-R1").hf_id == "deepseek-ai/DeepSeek-R1");
  CHECK(find_model("deepseek-r1").mla());
}

TEST_CASE("catalogue: KV bytes per token as vLLM computes them", "[cost][models][memory]") {
  // MLA (vLLM MLAAttentionSpec): one latent of kv_lora_rank + qk_rope_head_dim = 576 a layer, no
  // separate V, the same on every GPU of a TP group: 61 x 576 x 2 B.
  const ModelSpec v3 = find_model("deepseek-v3");
  CHECK(v3.kv_bytes_per_token_per_gpu(1) == 61 * 576 * 2);
  CHECK(v3.kv_bytes_per_token_per_gpu(8) == 61 * 576 * 2);
  ModelSpec fp8 = v3;
  apply_serving_dtypes(fp8, "", "fp8");
  CHECK(fp8.kv_bytes_per_token_per_gpu(8) == 61 * 576);
  CHECK(find_model("kimi-k2").kv_bytes_per_token_per_gpu(4) == 61 * 576 * 2);
  // GQA (FullAttentionSpec): K and V of the KV heads on each GPU, replicated below one a GPU.
  const ModelSpec qwen = find_model("qwen3-235b-a22b");
  CHECK(qwen.kv_bytes_per_token_per_gpu(4) == 2 * 94 * 1 * 128 * 2);
  CHECK(qwen.kv_bytes_per_token_per_gpu(8) == 2 * 94 * 1 * 128 * 2);
  CHECK(qwen.kv_bytes_per_token_per_gpu(2) == 2 * 94 * 2 * 128 * 2);
  CHECK(find_model("llama-4-maverick-17b-128e").kv_bytes_per_token_per_gpu(8) == 2 * 48 * 128 * 2);
}

TEST_CASE("memory plan: DeepSeek-V3 on eight H200 at TP8, vLLM V1's formula by hand",
          "[cost][memory][models]") {
  const ModelSpec m = find_model("deepseek-v3");
  // Weights: linear layers in FP8 (61 x 187,105,280 attention + 58 x 257 x 44,040,192 experts
  // + 3 x 396,361,728 dense MLPs), the rest in BF16 (routers 58 x 7168 x 256, norms, embedding
  // and LM head, final norm): 672,987,199,488 bytes.
  CHECK(m.weight_bytes() == 672'987'199'488);
  // MLA's down projections (q_a, kv_a: 7168 x (1536 + 512 + 64) a layer, FP8) are whole on every
  // GPU (ReplicatedLinear); the rest is split 8 ways.
  const double replicated = 61.0 * 7168 * 2112;
  CHECK(m.weight_bytes_per_gpu(8) == Approx((672'987'199'488 - replicated) / 8 + replicated));
  ServerShape server;
  server.engine = Engine::kV1;
  server.tp = 8;
  server.max_num_batched_tokens = 8192;
  server.max_num_seqs = 1024;
  const MemoryPlan p = plan_memory(find_gpu("h200-sxm"), m, {}, server);
  // + the rope cache, 163840 positions x 64 rope dims x 2 B.
  const double weights = (672'987'199'488 - replicated) / 8 + replicated + 163840.0 * 64 * 2;
  CHECK(p.weight_bytes == Approx(weights));
  // The sampler's peak over min(8192, 1024) rows of 129,280 logits and the hidden states.
  const double act = 38.0 * 1024 * 129280 + 4.0 * 8192 * 7168;
  CHECK(p.activation_bytes == Approx(act));
  const double usable = std::ceil(141.0 * 1024 * 1024 * 1024 * 0.9);
  const double kv = usable - weights - act - 0.64 * 1024 * 1024 * 1024;
  CHECK(p.kv_bytes_per_block == 16 * 61 * 576 * 2);
  CHECK(p.num_gpu_blocks == int64_t(std::floor(kv / (16.0 * 61 * 576 * 2))));
  CHECK(p.num_gpu_blocks == 40336);  // 645,376 tokens
  // Eight H100s (79.2 GiB each) cannot hold 79 GiB of weights a GPU at 0.9 utilization.
  CHECK(error_field([&] { plan_memory(find_gpu("h100-sxm"), m, {}, server); }) == "model");
}

TEST_CASE("roofline: MLA attention by hand, prefill up-projected and decode in the latent",
          "[cost][models]") {
  const ModelSpec m = tiny_mla();
  CHECK(m.attention_params_per_layer() == 176);
  CHECK(m.replicated_attention_params_per_layer() == 8 * (0 + 4 + 2));
  CHECK(m.kv_bytes_per_token_per_gpu(1) == (4 + 2) * 2);
  CHECK(m.kv_bytes_per_token_per_gpu(2) == (4 + 2) * 2);
  const RooflineCostModel model(slow_gpu(), m, 1, ideal_params());
  // A decode at context 10 (11 pairs): linear 2 x (176 + 384); attention in the latent,
  // 2 heads x 2 x (2 x 4 + 2) FLOPs a pair; LM head 2 x 32 x 8.
  const SeqShape decode{1, 10, false, true};
  CHECK(model.cost(std::span(&decode, 1)).flops == Approx(2 * 560 + 11 * 40 + 512));
  // A prefill of 4 tokens after 6 cached (34 pairs): 2 heads x 2 x (2 + 2 + 2) FLOPs a pair, and
  // the 6 cached latents up-projected, 2 x 4 x 2 x (2 + 2) FLOPs each (the 4 new tokens' are
  // kv_b_proj's, in the linear FLOPs); nothing emitted.
  const SeqShape chunk{4, 6, true, false};
  CHECK(model.cost(std::span(&chunk, 1)).flops == Approx(4 * 2 * 560 + 34 * 24 + 6 * 64));
  // Its bytes read the latent (12 B a token) of the 6 cached and write the 4 new ones'.
  const SeqShape fresh{4, 0, true, false};
  const double more =
      model.cost(std::span(&chunk, 1)).bytes - model.cost(std::span(&fresh, 1)).bytes;
  CHECK(more == Approx(6 * 12));
  // A decode's q and o are in the latent: 2 heads x (2 x 4 + 2) values, against a prefill
  // token's 2 x (2 + 2 + 2): 16 B more than the same token as a one-token prefill.
  const SeqShape as_prefill{1, 10, true, true};
  CHECK(model.cost(std::span(&decode, 1)).bytes - model.cost(std::span(&as_prefill, 1)).bytes ==
        Approx((20 - 12) * 2));
  // At TP2 each GPU also reads the replicated down projection (8 x (4 + 2) parameters, 96 B a
  // copy), every GPU its own norms' and adds' bytes (176 B a token) and the whole latent
  // (12 B x 12 tokens): the group reads that much more than at TP1.
  const RooflineCostModel tp2(slow_gpu(), m, 2, ideal_params());
  CHECK(tp2.cost(std::span(&decode, 1)).bytes - model.cost(std::span(&decode, 1)).bytes ==
        Approx(96 + 176 + 12 * 12));
}

TEST_CASE("catalogue: a MoE model with dense layers, counted by hand", "[cost][models]") {
  // Four layers: one dense MLP of width 32, three of 4 experts of width 16 (top-2) and a shared
  // expert of 8; hidden 8, attention as tiny_model's.
  ModelSpec m = servesim::test::tiny_model();
  m.num_layers = 4;
  m.num_experts = 4;
  m.experts_per_token = 2;
  m.shared_expert_intermediate_size = 8;
  m.dense_layers = 1;
  m.dense_intermediate_size = 32;
  CHECK(m.moe_layers() == 3);
  CHECK(m.router_params() == 3 * 8 * 4);
  // Active MLP: 3 x (2 x 384 + 192) + 768.
  CHECK(m.active_mlp_params() == 3 * (2 * 384 + 192) + 768);
  // All: attention 4 x 192; experts 3 x (4 x 384 + 192) and the dense 768; routers 96; norms 4 x
  // 16; embedding and LM head 256 each; the final norm 8.
  const int64_t total = 4 * 192 + 3 * (4 * 384 + 192) + 768 + 96 + 4 * 16 + 256 + 256 + 8;
  CHECK(m.total_params() == total);
  CHECK(m.active_params() == total - 3 * 2 * 384);
  // A speculative head of it is one routed-expert layer, whatever the target's dense layers.
  const Drafter eagle = make_drafter(SpecMethod::kEagle, m);
  CHECK(eagle.model.moe_layers() == 1);
  CHECK(eagle.model.router_params() == 8 * 4);
  // One token's decode: the dense layer's MLP (2 x 768 FLOPs) where, as a MoE layer, it would
  // pass through 2 experts and the shared one (2 x (2 x 384 + 192)) and a router (2 x 32).
  ModelSpec all_moe = m;
  all_moe.dense_layers = 0;
  all_moe.dense_intermediate_size = 0;
  const RooflineCostModel model(slow_gpu(), m, 1, ideal_params());
  const RooflineCostModel moe(slow_gpu(), all_moe, 1, ideal_params());
  const SeqShape one{1, 10, false, true};
  CHECK(model.cost(std::span(&one, 1)).flops - moe.cost(std::span(&one, 1)).flops ==
        Approx(2.0 * 768 - 2.0 * (2 * 384 + 192) - 2.0 * 32));
}

TEST_CASE("model file: MLA and dense-layer keys, and what they refuse", "[models][cli]") {
  const std::filesystem::path dir = scratch("model_families");
  // DeepSeek-V3 as a file: the catalogue's counts.
  const std::string v3 =
      "name = v3\nnum_hidden_layers = 61\nhidden_size = 7168\nnum_attention_heads = 128\n"
      "intermediate_size = 2048\nvocab_size = 129280\nmax_position_embeddings = 163840\n"
      "num_local_experts = 256\nnum_experts_per_tok = 8\nshared_expert_intermediate_size = 2048\n"
      "q_lora_rank = 1536\nkv_lora_rank = 512\nqk_nope_head_dim = 128\nqk_rope_head_dim = 64\n"
      "v_head_dim = 128\ndense_layers = 3\ndense_intermediate_size = 18432\nquantization = fp8\n";
  write(dir / "v3.ini", v3);
  const ModelSpec m = load_model_file((dir / "v3.ini").string());
  const ModelSpec cat = find_model("deepseek-v3");
  CHECK(m.total_params() == cat.total_params());
  CHECK(m.weight_bytes() == cat.weight_bytes());
  CHECK(m.kv_bytes_per_token_per_gpu(8) == cat.kv_bytes_per_token_per_gpu(8));
  CHECK(m.head_dim == 192);
  // Hostile: each names its file, line and field, and the run exits 2.
  struct Bad {
    std::string text, where;
  };
  const std::string dense =
      "name = d\nnum_hidden_layers = 4\nhidden_size = 64\nnum_attention_heads = 4\n"
      "intermediate_size = 128\nvocab_size = 100\nmax_position_embeddings = 512\n";
  for (const Bad& b :
       {Bad{dense + "qk_rope_head_dim = 64\n", "bad.ini:8: field 'qk_rope_head_dim'"},
        Bad{dense + "kv_lora_rank = 64\nqk_rope_head_dim = 16\nv_head_dim = 16\n",
            "bad.ini:8: field 'kv_lora_rank': multi-head latent attention needs qk_nope_head_dim"},
        Bad{dense + "kv_lora_rank = -1\n", "bad.ini:8: field 'kv_lora_rank'"},
        Bad{dense + "dense_layers = 1\ndense_intermediate_size = 64\n",
            "bad.ini:8: field 'dense_layers'"},
        Bad{dense + "num_local_experts = 4\ndense_layers = 4\ndense_intermediate_size = 64\n",
            "bad.ini:9: field 'dense_layers'"},
        Bad{dense + "num_local_experts = 4\ndense_layers = 2\n",
            "bad.ini:9: field 'dense_layers': needs dense_intermediate_size"},
        Bad{dense + "dense_intermediate_size = 64\n",
            "bad.ini:8: field 'dense_intermediate_size'"}}) {
    write(dir / "bad.ini", b.text);
    const auto r = call_cli({"run", "--model-file", (dir / "bad.ini").string()});
    INFO(b.text);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(b.where));
  }
  // LoRA is sized for standard attention: refused on an MLA model, naming the flag.
  const auto lora = call_cli({"run", "--model", "deepseek-v3", "--gpu", "h200-sxm", "--tp", "8",
                              "--scheduler", "vllm-v1", "--enable-lora", "--num-requests", "2"});
  CHECK(lora.code == 2);
  CHECK_THAT(lora.err, Catch::Contains("enable-lora"));
  CHECK_THAT(lora.err, Catch::Contains("multi-head latent attention"));
}

TEST_CASE("roofline: a TP group across nodes all-reduces over the NICs, by hand",
          "[cost][models]") {
  const ModelSpec m = find_model("deepseek-v3");
  const GpuSpec h100 = find_gpu("h100-sxm");
  CHECK(h100.gpus_per_node == 8);
  const double bytes = 1 << 20;
  // Two nodes of 8: NCCL (no custom all-reduce across nodes), 20 us a call, the bus bandwidth of a
  // node's 8 NICs at 47 of 50 GB/s each (376 GB/s), under the NVLink ring's.
  const RooflineCostModel two_nodes(h100, m, 16, hardware_params(GpuArch::kHopper));
  const double nvlink = 450e9 * two_nodes.hardware().interconnect_efficiency;
  CHECK(two_nodes.allreduce_seconds(bytes) ==
        Approx(20e-6 + 2.0 * 15 / 16 * bytes / std::min(8 * 50e9 * 0.94, nvlink)));
  // TP 12 over nodes of 8: the second node holds 4 GPUs, 4 NICs.
  const RooflineCostModel uneven(h100, find_model("mixtral-8x22b"), 12,
                                 hardware_params(GpuArch::kHopper));
  CHECK(uneven.allreduce_seconds(bytes) ==
        Approx(20e-6 + 2.0 * 11 / 12 * bytes / std::min(4 * 50e9 * 0.94, nvlink)));
  GpuSpec small = h100;
  small.gpus_per_node = 4;
  const RooflineCostModel four(small, find_model("llama-3.1-70b"), 8,
                               hardware_params(GpuArch::kHopper));
  CHECK(four.allreduce_seconds(bytes) ==
        Approx(20e-6 + 2.0 * 7 / 8 * bytes / std::min(4 * 50e9 * 0.94, nvlink)));
  // The same group inside one node of 16 is the intra-node formula: cheaper.
  GpuSpec big = h100;
  big.gpus_per_node = 16;
  const RooflineCostModel one_node(big, m, 16, hardware_params(GpuArch::kHopper));
  CHECK(one_node.allreduce_seconds(bytes) < two_nodes.allreduce_seconds(bytes));
  // TP8 on one node is unchanged by the node size.
  const RooflineCostModel eight(h100, m, 8, hardware_params(GpuArch::kHopper));
  const RooflineCostModel eight_big(big, m, 8, hardware_params(GpuArch::kHopper));
  CHECK(eight.allreduce_seconds(bytes) == eight_big.allreduce_seconds(bytes));
  // A GPU file sets the node size; out of range, it is refused naming the line.
  const std::filesystem::path dir = scratch("multi_node");
  const std::string gpu =
      "name = g\narch = hopper\nbf16_tflops = 989\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
      "interconnect_gb_per_s = 450\n";
  write(dir / "g4.ini", gpu + "gpus_per_node = 4\n");
  CHECK(load_gpu_file((dir / "g4.ini").string()).gpus_per_node == 4);
  write(dir / "g0.ini", gpu + "gpus_per_node = 0\n");
  const auto r = call_cli({"run", "--gpu-file", (dir / "g0.ini").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("g0.ini:7: field 'gpus_per_node'"));
  // Disaggregated pools that send KV over NVLink must fit one node: 4 x TP2 + 2 x TP1 do not,
  // 3 x TP2 + 2 x TP1 do.
  const auto nvlink_pools = [](const char* prefill_replicas) {
    return call_cli({"run", "--prefill-replicas", prefill_replicas, "--prefill-tp", "2",
                     "--decode-replicas", "2", "--kv-transfer-link", "nvlink", "--num-requests",
                     "4"});
  };
  const auto pd = nvlink_pools("4");
  CHECK(pd.code == 2);
  CHECK_THAT(pd.err, Catch::Contains("kv-transfer-link") && Catch::Contains("10 GPUs"));
  CHECK(nvlink_pools("3").code == 0);
}
