// The roofline model against FLOPs, bytes and seconds computed by hand for a tiny model.
#include <catch2/catch.hpp>

#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/memory_plan.hpp"
#include "models/roofline.hpp"

using namespace servesim;

using servesim::test::ideal_params;
using servesim::test::slow_gpu;
using servesim::test::tiny_model;

TEST_CASE("roofline: parameter counts of the tiny model", "[cost]") {
  const ModelSpec m = tiny_model();
  CHECK(m.attention_params_per_layer() == 8 * (8 + 2 * 4) + 8 * 8);  // 192
  CHECK(m.expert_params() == 3 * 8 * 16);                            // 384
  CHECK(m.active_linear_params() == 2 * 576);                        // two layers
  CHECK(m.total_params() == 2 * (576 + 16) + 2 * 32 * 8 + 8);
  CHECK(m.kv_bytes_per_token_per_gpu(1) == 2 * 2 * 1 * 4 * 2);
}

TEST_CASE("roofline: a decode step's FLOPs, bytes and seconds by hand", "[cost]") {
  const RooflineCostModel model(slow_gpu(), tiny_model(), 1, ideal_params());
  const SeqShape decode{1, 10, false, true};
  const StepCost c = model.cost(std::span(&decode, 1));
  // linear 2 x 576 x 2 layers = 2304; attention 4 x 8 q-dims x 2 layers x 11 keys = 704;
  // LM head 2 x 32 x 8 = 512.
  CHECK(c.flops == Approx(2304 + 704 + 512));
  // linear: weights 576 x 2 x 2 B = 2304 + activations 104 x 2 x 2 B = 416;
  // attention: KV 32 B/token x (11 read + 1 written) + Q and O 64 B = 448;
  // element-wise 152 x 2 x 2 B = 608; LM head 512 B of weights + 32 x 4 B of logits = 640.
  CHECK(c.bytes == Approx(2720 + 448 + 608 + 640));
  CHECK(c.linear_s == Approx(2.720));     // memory-bound: max(2.304, 2.720)
  CHECK(c.attention_s == Approx(0.704));  // compute-bound: max(0.704, 0.448)
  CHECK(c.elementwise_s == Approx(0.608));
  CHECK(c.lm_head_s == Approx(0.640));
  CHECK(c.allreduce_s == 0);
  CHECK(c.seconds == Approx(2.720 + 0.704 + 0.608 + 0.640));
}

TEST_CASE("roofline: a decode of several query tokens reads its KV once", "[cost]") {
  // A speculative verification step decodes k + 1 tokens of a sequence: token i attends to the
  // cached 10 and tokens 0..i (4 x 10 + 10 = 50 pairs), and the kernel reads the 14 keys and
  // values once, as the prefill kernel does for the same chunk (not once per pair: 50).
  const RooflineCostModel model(slow_gpu(), tiny_model(), 1, ideal_params());
  const SeqShape verify{4, 10, false, true}, chunk{4, 10, true, true};
  const StepCost d = model.cost(std::span(&verify, 1));
  const StepCost p = model.cost(std::span(&chunk, 1));
  CHECK(d.flops == Approx(p.flops));
  CHECK(d.bytes == Approx(p.bytes));
  // Attention bytes by hand: KV 32 B/token x (14 read + 4 written) + Q and O 64 B x 4 = 832; the
  // rest is the 4 tokens' linear (2304 + 4 x 416), element-wise (4 x 608) and LM head (640).
  CHECK(d.bytes == Approx(832 + 2304 + 4 * 416 + 4 * 608 + 640));
}

TEST_CASE("roofline: prefill attention is quadratic in the chunk and linear in context", "[cost]") {
  const RooflineCostModel model(slow_gpu(), tiny_model(), 1, ideal_params());
  // 4 new tokens after 6 cached: token i sees 6 + i + 1 keys: 7 + 8 + 9 + 10 = 34 pairs.
  const SeqShape chunk{4, 6, true, false};
  const StepCost c = model.cost(std::span(&chunk, 1));
  CHECK(c.flops == Approx(2304.0 * 4 + 4 * 8 * 2 * 34));  // no LM head: nothing emitted
  CHECK(c.lm_head_s == 0);
  // Doubling the chunk at no context: 2 x 3 / 2 = 3 pairs vs 4 x 5 / 2 = 10.
  const SeqShape two{2, 0, true, true}, four{4, 0, true, true};
  const double attn2 = model.cost(std::span(&two, 1)).flops - 2304.0 * 2 - 512;
  const double attn4 = model.cost(std::span(&four, 1)).flops - 2304.0 * 4 - 512;
  CHECK(attn2 == Approx(64.0 * 3));
  CHECK(attn4 == Approx(64.0 * 10));
}

TEST_CASE("roofline: tensor parallelism splits work and adds two all-reduces per layer", "[cost]") {
  RooflineParams p = ideal_params();
  p.hw.allreduce_latency_s = 0.01;
  const RooflineCostModel tp1(slow_gpu(), tiny_model(), 1, p), tp2(slow_gpu(), tiny_model(), 2, p);
  const SeqShape decode{1, 10, false, true};
  const StepCost a = tp1.cost(std::span(&decode, 1)), b = tp2.cost(std::span(&decode, 1));
  CHECK(b.flops == Approx(a.flops));  // the same work, on two GPUs
  CHECK(b.linear_s == Approx(a.linear_s / 2));
  // Message 1 token x 8 x 2 B = 16 B; ring 2 (2-1)/2 x 16 / 1000 B/s = 0.016 s + 0.01 s latency;
  // 2 per layer x 2 layers.
  CHECK(b.allreduce_s == Approx(4 * (0.01 + 0.016)));
}

TEST_CASE("roofline: kernel floors and the per-step CPU overhead", "[cost]") {
  RooflineParams p = ideal_params();
  p.hw.elementwise_floor_s_per_layer = 10;
  p.hw.attention_floor_s_per_layer = 20;
  p.engine.cpu_s = 1;
  p.engine.cpu_s_per_seq = 0.5;
  const RooflineCostModel model(slow_gpu(), tiny_model(), 1, p);
  const SeqShape batch[] = {{1, 10, false, true}, {1, 3, false, true}, {5, 0, true, true}};
  const StepCost c = model.cost(batch);
  CHECK(c.elementwise_s == Approx(2 * 10));  // the floor: more than the bytes take
  // Attention pays each kernel's launch latency on top of its work: a prefill kernel and a
  // decode kernel, 2 layers each.
  RooflineParams no_floor = p;
  no_floor.hw.attention_floor_s_per_layer = 0;
  const double work =
      RooflineCostModel(slow_gpu(), tiny_model(), 1, no_floor).cost(batch).attention_s;
  CHECK(work > 0);
  CHECK(c.attention_s == Approx(work + 2 * 20 + 2 * 20));
  CHECK(c.cpu_overhead_s == Approx(1 + 3 * 0.5));
}

TEST_CASE("roofline: a mixture of experts reads only the experts its tokens reach", "[cost]") {
  ModelSpec moe = tiny_model();
  moe.num_experts = 8;
  moe.experts_per_token = 2;
  const RooflineCostModel model(slow_gpu(), moe, 1, ideal_params());
  const SeqShape one{1, 0, false, false};
  const double expert_bytes = 384.0 * 2 * 2;  // one expert, both layers
  const double dense_bytes = (192.0 + 8 * 8) * 2 * 2;
  const double act = 104.0 + 2 * 16 + 16;  // per token per layer, top-2 MLP activations
  // One token reaches 8 x (1 - 6/8) = 2 experts; 4096 tokens reach all 8.
  CHECK(model.cost(std::span(&one, 1)).linear_s * 1000 ==
        Approx(dense_bytes + 2 * expert_bytes + act * 2 * 2));
  CHECK(moe.total_params() - moe.active_params() == 2 * 6 * 384);
}

TEST_CASE("memory plan: Llama-2-7B on one A100-80GB, vLLM's formula by hand", "[cost][memory]") {
  MemoryPlanOptions o;  // utilization 0.9, block 16, budget 2048, 256 seqs, 0.5 GiB reserve
  const MemoryPlan p = plan_memory(find_gpu("a100-80g"), find_model("llama-2-7b"), o);
  CHECK(p.weight_bytes == Approx(6738415616.0 * 2));
  // 2048 tokens x (4 x 4096 + 3 x 11008) x 2 B + 256 sequences x 32000 x 4 B x 2
  CHECK(p.activation_bytes == Approx(267911168.0));
  // 16 tokens x K and V x 32 layers x 32 KV heads x 128 head dim x 2 B.
  CHECK(p.kv_bytes_per_block == 16 * 2 * 32 * 32 * 128 * 2);
  // The KV cache gets 80 GiB x 0.9 - weights - activations - the 0.5 GiB runtime reserve:
  //   77,309,411,328 - 13,476,831,232 - 267,911,168 - 536,870,912 = 63,027,798,016 B,
  // and floor(63,027,798,016 / 8,388,608) = floor(7513.50) = 7513 blocks.
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double kv_bytes = 80 * gib * 0.9 - 6738415616.0 * 2 - 267911168.0 - 0.5 * gib;
  CHECK(kv_bytes == 63027798016.0);
  CHECK(p.kv_cache_bytes == Approx(kv_bytes));
  CHECK(p.num_gpu_blocks == 7513);  // by hand above, not by the code's formula
  o.num_gpu_blocks_override = 100;
  CHECK(plan_memory(find_gpu("a100-80g"), find_model("llama-2-7b"), o).num_gpu_blocks == 100);
}

TEST_CASE("memory plan: more KV blocks than a block id holds are refused, not wrapped",
          "[cost][memory]") {
  MemoryPlanOptions o;
  o.num_gpu_blocks_override = kMaxKvBlocks;
  CHECK(plan_memory(find_gpu("a100-80g"), find_model("llama-2-7b"), o).num_gpu_blocks ==
        kMaxKvBlocks);
  o.num_gpu_blocks_override = kMaxKvBlocks + 1;  // a 31st bit: V1's free queue has 30
  CHECK(test::error_field([&] {
          plan_memory(find_gpu("a100-80g"), find_model("llama-2-7b"), o);
        }) == "num-gpu-blocks");
}

TEST_CASE("memory plan: a model that does not fit is an error stating the bytes",
          "[cost][memory]") {
  MemoryPlanOptions o;
  try {
    plan_memory(find_gpu("l4"), find_model("llama-2-70b"), o);
    FAIL("expected an error");
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("does not fit"));
    CHECK_THAT(msg, Catch::Contains("weights 128.48 GiB"));
    CHECK_THAT(msg, Catch::Contains("usable 20.25 GiB (22.50 GiB x 0.90)"));
  }
  ServerShape tp8;
  tp8.tp = 8;  // 8 x L4: 16 GiB of weights each, fits
  CHECK(plan_memory(find_gpu("l4"), find_model("llama-2-70b"), o, tp8).num_gpu_blocks > 0);
}

TEST_CASE("roofline: the smooth knee and GEMM tile padding by hand", "[cost]") {
  const SeqShape s{3, 0, true, false};  // 3 tokens: tiny compute, weights dominate
  RooflineParams p = ideal_params();
  // Linear compute 2304 x 3 FLOPs = 6.912 s; memory 2304 + 416 x 3 = 3.552 s (at 1000/s).
  CHECK(RooflineCostModel(slow_gpu(), tiny_model(), 1, p).cost(std::span(&s, 1)).linear_s ==
        Approx(6.912));
  p.hw.knee_sharpness = 2;  // sqrt(6.912^2 + 3.552^2)
  CHECK(RooflineCostModel(slow_gpu(), tiny_model(), 1, p).cost(std::span(&s, 1)).linear_s ==
        Approx(std::sqrt(6.912 * 6.912 + 3.552 * 3.552)));
  p.hw.knee_sharpness = 0;
  p.hw.linear_tile_tokens = 4;  // 3 tokens run as a tile of 4: compute 9.216 s
  const StepCost c = RooflineCostModel(slow_gpu(), tiny_model(), 1, p).cost(std::span(&s, 1));
  CHECK(c.linear_s == Approx(9.216));
  // FLOPs count the real tokens, for MFU: 3 of linear, plus 6 pairs of attention.
  CHECK(c.flops == Approx(2304.0 * 3 + 64 * 6));
}

TEST_CASE("roofline: the all-reduce latency switches above a message size", "[cost]") {
  RooflineParams p = ideal_params();
  p.hw.allreduce_latency_s = 1;
  p.hw.allreduce_switch_bytes = 100;
  p.hw.allreduce_large_latency_s = 5;
  const RooflineCostModel m(slow_gpu(), tiny_model(), 2, p);
  // Ring: 2 (2-1)/2 x bytes / 1000 B/s.
  CHECK(m.allreduce_seconds(100) == Approx(1 + 0.1));
  CHECK(m.allreduce_seconds(200) == Approx(5 + 0.2));
}

TEST_CASE("catalogue: parameter counts equal the published safetensors counts", "[cost][models]") {
  // Parameter totals of the Hugging Face checkpoints (safetensors metadata).
  CHECK(find_model("mistralai/Mistral-Nemo-Instruct-2407").total_params() == 12'247'782'400);
  CHECK(find_model("01-ai/Yi-34B").total_params() == 34'388'917'248);
  CHECK(find_model("Qwen/Qwen2.5-7B-Instruct").total_params() == 7'615'616'512);
  CHECK(find_model("meta-llama/Llama-3.1-70B-Instruct").total_params() == 70'553'706'496);
  // Mistral-Nemo's heads are 128 wide while hidden / heads is 160.
  CHECK(find_model("mistral-nemo-12b").head_dim == 128);
  // An id the catalogue holds wins over the same architecture under another tag: the Instruct
  // Qwen2.5-7B has its own 32K context, the base model 128K.
  CHECK(find_model("Qwen/Qwen2.5-7B-Instruct").max_position == 32768);
  CHECK(find_model("Qwen/Qwen2.5-7B").max_position == 131072);
  CHECK(find_model("meta-llama/Llama-3.1-70B-Instruct").name == "llama-3.1-70b");
}

TEST_CASE("catalogue: the models vLLM users run most against their published totals",
          "[cost][models]") {
  // Total (and, for mixtures of experts, active) parameters as the model cards state them,
  // rounded as they round them: within 1% (2% for the active count, given to two digits).
  struct Card {
    const char* id;
    double total_b, active_b;
  };
  for (const Card& c :
       {Card{"Qwen/Qwen3-4B", 4.0, 4.0}, Card{"Qwen/Qwen3-8B", 8.2, 8.2},
        Card{"Qwen/Qwen3-14B", 14.8, 14.8}, Card{"Qwen/Qwen3-32B", 32.8, 32.8},
        Card{"Qwen/Qwen3-30B-A3B", 30.5, 3.3}, Card{"Qwen/Qwen2.5-14B-Instruct", 14.7, 14.7},
        Card{"Qwen/Qwen2.5-32B-Instruct", 32.5, 32.5},
        Card{"codellama/CodeLlama-34b-Instruct-hf", 33.7, 33.7},
        Card{"codellama/CodeLlama-7b-hf", 6.74, 6.74},
        Card{"mistralai/Mixtral-8x22B-Instruct-v0.1", 141, 39},
        Card{"mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7, 12.9},
        Card{"meta-llama/Llama-3.2-1B-Instruct", 1.24, 1.24},
        Card{"meta-llama/Llama-3.2-3B-Instruct", 3.21, 3.21},
        Card{"meta-llama/Llama-3.3-70B-Instruct", 70.6, 70.6},
        Card{"meta-llama/Llama-3.1-405B-Instruct", 405, 405},
        Card{"mistralai/Mistral-Small-24B-Instruct-2501", 23.6, 23.6},
        Card{"mistralai/Mistral-7B-Instruct-v0.3", 7.25, 7.25}}) {
    INFO(c.id);
    const ModelSpec m = find_model(c.id);
    CHECK(double(m.total_params()) == Approx(c.total_b * 1e9).epsilon(0.01));
    CHECK(double(m.active_params()) == Approx(c.active_b * 1e9).epsilon(0.02));
  }
  // Distillations are their base architecture under their own id.
  const ModelSpec distill = find_model("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B");
  CHECK(distill.total_params() == find_model("qwen2.5-32b").total_params());
  CHECK(distill.hf_id == "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B");
  CHECK(find_model("deepseek-ai/DeepSeek-R1-Distill-Llama-8B").num_layers == 32);
  // Qwen3's heads are 128 wide whatever hidden / heads is.
  CHECK(find_model("Qwen/Qwen3-32B").head_dim == 128);
  CHECK(find_model("Qwen/Qwen3-32B").hidden_size / find_model("Qwen/Qwen3-32B").num_heads == 80);
}

TEST_CASE("memory plan: vLLM V1's KV blocks on H100 as vLLM 0.15.1 logged them", "[cost][memory]") {
  // Block counts vLLM 0.15.1 logged ("GPU KV cache size" / 16) with gpu_memory_utilization 0.9
  // and max_num_seqs 128, from the public sim-to-real study behind ../shared/groundtruth.
  struct Case {
    const char* model;
    int tp;
    int64_t budget, logged;
  };
  for (const Case& c : {Case{"meta-llama/Llama-2-7b-hf", 1, 2048, 7463},
                        Case{"meta-llama/Llama-3.1-70B-Instruct", 4, 8192, 30251},
                        Case{"Qwen/Qwen2.5-7B-Instruct", 1, 1024, 65368},
                        Case{"mistralai/Mistral-Nemo-Instruct-2407", 2, 1024, 48009}}) {
    ServerShape server;
    server.engine = Engine::kV1;
    server.tp = c.tp;
    server.max_num_batched_tokens = c.budget;
    server.max_num_seqs = 128;
    const MemoryPlan p = plan_memory(find_gpu("h100-sxm"), find_model(c.model), {}, server);
    INFO(c.model);
    CHECK(std::abs(double(p.num_gpu_blocks) / double(c.logged) - 1) < 0.005);
  }
  // The V0 plan of the same server keeps its own, larger activation peak.
  ServerShape v0;
  v0.max_num_batched_tokens = 2048;
  v0.max_num_seqs = 128;
  ServerShape v1 = v0;
  v1.engine = Engine::kV1;
  const ModelSpec m = find_model("llama-2-7b");
  CHECK(plan_memory(find_gpu("h100-sxm"), m, {}, v0).activation_bytes !=
        plan_memory(find_gpu("h100-sxm"), m, {}, v1).activation_bytes);
  // The runtime reserve's defaults are held by the logged block counts above (TP1 and TP2); what
  // is left to check is what an explicit --runtime-reserve-gib does: every GiB it adds is a GiB
  // less of KV cache, i.e. 2^30 / 8,388,608 = 128 blocks of Llama-2-7B (16 tokens x K and V x 32
  // layers x 32 heads x 128 x 2 B = 8 MiB a block).
  MemoryPlanOptions given;
  given.runtime_reserve_gib = 1.5;
  MemoryPlanOptions more = given;
  more.runtime_reserve_gib = 2.5;
  const GpuSpec h100 = find_gpu("h100-sxm");
  CHECK(plan_memory(h100, m, given, v1).num_gpu_blocks -
            plan_memory(h100, m, more, v1).num_gpu_blocks ==
        128);
  CHECK(plan_memory(h100, m, given, v1).kv_cache_bytes -
            plan_memory(h100, m, more, v1).kv_cache_bytes ==
        Approx(1024.0 * 1024.0 * 1024.0));
}

TEST_CASE("roofline: vLLM's custom all-reduce below its size limit, NCCL above", "[cost]") {
  RooflineParams p = ideal_params();
  p.hw.allreduce_latency_s = 1;
  p.hw.custom_allreduce_max_bytes = 100;
  p.hw.custom_allreduce_latency_s = 0.25;
  p.hw.custom_allreduce_efficiency = 0.5;
  const RooflineCostModel m(slow_gpu(), tiny_model(), 2, p);
  // 2 (2-1)/2 x bytes / (1000 B/s x 0.5) on top of 0.25 s; at the limit NCCL's ring.
  CHECK(m.allreduce_seconds(50) == Approx(0.25 + 0.1));
  CHECK(m.allreduce_seconds(100) == Approx(1 + 0.1));
  CHECK(RooflineCostModel(slow_gpu(), tiny_model(), 1, p).allreduce_seconds(50) == 0);
}

TEST_CASE("roofline: the engine's work, CPU time and graph-replayed kernel floors", "[cost]") {
  RooflineParams p = ideal_params();
  p.hw.elementwise_floor_s_per_layer = 10;
  p.hw.attention_floor_s_per_layer = 20;
  EngineParams v0{Engine::kV0, 1, 0.5, 0, 0, 0.5};
  EngineParams v1{Engine::kV1, 3, 0.25, 2, 0.125, 0.5};
  const SeqShape decodes[] = {{1, 10, false, true}, {1, 3, false, true}};
  const SeqShape mixed[] = {{1, 10, false, true}, {4, 0, true, false}};
  const auto cost = [&](const EngineParams& e, std::span<const SeqShape> batch) {
    return RooflineCostModel(slow_gpu(), tiny_model(), 1, p.hw, e).cost(batch);
  };
  const StepCost d0 = cost(v0, decodes), d1 = cost(v1, decodes);
  CHECK(d0.engine_s == 0);
  CHECK(d0.cpu_overhead_s == Approx(1 + 2 * 0.5));
  CHECK(d1.engine_s == Approx(2 + 2 * 0.125));
  CHECK(d1.cpu_overhead_s == Approx(3 + 2 * 0.25));
  // Both engines replay a decode-only step as a CUDA graph: floors at half (element-wise 2 layers
  // x 10 x 0.5, one decode attention kernel 2 x 20 x 0.5).
  CHECK(d0.elementwise_s == Approx(10));
  CHECK(d1.elementwise_s == Approx(10));
  CHECK(d0.attention_s == Approx(d1.attention_s));
  CHECK(d1.seconds == Approx(d1.linear_s + d1.attention_s + d1.elementwise_s + d1.lm_head_s +
                             d1.allreduce_s + d1.engine_s + d1.cpu_overhead_s));
  // A step with a prefill runs eager on V0 (whole floors), as a graph on V1.
  const StepCost m0 = cost(v0, mixed), m1 = cost(v1, mixed);
  CHECK(m0.elementwise_s == Approx(20));
  CHECK(m1.elementwise_s == Approx(10));
  CHECK(m0.attention_s - m1.attention_s == Approx(2 * 20 * 0.5 * 2));
  // A decode past V0's max_seq_len_to_capture runs eager too.
  const SeqShape long_decode{1, kV0MaxSeqLenToCapture, false, true};
  CHECK(cost(v0, std::span(&long_decode, 1)).elementwise_s == Approx(20));
  CHECK(cost(v1, std::span(&long_decode, 1)).elementwise_s == Approx(10));
}

TEST_CASE("catalogue: GB200's NVLink domain of 72, MI325X and H20 from their datasheets",
          "[cost]") {
  // GB200 NVL72's rack table over its 72 GPUs (sparse FP8 720 PF and BF16 360 PF, halved for
  // dense; 576 TB/s of HBM), one NVLink domain of them all.
  const GpuSpec gb200 = find_gpu("GB200-NVL72");
  CHECK(gb200.name == "gb200");
  CHECK(gb200.bf16_tflops == Approx(360000.0 / 72 / 2));
  CHECK(gb200.fp8_tflops == Approx(720000.0 / 72 / 2));
  CHECK(gb200.hbm_gb_per_s == Approx(576000.0 / 72));
  CHECK(gb200.hbm_gib == Approx(189471.0 / 1024).epsilon(1e-4));  // nvidia-smi's MiB
  CHECK(gb200.arch == GpuArch::kBlackwell);
  CHECK(find_gpu("mi325x").hbm_gib > find_gpu("mi300x").hbm_gib);
  CHECK(find_gpu("h20-96gb").arch == GpuArch::kHopper);
  // TP16 of DeepSeek-V3 stays inside GB200's NVLink domain, where B200's 8-GPU boards send its
  // all-reduces over the NICs: the same step all-reduces faster on GB200.
  const ModelSpec m = find_model("deepseek-v3");
  const GpuSpec b200 = find_gpu("b200");
  const RooflineCostModel on_gb200(gb200, m, 16, hardware_params(gb200.arch),
                                   engine_params(Engine::kV1)),
      on_b200(b200, m, 16, hardware_params(b200.arch), engine_params(Engine::kV1));
  const std::vector<SeqShape> batch(32, SeqShape{1, 2000, false, true});
  CHECK(on_gb200.cost(batch).allreduce_s < on_b200.cost(batch).allreduce_s);
}

TEST_CASE("defaults: a GPU's hardware fit is its architecture's, engines are every GPU's",
          "[cost]") {
  const GpuSpec h100 = find_gpu("h100-sxm"), a100 = find_gpu("a100-80g");
  CHECK(hardware_params(h100.arch).linear_compute_efficiency !=
        hardware_params(a100.arch).linear_compute_efficiency);
  CHECK(hardware_params(find_gpu("b200").arch).custom_allreduce_max_bytes > 0);
  CHECK(hardware_params(find_gpu("l40s").arch).linear_memory_efficiency ==
        hardware_params(GpuArch::kAmpere).linear_memory_efficiency);
  CHECK(hardware_source(find_gpu("l40s")).find("no ada profile") != std::string::npos);
  // A GPU file with an H100's figures under another name gets the H100's fit: the architecture
  // decides, never the name.
  GpuSpec renamed = h100;
  renamed.name = "my-accelerator";
  CHECK(hardware_source(renamed) == hardware_source(h100));
  // Every parameter is physical: efficiencies at most 1 of the peak they scale.
  for (const GpuArch arch : {GpuArch::kAmpere, GpuArch::kHopper}) {
    const HardwareParams hw = hardware_params(arch);
    for (const auto& f : hardware_param_fields()) {
      INFO(f.name);
      CHECK(hw.*f.member >= f.min);
      CHECK(hw.*f.member <= f.max);
    }
  }
  CHECK(engine_params(Engine::kV1).engine == Engine::kV1);
  CHECK(engine_params(Engine::kV0).floor_fraction == engine_params(Engine::kV1).floor_fraction);
}
