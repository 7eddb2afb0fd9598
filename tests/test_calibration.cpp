// Profile readers, the table model, calibration and calibration files, on hand-written fixtures
// and on data the roofline itself generated.
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "models/calibration.hpp"
#include "models/table_model.hpp"
#include "profile_fixtures.hpp"
#include "trace_fixtures.hpp"
#include "util/error.hpp"

using namespace servesim;
using servesim::test::fixture;
using servesim::test::fixture_profiles;
using servesim::test::mlp_header;
using servesim::test::mlp_row;
namespace fs = std::filesystem;

TEST_CASE("profiles: Vidur's files read by header name, duplicates averaged", "[calibration]") {
  const ProfileSet p = load_profiles(fixture_profiles("readers"));
  REQUIRE(p.mlp.size() == 1);
  const MlpProfile& mlp = p.mlp[0];
  CHECK(mlp.shape.n_embd == 4096);
  REQUIRE(mlp.ops.count(1) == 1);
  const Curve& pre = mlp.ops.at(1).at("attn_pre_proj");  // op 3 of 10: 3 x scale
  CHECK(pre.xs() == std::vector<double>{1, 8, 64});
  CHECK(pre.ys()[2] == Approx(3 * 0.05));  // the mean of 0.04 and 0.06, times 3
  REQUIRE(p.attention);
  CHECK(p.attention->tp == 2);
  CHECK(p.attention->prefill.at(128).at(1024) == Approx(0.30));
  REQUIRE(p.allreduce);
  CHECK(p.allreduce->by_workers.at(2).xs() == std::vector<double>{1000, 3000});  // single node
  REQUIRE(p.cpu);
  CHECK(p.cpu->per_iteration.at(16) == Approx(2.0));
}

TEST_CASE("profiles: curves interpolate, hold below and extend beyond", "[calibration]") {
  Curve c;
  c.add(10, 1);
  c.add(20, 3);
  c.add(30, 4);
  c.finish();
  CHECK(c.at(15) == Approx(2));
  CHECK(c.at(5) == 1);           // below the first point: its value
  CHECK(c.at(40) == Approx(5));  // the last segment continued
}

TEST_CASE("table model: exact at measured points", "[calibration]") {
  const ProfileSet p = load_profiles(fixture_profiles("exact"));
  const TableCostModel t(p, find_gpu("a100-80g"), find_model("llama-2-7b"), 1);
  // GEMMs are ops 3, 5, 7, 9 of 10 (pre, post, up, down): (3 + 5 + 7 + 9) x scale.
  CHECK(t.gemm_ms(8) == Approx(24 * 0.02));
  CHECK(t.elementwise_ms(8) == Approx((2 + 4 + 6 + 8 + 10) * 0.02));
  // Prefill attention: llama-2-7b at TP1 has 32 query heads of 128 per GPU, as the table.
  CHECK(t.prefill_attention_ms(256, 1024) == Approx(0.90));
  CHECK(t.prefill_attention_ms(192, 512) == Approx((0.20 + 0.70) / 2));  // bilinear
  // Decode: 32 KV heads per GPU vs the table's 4, so 1 sequence reads like 8 of the table's.
  // The table stops at 2 sequences: beyond it, work above one sequence grows with sequences.
  CHECK(t.decode_attention_ms(1.0 / 8, 1024) == Approx(0.04));
  CHECK(t.decode_attention_ms(2.0 / 8, 1024) == Approx(0.07));
  CHECK(t.decode_attention_ms(1, 1024) == Approx(0.04 + (0.07 - 0.04) * 8 / 2));
  CHECK(t.cpu_ms(8) == Approx(1.0));
  const TableCostModel tp2(p, find_gpu("a100-80g"), find_model("llama-2-7b"), 2);
  CHECK(tp2.allreduce_ms(3000.0 / (4096 * 2)) == Approx(0.020));
  // A step: layers x (GEMMs + element-wise + attention + 2 all-reduces) + CPU.
  const SeqShape one{8, 0, true, true};
  const StepCost c = t.cost(std::span(&one, 1));
  CHECK(c.linear_s == Approx(32 * 24 * 0.02e-3));
  CHECK(c.seconds == Approx(c.linear_s + c.elementwise_s + c.attention_s + c.cpu_overhead_s));
  CHECK(c.flops > 0);  // counted as the roofline counts them
}

TEST_CASE("table model: TP composition and extrapolation that never falls", "[calibration]") {
  const ProfileSet p = load_profiles(fixture_profiles("compose"));
  const TableCostModel tp2(p, find_gpu("a100-80g"), find_model("llama-2-7b"), 2);
  const SeqShape one{1, 0, true, true};
  const StepCost c = tp2.cost(std::span(&one, 1));
  // 32 layers x (GEMMs + element-wise + prefill attention + 2 all-reduces) + CPU at batch 1.
  const double layer_ms =
      24 * 0.005 + 30 * 0.005 + tp2.prefill_attention_ms(1, 0) + 2 * tp2.allreduce_ms(1);
  CHECK(c.seconds * 1e3 == Approx(32 * layer_ms + tp2.cpu_ms(1)));
  CHECK(c.allreduce_s > 0);
  // Beyond the measured chunks and contexts, more work never takes less time.
  const TableCostModel t(p, find_gpu("a100-80g"), find_model("llama-2-7b"), 1);
  double last = 0;
  for (double ctx : {0.0, 1024.0, 4096.0, 16384.0}) {
    const double ms = t.prefill_attention_ms(1024, ctx);
    CHECK(ms >= last);
    last = ms;
  }
  CHECK(t.prefill_attention_ms(512, 0) > t.prefill_attention_ms(256, 0));
  CHECK(t.decode_attention_ms(1, 8192) >= t.decode_attention_ms(1, 1024));
  CHECK(t.gemm_ms(1 << 16) > t.gemm_ms(64));
}

TEST_CASE("profiles: hostile files are one clear error with file, line and field",
          "[calibration][errors]") {
  const std::string good = mlp_row(8, 1, 0.01);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string row = good;
    row.replace(row.find(from), from.size(), to);
    return row;
  };
  CHECK_THROWS_WITH(
      read_mlp_profile(fixture("h1.csv", mlp_header() + with("32,32,4096", "0,32,4096"))),
      Catch::Contains("h1.csv:2: field 'n_head'"));
  CHECK_THROWS_WITH(
      read_mlp_profile(fixture("h2.csv", mlp_header() + with("True,8,1", "True,8,0"))),
      Catch::Contains("h2.csv:2: field 'num_tensor_parallel_workers'"));
  CHECK_THROWS_WITH(
      read_mlp_profile(fixture("h3.csv", mlp_header() + with(",0.03,", ",-0.03,"))),
      Catch::Contains(
          "h3.csv:2: field 'time_stats.attn_pre_proj.median': must be in [1e-06, 1e+07] ms"));
  CHECK_THROWS_WITH(
      read_mlp_profile(fixture("h4.csv", mlp_header() + good + with("32,32,4096", "64,8,8192"))),
      Catch::Contains("h4.csv:3: field 'n_embd': one mlp.csv must hold one model shape"));
  const std::string attn =
      "time_stats.attn_prefill.median,time_stats.attn_decode.median,n_embd,n_q_head,n_kv_head,"
      "num_tensor_parallel_workers,batch_size,prefill_chunk_size,kv_cache_size,is_prefill\n";
  CHECK_THROWS_WITH(
      read_attention_profile(fixture("h5.csv", attn + ",0.1,8192,64,8,2,2000000000,0,512,False\n")),
      Catch::Contains("h5.csv:2: field 'batch_size'"));
  CHECK_THROWS_WITH(
      read_attention_profile(fixture("h6.csv", attn + ",0.1,8192,64,8,2,-3,0,512,False\n")),
      Catch::Contains("h6.csv:2: field 'batch_size'"));
  const std::string steps =
      "prefill_tokens,decode_tokens,prefill_context_tokens,decode_context_tokens,measured_ms\n";
  CHECK_THROWS_WITH(read_step_log(fixture("h7.csv", steps + "3000000000,0,0,0,5\n")),
                    Catch::Contains("h7.csv:2: field 'prefill_tokens'"));
  CHECK_THROWS_WITH(read_step_log(fixture("h8.csv", steps + "0,2000000,0,0,5\n")),
                    Catch::Contains("h8.csv:2: field 'decode_tokens'"));
  // Too few steps for the parameters is an error, not a silent non-fit.
  const auto few = read_step_log(fixture("h9.csv", steps + "100,0,0,0,5\n0,4,0,400,3\n"));
  CHECK_THROWS_WITH(
      calibrate_from_step_log(few, find_gpu("a100-80g"), find_model("llama-2-7b"), 1, 5),
      Catch::Contains("too few"));
}

TEST_CASE("table model: a shape the profiles lack is a clear error", "[calibration][errors]") {
  const ProfileSet p = load_profiles(fixture_profiles("errors"));
  CHECK_THROWS_WITH(TableCostModel(p, find_gpu("a100-80g"), find_model("llama-3-8b"), 1),
                    Catch::Contains("no profile for llama-3-8b"));
  CHECK_THROWS_WITH(TableCostModel(p, find_gpu("a100-80g"), find_model("llama-2-7b"), 4),
                    Catch::Contains("no rows for TP 4"));
  CHECK_THROWS_WITH(load_profiles("/nonexistent"), Catch::Contains("not a directory"));
  CHECK_THROWS_WITH(read_mlp_profile(fixture("bad_mlp.csv", "num_tokens\n1\n")),
                    Catch::Contains("missing column"));
}

TEST_CASE("calibration: the fit recovers the parameters that generated the data", "[calibration]") {
  // Op measurements made by the roofline itself, with 1% noise.
  RooflineParams truth;
  truth.hw.knee_sharpness = 2.5;
  truth.hw.linear_tile_tokens = 128;
  truth.hw.linear_compute_efficiency = 0.6;
  truth.hw.linear_memory_efficiency = 0.7;
  // The GEMM latency is fitted only where the architecture has one (hopper); the A100's has none.
  truth.hw.linear_latency_s_per_layer = 0;
  truth.hw.elementwise_memory_efficiency = 0.5;
  truth.hw.elementwise_floor_s_per_layer = 30e-6;
  truth.hw.attention_compute_efficiency = 0.35;
  truth.hw.attention_memory_efficiency = 0.75;
  truth.hw.attention_floor_s_per_layer = 12e-6;
  truth.hw.interconnect_efficiency = 0.3;
  truth.hw.allreduce_latency_s = 25e-6;
  truth.hw.allreduce_switch_bytes = 131072;
  truth.hw.allreduce_large_latency_s = 45e-6;
  truth.engine.cpu_s = 1e-3;
  truth.engine.cpu_s_per_seq = 50e-6;
  const GpuSpec gpu = find_gpu("a100-80g");
  boost::random::mt19937_64 rng(3);
  boost::random::normal_distribution<double> noise(1.0, 0.01);
  ModelSpec layer = find_model("llama-2-7b");
  layer.num_layers = 1;
  ProfileSet p;
  p.dir = "synthetic";
  MlpProfile mlp;
  mlp.shape = {32, 32, 4096, 11008};
  for (int tp : {1, 2}) {
    const RooflineCostModel m(gpu, layer, tp, truth);
    for (int tokens = 1; tokens <= 4096; tokens += tokens < 64 ? 7 : 61) {
      const SeqShape s{tokens, 0, true, false};
      const StepCost c = m.cost(std::span(&s, 1));
      for (const std::string& op : gemm_ops()) {
        mlp.ops[tp][op].add(tokens, op == "attn_pre_proj" ? c.linear_s * 1e3 * noise(rng) : 0);
      }
      for (const std::string& op : elementwise_ops()) {
        mlp.ops[tp][op].add(tokens, op == "add" ? c.elementwise_s * 1e3 * noise(rng) : 0);
      }
    }
    for (auto& [name, curve] : mlp.ops[tp])
      curve.finish();
  }
  p.mlp.push_back(mlp);
  AttentionProfile a;
  a.shape = {64, 8, 8192, 0};
  a.tp = 2;
  ModelSpec attn = layer;
  attn.hidden_size = 8192;
  attn.num_heads = 64;
  attn.num_kv_heads = 8;
  const RooflineCostModel am(gpu, attn, 2, truth);
  for (int chunk : {64, 256, 1024, 2048}) {
    for (int ctx = 0; ctx + chunk <= 4096; ctx += 512) {
      const SeqShape s{chunk, ctx, true, false};
      a.prefill[chunk].add(ctx, am.cost(std::span(&s, 1)).attention_s * 1e3 * noise(rng));
    }
  }
  for (int batch : {1, 4, 16, 64, 128}) {
    for (int ctx = 256; ctx <= 4096; ctx += 768) {
      const std::vector<SeqShape> s(size_t(batch), SeqShape{1, ctx, false, false});
      a.decode[batch].add(ctx, am.cost(s).attention_s * 1e3 * noise(rng));
    }
  }
  for (auto* m : {&a.prefill, &a.decode}) {
    for (auto& [k, curve] : *m)
      curve.finish();
  }
  p.attention = a;
  AllReduceProfile ar;
  for (int workers : {2, 4}) {
    const RooflineCostModel m(gpu, layer, workers, truth);
    for (double bytes = 1e4; bytes < 1e8; bytes *= 1.5) {
      ar.by_workers[workers].add(bytes, m.allreduce_seconds(bytes) * 1e3 * noise(rng));
    }
    ar.by_workers[workers].finish();
  }
  p.allreduce = ar;
  CpuProfile cpu;
  for (int b = 1; b <= 256; b *= 2) {
    cpu.per_iteration.add(b,
                          (truth.engine.cpu_s + truth.engine.cpu_s_per_seq * b) * 1e3 * noise(rng));
  }
  cpu.per_iteration.finish();
  p.cpu = cpu;

  const RooflineParams fit = fit_profiles(p, gpu);
  CHECK(fit.hw.linear_tile_tokens == 128);
  for (const auto& f : hardware_param_fields()) {
    if (std::string(f.name).rfind("custom_", 0) == 0 || std::string(f.name).rfind("moe_", 0) == 0) {
      continue;  // not in Vidur's profiles: left as they are
    }
    INFO(f.name);
    CHECK(fit.hw.*f.member == Approx(truth.hw.*f.member).epsilon(0.08));
  }
  CHECK(fit.engine.cpu_s == Approx(truth.engine.cpu_s).epsilon(0.08));
  CHECK(fit.engine.cpu_s_per_seq == Approx(truth.engine.cpu_s_per_seq).epsilon(0.08));
  // And through calibrate_from_profiles, with cross-validation on llama-2-7b's steps.
  const CalibrationResult r = calibrate_from_profiles(p, gpu, find_model("llama-2-7b"), 2, 3);
  CHECK(r.cv.n > 0);
  CHECK(r.cv.mape < 0.03);
}

TEST_CASE("calibration: a step log is fitted on whole steps", "[calibration]") {
  // Steps timed by a known roofline, written as a user's vLLM step log would be.
  // The A100 fit's kernels, eager, on a slower host than Vidur's.
  RooflineParams truth{hardware_params(GpuArch::kAmpere), EngineParams{}};
  // A GEMM latency is one more constant per step, which a step log cannot tell from the CPU's.
  truth.hw.linear_latency_s_per_layer = 0;
  truth.engine.cpu_s = 2e-3;
  truth.engine.cpu_s_per_seq = engine_params(Engine::kV0).cpu_s_per_seq;
  const GpuSpec gpu = find_gpu("a100-80g");
  const ModelSpec model = find_model("llama-3-8b");
  const RooflineCostModel m(gpu, model, 1, truth);
  std::string csv =
      "prefill_tokens,decode_tokens,prefill_context_tokens,decode_context_tokens,batch_size,"
      "measured_ms\n";
  for (int decodes : {0, 1, 8, 32, 128}) {
    for (int prefill : {0, 64, 512, 2048}) {
      for (int ctx : {256, 2048}) {
        if (decodes + prefill == 0) continue;
        StepLogRow r{prefill,
                     decodes,
                     prefill > 0 ? ctx : 0,
                     int64_t(decodes) * ctx,
                     decodes + (prefill > 0 ? 1 : 0),
                     0};
        r.measured_ms = m.cost(step_shape(r)).seconds * 1e3;
        char line[160];
        std::snprintf(line, sizeof line, "%lld,%lld,%lld,%lld,%lld,%.9f\n",
                      (long long)r.prefill_tokens, (long long)r.decode_tokens,
                      (long long)r.prefill_context_tokens, (long long)r.decode_context_tokens,
                      (long long)r.batch_size, r.measured_ms);
        csv += line;
      }
    }
  }
  const std::vector<StepLogRow> log = read_step_log(fixture("steps.csv", csv));
  REQUIRE(log.size() == 38);
  const CalibrationResult r = calibrate_from_step_log(log, gpu, model, 1, 4);
  CHECK(r.fitted.mape < 0.02);
  CHECK(r.cv.mape < 0.05);
  CHECK(r.params.engine.cpu_s == Approx(2e-3).epsilon(0.15));
}

TEST_CASE("calibration: step logs with bad rows name the line and field", "[calibration][errors]") {
  const std::string header =
      "prefill_tokens,decode_tokens,prefill_context_tokens,decode_context_tokens,measured_ms\n";
  CHECK_THROWS_WITH(read_step_log(fixture("s1.csv", header + "10,2,0,100,5\n-1,2,0,100,5\n")),
                    Catch::Contains("s1.csv:3: field 'prefill_tokens'"));
  CHECK_THROWS_WITH(read_step_log(fixture("s2.csv", header + "10,2,0,100,0\n")),
                    Catch::Contains("s2.csv:2: field 'measured_ms': must be in [1e-06, 1e+07] ms"));
  CHECK_THROWS_WITH(read_step_log(fixture("s3.csv", "prefill_tokens,measured_ms\n1,2\n")),
                    Catch::Contains("field 'decode_tokens': missing column"));
}

TEST_CASE("calibration files round-trip, and bad ones name the key", "[calibration][errors]") {
  CalibrationResult r;
  r.params = {hardware_params(GpuArch::kHopper), engine_params(Engine::kV0)};
  r.params.hw.allreduce_latency_s = 1.2345678901234567e-5;
  r.source = "test";
  const std::string path = fixture("cal.ini", "");
  write_calibration(path, find_gpu("h100-sxm"), find_model("llama-3-8b"), r);
  const CalibrationFile back = read_calibration(path);
  CHECK(back.gpu == "h100-sxm");
  CHECK(back.arch == "hopper");
  CHECK_THAT(back.describe(), Catch::Contains("test"));
  RooflineParams applied;  // the uncalibrated values, every key of the file set over them
  apply_calibration(back, applied.hw, applied.engine);
  for (const auto& f : hardware_param_fields()) {
    INFO(f.name);
    CHECK(applied.hw.*f.member == r.params.hw.*f.member);  // bit for bit
  }
  CHECK(applied.engine.cpu_s == r.params.engine.cpu_s);
  CHECK(applied.engine.cpu_s_per_seq == r.params.engine.cpu_s_per_seq);
  CHECK(back.applies_to(find_gpu("h100-sxm")));
  CHECK(!back.applies_to(find_gpu("h200-sxm")));  // gpu = names one GPU

  // Every key is optional: a partial file changes what it names and nothing else.
  const CalibrationFile part =
      read_calibration(fixture("part.ini",
                               "arch = hopper\nlinear_memory_efficiency = 0.5\n"
                               "v1_cpu_s = 0.002\nfrontend_latency_s = 0.004\n"));
  CHECK(part.applies_to(find_gpu("h200-sxm")));  // arch = names every Hopper GPU
  CHECK(!part.applies_to(find_gpu("a100-80g")));
  HardwareParams hw = hardware_params(GpuArch::kHopper);
  EngineParams v1 = engine_params(Engine::kV1), v0 = engine_params(Engine::kV0);
  apply_calibration(part, hw, v1);
  apply_calibration(part, hw, v0);
  CHECK(hw.linear_memory_efficiency == 0.5);
  CHECK(hw.attention_memory_efficiency ==
        hardware_params(GpuArch::kHopper).attention_memory_efficiency);
  CHECK(v1.cpu_s == 0.002);
  CHECK(v0.cpu_s == engine_params(Engine::kV0).cpu_s);  // v1_ keys are V1's only
  CHECK(part.frontend_latency_s == 0.004);
  // Engine keys alone apply on any GPU; the older names are V0's.
  const CalibrationFile engine_only =
      read_calibration(fixture("eng.ini", "cpu_overhead_s = 0.003\nv1_floor_fraction = 0.5\n"));
  CHECK(engine_only.applies_to(find_gpu("l40s")));
  apply_calibration(engine_only, hw, v0);
  CHECK(v0.cpu_s == 0.003);

  CHECK_THROWS_WITH(read_calibration(fixture("c1.ini", "knee_sharpness = 2\n")),
                    Catch::Contains("c1.ini: field 'gpu': hardware parameters belong to one GPU"));
  CHECK_THROWS_WITH(
      read_calibration(fixture("c2.ini",
                               "gpu = h100-sxm\nknee_sharpness = 2\n"
                               "linear_tile_tokens = 64\n"
                               "linear_memory_efficiency = 1.5\n")),
      Catch::Contains("c2.ini:4: field 'linear_memory_efficiency': 1.5 is out of range"));
  CHECK_THROWS_WITH(read_calibration(fixture("c3.ini", "arch = volta\nv1_cpu_s = 0.001\n")),
                    Catch::Contains("c3.ini:1: field 'arch': unknown GPU architecture 'volta'"));
  CHECK_THROWS_WITH(read_calibration(fixture("c4.ini", "v2_cpu_s = 0.001\n")),
                    Catch::Contains("c4.ini:1: field 'v2_cpu_s'"));
}

TEST_CASE("cli: calibrate, fidelity and --calibration on the fixture profiles",
          "[cli][calibration]") {
  using servesim::test::call_cli;
  const std::string dir = fixture_profiles("cli");
  const std::string cal = (fs::temp_directory_path() / "servesim_cli_cal.ini").string();
  auto r = call_cli(
      {"calibrate", "--profiles", dir, "--model", "llama-2-7b", "--folds", "2", "-o", cal});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("2-fold cross-validated: MAPE"));
  CHECK_THAT(r.out, !Catch::Contains("nan") && !Catch::Contains("inf%"));
  r = call_cli({"fidelity", "--profiles", dir, "--model", "llama-2-7b", "--calibration", cal});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("composed step"));
  CHECK_THAT(r.out, Catch::Contains("roofline, calibrated"));
  const std::string json = (fs::temp_directory_path() / "servesim_cli_cal.json").string();
  r = call_cli({"run", "--model", "llama-2-7b", "--gpu", "a100-80g", "--max-model-len", "4096",
                "--scheduler", "chunked", "--num-requests", "30", "--calibration", cal, "--json",
                json});
  REQUIRE(r.code == 0);
  {
    std::ifstream f(json);
    const auto j = nlohmann::json::parse(f);
    CHECK_THAT(j["config"]["cost_model"]["hardware"]["source"].get<std::string>(),
               Catch::Contains(cal));
    const CalibrationFile used = read_calibration(cal);
    HardwareParams hw;
    EngineParams v0;
    apply_calibration(used, hw, v0);
    CHECK(j["config"]["cost_model"]["hardware"]["linear_memory_efficiency"].get<double>() ==
          hw.linear_memory_efficiency);
    // The fit's V0 CPU terms are the V0 engine's; a run on V1 keeps V1's own.
    CHECK(j["config"]["cost_model"]["engine"]["name"] == "v0");
    CHECK(j["config"]["cost_model"]["engine"]["v0_cpu_s"].get<double>() == v0.cpu_s);
  }
  // A calibration is for the GPU it was fitted on.
  r = call_cli({"run", "--gpu", "h100-sxm", "--num-requests", "5", "--calibration", cal});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("was fitted for a100-80g, not h100-sxm"));
  r = call_cli({"run", "--model", "llama-2-7b", "--gpu", "a100-80g", "--max-model-len", "4096",
                "--num-requests", "30", "--cost-model", "table", "--profiles", dir});
  CHECK(r.code == 0);
  CHECK(call_cli({"run", "--cost-model", "table"}).code == 2);
  CHECK(call_cli({"run", "--cost-model", "oracle"}).code == 2);
  CHECK(call_cli({"fidelity", "--model", "llama-2-7b"}).code == 2);
  CHECK(call_cli({"calibrate", "-o", cal}).code == 2);  // neither --profiles nor --step-log
}

TEST_CASE("profiles: a directory of several GPUs gives the one asked for", "[calibration]") {
  CHECK(gpu_family("h100-sxm") == "h100");
  CHECK(gpu_family("a100-80g") == "a100");
  CHECK(profile_path_family("compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv") == "h100");
  CHECK(profile_path_family("network/a100_pairwise_nvlink/all_reduce.csv") == "a100");
  CHECK(profile_path_family("legacy/attention.csv").empty());
  CHECK(profile_path_family("h100.csv").empty());  // only directories name a GPU
  const fs::path dir = fs::temp_directory_path() / "servesim_profiles_two_gpus";
  fs::remove_all(dir);
  for (const char* gpu : {"a100", "h100"}) {
    fs::create_directories(dir / "compute" / gpu / "m");
    const double scale = std::string(gpu) == "a100" ? 1 : 0.5;
    fixture("../servesim_profiles_two_gpus/compute/" + std::string(gpu) + "/m/mlp.csv",
            mlp_header() + mlp_row(1, 1, 0.01 * scale) + mlp_row(64, 1, 0.04 * scale));
  }
  const ProfileSet both = load_profiles(dir.string());
  CHECK(both.mlp.size() == 2);
  const ProfileSet a100 = load_profiles(dir.string(), "a100-80g");
  const ProfileSet h100 = load_profiles(dir.string(), "h100-sxm");
  REQUIRE(a100.mlp.size() == 1);
  REQUIRE(h100.mlp.size() == 1);
  CHECK(h100.mlp[0].ops.at(1).at("attn_pre_proj").ys()[1] ==
        Approx(0.5 * a100.mlp[0].ops.at(1).at("attn_pre_proj").ys()[1]));
  CHECK_THROWS_WITH(load_profiles(dir.string(), "l4"),
                    Catch::Contains("no profile of l4") && Catch::Contains("a100, h100"));
}
