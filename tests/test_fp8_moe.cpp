// FP8 weights and KV cache, shared experts and the MoE kernels' bandwidth: counts, step costs and
// memory plans computed by hand on a tiny model, and the flags and files that set them.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/memory_plan.hpp"
#include "models/roofline.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using Result = servesim::test::CliResult;
using servesim::test::call_cli;
using servesim::test::error_field;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;

using servesim::test::ideal_params;
using servesim::test::slow_gpu;
using servesim::test::tiny_model;

TEST_CASE("fp8: shared experts, encoders and FP8 weights in the counts by hand", "[cost][fp8]") {
  ModelSpec m = tiny_model();
  m.num_experts = 4;
  m.experts_per_token = 1;
  m.shared_expert_intermediate_size = 16;
  m.encoder_params = 100;
  CHECK(m.shared_expert_params() == 3 * 8 * 16);  // 384
  // Two layers of attention 192 + one routed expert 384 + the shared expert 384 + router 8 x 4.
  CHECK(m.active_linear_params() == 2 * (192 + 384 + 384 + 32));
  // Layers: attention 192, 4 experts and the shared one 5 x 384, router 32, norms 16; embedding
  // and LM head 256 each; final norm 8; encoder 100.
  const int64_t total = 2 * (192 + 5 * 384 + 32 + 16) + 256 + 256 + 8 + 100;
  CHECK(m.total_params() == total);
  CHECK(m.active_params() == total - 100 - 2 * 3 * 384);
  CHECK(m.weight_bytes() == 2 * total);
  CHECK(m.quantization().empty());

  // Red Hat's Llama 4 recipe: experts in FP8, attention and the rest in BF16.
  m.mlp_weight_bytes = 1;
  CHECK(m.quantization() == "fp8");
  CHECK(m.weight_bytes() == 2 * total - 2 * 5 * 384);
  // vLLM -q fp8 quantizes the attention projections too; --kv-cache-dtype fp8 halves the KV.
  apply_serving_dtypes(m, "fp8", "fp8");
  CHECK(m.weight_bytes() == 2 * total - 2 * 5 * 384 - 2 * 192);
  CHECK(m.kv_bytes_per_token_per_gpu(1) == 2 * 2 * 1 * 4 * 1);
  apply_serving_dtypes(m, "", "auto");  // the checkpoint's weights stay; the KV cache is BF16
  CHECK(m.weight_bytes() == 2 * total - 2 * 5 * 384 - 2 * 192);
  CHECK(m.kv_bytes_per_token_per_gpu(1) == 2 * 2 * 1 * 4 * 2);
}

TEST_CASE("fp8: the flags' bad values are errors naming them", "[cost][fp8]") {
  ModelSpec m = tiny_model();
  CHECK(error_field([&] { apply_serving_dtypes(m, "int4", "auto"); }) == "quantization");
  CHECK(error_field([&] { apply_serving_dtypes(m, "", "fp16"); }) == "kv-cache-dtype");
  CHECK(error_field([&] { apply_serving_dtypes(m, "none", "fp8_e5m2"); }).empty());
  CHECK(m.kv_cache_bytes == 1);
  // An FP8 checkpoint cannot be served unquantized.
  ModelSpec scout = find_model("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic");
  CHECK(error_field([&] { apply_serving_dtypes(scout, "none", "auto"); }) == "quantization");
}

TEST_CASE("fp8: GEMMs run at the FP8 peak where the GPU has one, and read one byte a weight",
          "[cost][fp8]") {
  const SeqShape prefill{3, 0, true, false};
  // BF16: compute 2304 x 3 FLOPs = 6.912 s, memory 2304 + 416 x 3 bytes = 3.552 s.
  CHECK(RooflineCostModel(slow_gpu(2e-9), tiny_model(), 1, ideal_params())
            .cost(std::span(&prefill, 1))
            .linear_s == Approx(6.912));
  ModelSpec fp8 = tiny_model();
  apply_serving_dtypes(fp8, "fp8", "auto");
  // FP8 tensor cores at twice the rate: 3.456 s of compute; weights 1152 bytes.
  const StepCost c =
      RooflineCostModel(slow_gpu(2e-9), fp8, 1, ideal_params()).cost(std::span(&prefill, 1));
  CHECK(c.linear_s == Approx(3.456));
  CHECK(c.flops == Approx(2304.0 * 3 + 64 * 6));  // FLOPs are FLOPs, whatever their precision
  // At BF16's rate (the power model's compute load) the FP8 GEMMs' count for half.
  CHECK(c.bf16_flops == Approx(2304.0 * 3 / 2 + 64 * 6));
  // Without FP8 tensor cores (Ampere's weight-only kernel) compute runs at the BF16 rate.
  CHECK(RooflineCostModel(slow_gpu(0), fp8, 1, ideal_params())
            .cost(std::span(&prefill, 1))
            .linear_s == Approx(6.912));
  // On a GPU of ten times the FLOP/s, one decode token is memory-bound: 1152 weight bytes and
  // 416 of activations (BF16 would read 2304 and 416).
  GpuSpec fast = slow_gpu(0);
  fast.bf16_tflops = 1e-8;
  const SeqShape decode{1, 0, false, false};
  CHECK(RooflineCostModel(fast, fp8, 1, ideal_params()).cost(std::span(&decode, 1)).linear_s ==
        Approx(1.152 + 0.416));
  CHECK(RooflineCostModel(fast, tiny_model(), 1, ideal_params())
            .cost(std::span(&decode, 1))
            .linear_s == Approx(2.304 + 0.416));
}

TEST_CASE("fp8: expert weights stream at the MoE kernels' efficiency", "[cost][fp8]") {
  ModelSpec moe = tiny_model();
  moe.num_experts = 8;
  moe.experts_per_token = 2;
  const SeqShape one{1, 0, false, false};
  const double expert_bytes = 384.0 * 2 * 2;  // one expert, both layers
  const double dense_bytes = (192.0 + 8 * 8) * 2 * 2;
  const double act = (104.0 + 2 * 16 + 16) * 2 * 2;
  RooflineParams p = ideal_params();
  const StepCost as_dense = RooflineCostModel(slow_gpu(0), moe, 1, p).cost(std::span(&one, 1));
  CHECK(as_dense.linear_s * 1000 == Approx(dense_bytes + 2 * expert_bytes + act));
  p.hw.moe_memory_efficiency = 0.5;       // the two experts' bytes take twice as long
  p.hw.moe_fp8_memory_efficiency = 0.25;  // FP8 experts' kernel: another efficiency
  const StepCost slow = RooflineCostModel(slow_gpu(0), moe, 1, p).cost(std::span(&one, 1));
  CHECK(slow.linear_s * 1000 == Approx(dense_bytes + 2 * 2 * expert_bytes + act));
  CHECK(slow.bytes == Approx(as_dense.bytes));  // the bytes moved are the same
  ModelSpec fp8 = moe;
  apply_serving_dtypes(fp8, "fp8", "auto");  // one byte a weight, read 4x as slowly
  const double fp8_expert_bytes = expert_bytes / 2, fp8_dense_bytes = 64.0 * 2 * 2 + 192.0 * 2;
  CHECK(RooflineCostModel(slow_gpu(0), fp8, 1, p).cost(std::span(&one, 1)).linear_s * 1000 ==
        Approx(fp8_dense_bytes + 2 * 4 * fp8_expert_bytes + act));
  // A dense model ignores it.
  CHECK(RooflineCostModel(slow_gpu(0), tiny_model(), 1, p).cost(std::span(&one, 1)).linear_s ==
        Approx(RooflineCostModel(slow_gpu(0), tiny_model(), 1, ideal_params())
                   .cost(std::span(&one, 1))
                   .linear_s));
}

TEST_CASE("fp8: the memory plan holds FP8 weights and an FP8 KV cache", "[cost][memory][fp8]") {
  ServerShape v1;
  v1.engine = Engine::kV1;
  const GpuSpec h100 = find_gpu("h100-sxm");
  const ModelSpec bf16 = find_model("llama-3.1-8b");
  ModelSpec fp8 = bf16;
  apply_serving_dtypes(fp8, "fp8", "fp8");
  const MemoryPlan a = plan_memory(h100, bf16, {}, v1), b = plan_memory(h100, fp8, {}, v1);
  // The linear layers of the blocks drop to one byte a weight; embedding and LM head stay BF16.
  const double linear_params = 32.0 * (fp8.attention_params_per_layer() + fp8.expert_params());
  CHECK(a.weight_bytes - b.weight_bytes == Approx(linear_params));
  CHECK(b.kv_bytes_per_block * 2 == a.kv_bytes_per_block);
  CHECK(b.num_gpu_blocks == int64_t(std::floor(b.kv_cache_bytes / b.kv_bytes_per_block)));
  CHECK(b.num_gpu_blocks > 2 * a.num_gpu_blocks);
}

TEST_CASE("fp8: Llama-4-Scout's catalogue entries", "[cost][models][fp8]") {
  const ModelSpec bf16 = find_model("meta-llama/Llama-4-Scout-17B-16E-Instruct");
  const ModelSpec fp8 = find_model("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic");
  // Meta's model card: 109B parameters in all, 17B active.
  CHECK(double(bf16.total_params()) == Approx(109e9).epsilon(0.005));
  CHECK(double(bf16.active_params()) == Approx(17e9).epsilon(0.03));
  CHECK(fp8.total_params() == bf16.total_params());
  CHECK(fp8.quantization() == "fp8");
  CHECK(fp8.attention_weight_bytes == 2);  // the recipe leaves attention in BF16
  // Experts and shared experts at one byte: 48 x 17 x 3 x 5120 x 8192 bytes saved.
  CHECK(bf16.weight_bytes() - fp8.weight_bytes() == int64_t(48) * 17 * 3 * 5120 * 8192);
  // BF16 Scout does not fit two H100s; FP8 does.
  ServerShape tp2;
  tp2.engine = Engine::kV1;
  tp2.tp = 2;
  CHECK(error_field([&] { plan_memory(find_gpu("h100-sxm"), bf16, {}, tp2); }) == "model");
  CHECK(plan_memory(find_gpu("h100-sxm"), fp8, {}, tp2).num_gpu_blocks > 0);
}

TEST_CASE("fp8: --quantization, --kv-cache-dtype and fp8_tflops from the command line",
          "[cli][fp8]") {
  const fs::path dir = scratch("fp8");
  const fs::path plain = dir / "plain.json", quant = dir / "fp8.json";
  const std::vector<std::string> run = {"run",       "--num-requests", "20",       "--input-len",
                                        "fixed:100", "--output-len",   "fixed:10", "--json"};
  auto with = [&](const fs::path& json, std::vector<std::string> extra) {
    std::vector<std::string> args = run;
    args.push_back(json.string());
    args.insert(args.end(), extra.begin(), extra.end());
    return call_cli(args);
  };
  REQUIRE(with(plain, {}).code == 0);
  REQUIRE(with(quant, {"--quantization", "fp8", "--kv-cache-dtype", "fp8"}).code == 0);
  const auto a = nlohmann::json::parse(slurp(plain)), b = nlohmann::json::parse(slurp(quant));
  CHECK(b["config"]["num_gpu_blocks"].get<int64_t>() >
        2 * a["config"]["num_gpu_blocks"].get<int64_t>());
  CHECK(a["config"]["quantization"] == "none");
  CHECK(b["config"]["quantization"] == "fp8");
  CHECK(b["config"]["kv_cache_dtype"] == "fp8");
  Result e = with(dir / "x.json", {"--kv-cache-dtype", "int8"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("kv-cache-dtype"));

  write(dir / "gpu.ini",
        "name = g\nbf16_tflops = 500\nhbm_gib = 96\nhbm_gb_per_s = 4000\n"
        "interconnect_gb_per_s = 400\nfp8_tflops = -3\narch = hopper\n");
  e = call_cli({"run", "--gpu-file", (dir / "gpu.ini").string()});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("gpu.ini:6: field 'fp8_tflops'"));
  write(dir / "model.ini",
        "name = m\nnum_hidden_layers = 2\nhidden_size = 64\nnum_attention_heads = 4\n"
        "intermediate_size = 128\nvocab_size = 100\nmax_position_embeddings = 512\n"
        "quantization = int4\n");
  e = call_cli({"run", "--model-file", (dir / "model.ini").string()});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("model.ini:8: field 'quantization'"));
}
