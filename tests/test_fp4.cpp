// NVFP4 (issue 48): an NVFP4 checkpoint's weights in the counts and the step by hand on the tiny
// model, FP4 tensor cores where the GPU has them, the catalogue's checkpoint, the model and GPU
// files' keys, and what vLLM refuses with them.
#include <catch2/catch.hpp>
#include <cmath>

#include "cli_helpers.hpp"
#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/gpu.hpp"
#include "models/model.hpp"
#include "models/roofline.hpp"

using namespace servesim;
using servesim::test::error_field;
using servesim::test::ideal_params;
using servesim::test::refused;
using servesim::test::scratch;
using servesim::test::slow_gpu;
using servesim::test::tiny_model;
using servesim::test::write;

namespace {
ModelSpec nvfp4(ModelSpec m) {
  m.attention_weight_bytes = m.mlp_weight_bytes = kNvfp4WeightBytes;
  return m;
}
}  // namespace

TEST_CASE("fp4: NVFP4 weights in the counts and the step by hand", "[cost][fp4]") {
  const ModelSpec bf16 = tiny_model(), fp4 = nvfp4(tiny_model());
  CHECK(fp4.quantization() == "nvfp4");
  // The linear layers' 2 x (192 + 384) weights at 4.5 bits; embedding, LM head and norms in BF16.
  const int64_t linear = 2 * (192 + 384);
  CHECK(fp4.weight_bytes() ==
        std::llround(linear * 0.5625 + double(bf16.total_params() - linear) * 2));
  const SeqShape prefill{3, 0, true, false};
  // FP4 tensor cores at four times the BF16 rate: compute 2304 x 3 FLOPs / 4 = 1.728 s; the
  // weights' 648 bytes and the activations' 416 x 3 take 1.896 s, so memory binds.
  GpuSpec blackwell = slow_gpu(2e-9);
  blackwell.fp4_tflops = 4e-9;
  CHECK(
      RooflineCostModel(blackwell, fp4, 1, ideal_params()).cost(std::span(&prefill, 1)).linear_s ==
      Approx(1.896));
  // Without FP4 tensor cores (Marlin's or Petit's weight-only kernel) compute runs at the BF16
  // rate.
  CHECK(RooflineCostModel(slow_gpu(2e-9), fp4, 1, ideal_params())
            .cost(std::span(&prefill, 1))
            .linear_s == Approx(6.912));
  // A decode token on a fast GPU reads 648 weight bytes and 416 of activations.
  GpuSpec fast = slow_gpu(0);
  fast.bf16_tflops = 1e-8;
  const SeqShape decode{1, 0, false, false};
  CHECK(RooflineCostModel(fast, fp4, 1, ideal_params()).cost(std::span(&decode, 1)).linear_s ==
        Approx(0.648 + 0.416));
  // FLOPs are FLOPs, whatever their precision.
  CHECK(RooflineCostModel(blackwell, fp4, 1, ideal_params()).cost(std::span(&prefill, 1)).flops ==
        Approx(RooflineCostModel(blackwell, bf16, 1, ideal_params())
                   .cost(std::span(&prefill, 1))
                   .flops));
}

TEST_CASE("fp4: the catalogue's NVFP4 checkpoint and FP4 peaks", "[models][fp4]") {
  const ModelSpec bf16 = find_model("llama-3.3-70b");
  const ModelSpec fp4 = find_model("nvidia/Llama-3.3-70B-Instruct-FP4");
  CHECK(fp4.name == "llama-3.3-70b-fp4");
  CHECK(fp4.quantization() == "nvfp4");
  CHECK(fp4.total_params() == bf16.total_params());
  const double linear = 80.0 * double(bf16.attention_params_per_layer() + bf16.expert_params());
  CHECK(double(fp4.weight_bytes()) == Approx(double(bf16.weight_bytes()) - linear * (2 - 0.5625)));
  // Blackwell's FP4 tensor cores run at twice its FP8 rate (NVIDIA's tables); none elsewhere.
  for (const GpuSpec& g : gpu_catalogue()) {
    INFO(g.name);
    if (g.arch == GpuArch::kBlackwell) {
      CHECK(g.fp4_tflops == Approx(2 * g.fp8_tflops));
    } else {
      CHECK(g.fp4_tflops == 0);
    }
  }
  // vLLM serves the checkpoint as NVFP4: not re-quantized to FP8, not as BF16.
  ModelSpec m = fp4;
  CHECK(error_field([&] { apply_serving_dtypes(m, "fp8", "auto"); }) == "quantization");
  CHECK(error_field([&] { apply_serving_dtypes(m, "none", "auto"); }) == "quantization");
  CHECK(error_field([&] { apply_serving_dtypes(m, "nvfp4", "auto"); }) == "quantization");
  CHECK(error_field([&] { apply_serving_dtypes(m, "", "fp8"); }).empty());
}

TEST_CASE("fp4: model and GPU files, and the GPUs vLLM refuses it on", "[models][fp4][cli]") {
  const auto dir = scratch("fp4_files");
  const std::string llama =
      "name = my-fp4\nnum_hidden_layers = 2\nhidden_size = 64\nnum_attention_heads = 4\n"
      "intermediate_size = 128\nvocab_size = 100\nmax_position_embeddings = 512\n";
  write(dir / "m.ini", llama + "quantization = nvfp4\n");
  const ModelSpec m = load_model_file((dir / "m.ini").string());
  CHECK(m.attention_weight_bytes == kNvfp4WeightBytes);
  CHECK(m.mlp_weight_bytes == kNvfp4WeightBytes);
  write(dir / "bad.ini", llama + "quantization = nvfp8\n");
  CHECK(error_field([&] { load_model_file((dir / "bad.ini").string()); }) == "quantization");

  const std::string gpu =
      "name = x\narch = blackwell\nbf16_tflops = 2250\nhbm_gib = 180\nhbm_gb_per_s = 8000\n"
      "interconnect_gb_per_s = 900\n";
  write(dir / "g.ini", gpu + "fp4_tflops = 9000\n");
  CHECK(load_gpu_file((dir / "g.ini").string()).fp4_tflops == 9000);
  for (const char* bad : {"fp4_tflops = -1\n", "fp4_tflops = 1e9\n", "fp4_tflops = x\n"}) {
    INFO(bad);
    write(dir / "h.ini", gpu + bad);
    CHECK(error_field([&] { load_gpu_file((dir / "h.ini").string()); }) == "fp4_tflops");
  }
  // FP4 tensor cores are Blackwell's: vLLM's NVFP4 GEMMs on them need SM100.
  std::string hopper = gpu;
  hopper.replace(hopper.find("blackwell"), 9, "hopper");
  write(dir / "hopper.ini", hopper + "fp4_tflops = 4000\n");
  CHECK(error_field([&] { load_gpu_file((dir / "hopper.ini").string()); }) == "fp4_tflops");
  // Elsewhere weight-only kernels serve it (Marlin on Hopper, Petit on MI300X), warned.
  for (const char* g : {"h100", "mi300x"}) {
    const auto r = servesim::test::call_cli(
        {"run", "--model", "llama-3.3-70b-fp4", "--gpu", g, "--tp", "2", "--num-prompts", "5"});
    INFO(g << ": " << r.err);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("NVFP4 GEMMs"));
  }
}
