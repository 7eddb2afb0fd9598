// Numbers at the boundary (issue 14's findings): every one of these ran to exit 0 with infinite,
// NaN, negative or overflowed figures before it was refused; each is now an error naming the
// flag or the file, line and field.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

namespace fs = std::filesystem;
using servesim::test::call_cli;
using servesim::test::refused;
using servesim::test::scratch;
using servesim::test::write;

TEST_CASE("boundaries: rates and traces past the 1e9 s a simulation may span",
          "[boundaries][cli]") {
  const fs::path dir = scratch("boundaries_time");
  // A rate so low that 5 requests would span 1e300 s gave a TTFT p50 of 0.0 ms.
  refused({"run", "--request-rate", "1e-300", "--num-requests", "5"}, "field 'request-rate'");
  // A Vidur trace row at 1e17 s gave an infinite OTPS.
  write(dir / "v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,10\n1e17,100,10\n");
  refused({"run", "--trace", (dir / "v.csv").string()}, "v.csv: field 'arrival'");
  // Azure rows 584 years apart overflowed int64 nanoseconds: a negative span, exit 0.
  write(dir / "az.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n1678-01-01 00:00:00.0000000,10,10\n"
        "2261-12-31 00:00:00.0000000,10,10\n");
  refused({"trace", "info", (dir / "az.csv").string()}, "az.csv:3: field 'TIMESTAMP'");
  const auto skipped = call_cli({"trace", "info", (dir / "az.csv").string(), "--skip-bad-rows"});
  CHECK(skipped.code == 0);
  CHECK_THAT(skipped.out, Catch::Contains("1 bad"));
}

TEST_CASE("boundaries: GPU, model and calibration files out of any physical range",
          "[boundaries][cli]") {
  const fs::path dir = scratch("boundaries_files");
  // A GPU of 1e-300 TFLOP/s gave latencies of 1e300 ms.
  write(dir / "g.ini",
        "name = g\nbf16_tflops = 1e-300\nhbm_gib = 80\nhbm_gb_per_s = 2000\n"
        "interconnect_gb_per_s = 600\narch = hopper\n");
  refused({"run", "--gpu-file", (dir / "g.ini").string()}, "g.ini:2: field 'bf16_tflops'");
  // Model file range errors name their line.
  write(dir / "m.ini",
        "name = m\nnum_hidden_layers = 2\nhidden_size = 64\nnum_attention_heads = 4\n"
        "intermediate_size = 0\nvocab_size = 100\nmax_position_embeddings = 512\n");
  refused({"run", "--model-file", (dir / "m.ini").string()}, "m.ini:5: field 'intermediate_size'");
  // A subnormal GEMM tile (inside [0, 4096]) made every step inf; a tile is 0 or >= 1 token.
  const std::string params =
      "gpu = h100-sxm\nknee_sharpness = 1.36\nlinear_compute_efficiency = 0.74\n"
      "linear_memory_efficiency = 0.85\nelementwise_memory_efficiency = 0.59\n"
      "elementwise_floor_s_per_layer = 2e-05\nattention_compute_efficiency = 0.28\n"
      "attention_memory_efficiency = 0.8\nattention_floor_s_per_layer = 1.3e-05\n"
      "interconnect_efficiency = 0.26\nallreduce_latency_s = 2.8e-05\n"
      "allreduce_switch_bytes = 524288\nallreduce_large_latency_s = 3.8e-05\n"
      "cpu_overhead_s = 0.00087\ncpu_overhead_s_per_seq = 3.6e-05\n";
  for (const char* tile : {"1e-320", "0.5"}) {
    INFO(tile);
    write(dir / "cal.ini", params + "linear_tile_tokens = " + tile + "\n");
    refused({"run", "--calibration", (dir / "cal.ini").string()},
            "cal.ini:16: field 'linear_tile_tokens'");
  }
  write(dir / "ok.ini", params + "linear_tile_tokens = 64\n");
  CHECK(call_cli({"run", "--calibration", (dir / "ok.ini").string(), "--num-requests", "5"}).code ==
        0);
}

TEST_CASE("boundaries: capacity --target-rate beyond any fleet", "[boundaries][cli]") {
  // 1e30 req/s printed -9223372036854775808 replicas.
  refused(
      {"capacity", "--target-rate", "1e30", "--num-requests", "20", "--slo", "ttft_p99_ms=2000"},
      "field 'target-rate'");
}

TEST_CASE("boundaries: --out refuses too many windows before it simulates", "[boundaries][cli]") {
  const fs::path dir = scratch("boundaries_windows");
  // Two requests 2e6 s apart: 2,000,001 one-second windows. This used to fail only after the
  // summary was printed and --json written, with a 301-digit number in the message.
  write(dir / "v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,10\n2e6,100,10\n");
  const auto r =
      call_cli({"run", "--trace", (dir / "v.csv").string(), "--out", (dir / "o.h5").string(),
                "--period-s", "1", "--json", (dir / "o.json").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("field 'period-s'"));
  CHECK_THAT(r.err, Catch::Contains("2e+06 s of arrivals"));
  CHECK(r.err.size() < 300);
  CHECK(r.out.empty());  // nothing printed, nothing written
  CHECK(!fs::exists(dir / "o.json"));
  CHECK(call_cli({"run", "--trace", (dir / "v.csv").string(), "--out", (dir / "o.h5").string(),
                  "--period-s", "3600"})
            .code == 0);
}

TEST_CASE("boundaries: text that is not UTF-8 reaches JSON as U+FFFD, not an internal error",
          "[boundaries][cli]") {
  const fs::path dir = scratch("boundaries_latin1");
  // A Latin-1 bad value kept in the trace's first errors, in a file whose name is Latin-1 too:
  // `--json` and `--out` ended in "internal error: [json.exception.type_error.316]", exit 3.
  const fs::path csv = dir / "caf\xE9.csv";
  write(csv,
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,10\n1,d\xE9j\xE0,10\n2,100,10\n");
  const std::string json = (dir / "o.json").string();
  const auto r = call_cli({"run", "--trace", csv.string(), "--skip-bad-rows", "--json", json,
                           "--out", (dir / "o.h5").string()});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const std::string text = servesim::test::slurp(json);
  const auto j = nlohmann::json::parse(text);  // valid JSON, hence valid UTF-8
  CHECK(j["config"]["workload"].dump().find("d\xEF\xBF\xBDj") != std::string::npos);
  CHECK(text.find("caf\xEF\xBF\xBD.csv") != std::string::npos);
  const auto c = call_cli({"compare", "--trace", csv.string(), "--skip-bad-rows", "--json", json});
  CHECK(c.code == 0);
  CHECK_NOTHROW(nlohmann::json::parse(servesim::test::slurp(json)));
}

TEST_CASE("boundaries: measured times too small to divide by", "[boundaries][cli]") {
  const fs::path dir = scratch("boundaries_tiny_times");
  // calibrate printed "fitted" with MAPE inf% from a step of 1e-320 ms and exited 0.
  write(dir / "steps.csv",
        "prefill_tokens,decode_tokens,prefill_context_tokens,decode_context_tokens,measured_ms\n"
        "512,0,512,0,30\n0,8,0,4096,1e-320\n");
  refused(
      {"calibrate", "--step-log", (dir / "steps.csv").string(), "-o", (dir / "cal.ini").string()},
      "steps.csv:3: field 'measured_ms': must be in [1e-06, 1e+07] ms");
  CHECK(!fs::exists(dir / "cal.ini"));
}

TEST_CASE("boundaries: messages about outputs, missing files and hostile INI text",
          "[boundaries][cli]") {
  const fs::path dir = scratch("boundaries_messages");
  const std::string d = dir.string();
  // An output path that is a directory said "cannot write: Success".
  refused({"run", "--num-requests", "5", "--out", d}, "cannot write: is a directory");
  refused({"run", "--num-requests", "5", "--json", d}, "cannot write: is a directory");
  refused({"run", "--num-requests", "5", "--json", d + "/no/such/dir/o.json"},
          "cannot write: folder '" + d + "/no/such/dir' does not exist");
  // A missing results file was "not a servesim results file: it holds no runs to choose".
  refused(
      {"diagnose", "--baseline", d + "/none.h5", "--current", d + "/none.h5", "--current-run", "x"},
      "none.h5: cannot open: no such file");
  // A NUL byte cut the message short; a bare CR went to the terminal raw; a 20 MB key was echoed
  // whole.
  write(dir / "nul.ini", std::string("model = llama\0-3.1-8b\n", 22));
  auto r = call_cli({"run", "--config", (dir / "nul.ini").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("llama\\x00-3.1-8b"));
  write(dir / "cr.ini", "model = llama\rboom\n");
  r = call_cli({"run", "--config", (dir / "cr.ini").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("llama\\rboom"));
  CHECK(r.err.find('\r') == std::string::npos);
  write(dir / "big.ini", std::string(20'000'000, 'k') + " = 1\n");
  r = call_cli({"run", "--config", (dir / "big.ini").string()});
  CHECK(r.code == 2);
  CHECK(r.err.size() < 20'000);
  CHECK_THAT(r.err, Catch::Contains("more bytes)"));
  // The sweep file's `jobs` named neither file nor line.
  write(dir / "sweep.ini", "num-requests = 5\njobs = many\n");
  refused({"sweep", "--config", (dir / "sweep.ini").string(), "--out", d + "/s.h5"},
          "sweep.ini:2: field 'jobs': 'many' must be an integer in 1..1024");
  // An inline `; comment` passed the syntax check and failed Program_options' pass.
  write(dir / "comment.ini", "num-requests = 5 ; a handful\nseed = 3 # and a seed\n");
  CHECK(call_cli({"run", "--config", (dir / "comment.ini").string()}).code == 0);
  write(dir / "g.ini",
        "name = g ; mine\nbf16_tflops = 900 ; dense\nhbm_gib = 80\nhbm_gb_per_s = 2000\n"
        "interconnect_gb_per_s = 600\narch = hopper\n");
  CHECK(call_cli({"run", "--gpu-file", (dir / "g.ini").string(), "--num-requests", "5"}).code == 0);
}

TEST_CASE("boundaries: the second round's numbers name the flag that is out of range",
          "[boundaries][cli]") {
  // Item 12: these failed with "field 'cost-model' ... out of any physical range", printing a
  // 300-digit time or "t = inf".
  const std::vector<std::string> pd = {"run",         "--num-requests",    "10",
                                       "--scheduler", "vllm-v1",           "--prefill-replicas",
                                       "1",           "--decode-replicas", "1"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  refused(
      {"run", "--dataset-name", "multi_turn", "--num-requests", "10", "--think-time-s", "1e300"},
      "field 'think-time-s'");
  refused({"run", "--dataset-name", "multi_turn", "--num-requests", "10", "--think-time-s", "2e6"},
          "field 'think-time-s': must be in [0, 1e6] seconds");
  refused(with(pd, {"--kv-transfer-gbps", "1e-300"}), "field 'kv-transfer-gbps'");
  refused(with(pd, {"--kv-transfer-latency-s", "1e9"}), "field 'kv-transfer-latency-s'");
  // Item 13: a subnormal bandwidth ran as the default interconnect (JSON identical to 0).
  refused(with(pd, {"--kv-transfer-gbps", "5e-324"}), "field 'kv-transfer-gbps'");
  CHECK(call_cli(with(pd, {"--kv-transfer-gbps", "0"})).code == 0);
  CHECK(call_cli(with(pd, {"--kv-transfer-gbps", "0.001"})).code == 0);
  for (const char* flag : {"think-time-s", "kv-transfer-gbps", "kv-transfer-latency-s"}) {
    const auto r = call_cli(with(pd, {std::string("--") + flag, "1e300"}));
    CHECK(r.code == 2);
    CHECK_THAT(r.err, !Catch::Contains("cost-model"));
    CHECK(r.err.size() < 300);
  }
  // Item 14: --num-seeds 3 --seed 2^63-1 ran seeds INT64_MAX, INT64_MIN, INT64_MIN+1.
  refused({"run", "--num-requests", "5", "--num-seeds", "3", "--seed", "9223372036854775807"},
          "field 'num-seeds'");
  CHECK(
      call_cli({"run", "--num-requests", "5", "--num-seeds", "2", "--seed", "9223372036854775806"})
          .code == 0);
  // Item 18: --model with --model-file, or --gpu with --gpu-file: the file silently won.
  const fs::path dir = scratch("boundaries_round2");
  write(dir / "g.ini",
        "name = g\narch = hopper\nbf16_tflops = 989\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
        "interconnect_gb_per_s = 450\n");
  refused({"run", "--gpu", "a100-80g", "--gpu-file", (dir / "g.ini").string()},
          "field 'gpu-file': and --gpu both name the GPU");
  write(dir / "m.ini",
        "name = m\nnum_hidden_layers = 2\nhidden_size = 64\nnum_attention_heads = 4\n"
        "intermediate_size = 128\nvocab_size = 100\nmax_position_embeddings = 512\n");
  refused({"run", "--model", "llama-2-7b", "--model-file", (dir / "m.ini").string()},
          "field 'model-file': and --model both name the model");
  refused({"calibrate", "--model", "llama-2-7b", "--model-file", (dir / "m.ini").string(),
           "--step-log", (dir / "s.csv").string(), "-o", (dir / "c.ini").string()},
          "field 'model-file'");
  CHECK(call_cli({"run", "--num-requests", "5", "--gpu-file", (dir / "g.ini").string()}).code == 0);
}
