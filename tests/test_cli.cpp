// The command line: outputs, determinism, exit codes and error messages for bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_helpers.hpp"

using namespace servesim;
namespace fs = std::filesystem;

namespace {

using Result = servesim::test::CliResult;
using servesim::test::call_cli;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;

}  // namespace

TEST_CASE("cli: run prints a summary and writes JSON and CSV with the documented keys", "[cli]") {
  const fs::path dir = scratch("run");
  const Result r = call_cli({"run", "--num-requests", "300", "--json", (dir / "s.json").string(),
                             "--requests-csv", (dir / "r.csv").string()});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("ttft_ms"));
  CHECK_THAT(r.out, Catch::Contains("300 total"));
  const auto j = nlohmann::json::parse(slurp(dir / "s.json"));
  for (const char* key :
       {"scheduler", "max_num_batched_tokens", "requests", "ttft_ms", "itl_ms", "tpot_ms", "e2e_ms",
        "queue_ms", "otps", "throughput", "gpu", "preemptions", "steps", "makespan_s", "config"}) {
    CHECK(j.contains(key));
  }
  for (const char* key : {"mean", "p50", "p90", "p95", "p99", "max"})
    CHECK(j["ttft_ms"].contains(key));
  CHECK(j["requests"]["total"] == 300);
  CHECK(j["otps"].contains("p50_ratio"));
  CHECK(j["gpu"].contains("mbu"));
  CHECK(j["config"]["workload"]["num_requests"] == 300);
  const std::string csv = slurp(dir / "r.csv");
  CHECK(csv.rfind("id,arrival_s,input_tokens,output_tokens,first_token_s,finish_s,ttft_ms,e2e_ms,"
                  "tpot_ms,otps,max_itl_ms,queue_ms,preemptions,cached_tokens,status\n",
                  0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 301);
}

TEST_CASE("cli: the same seed gives byte-identical JSON and CSV, another seed does not",
          "[cli][determinism]") {
  const fs::path dir = scratch("determinism");
  auto run = [&](const std::string& tag, const std::string& seed) {
    const Result r =
        call_cli({"run", "--scheduler", "chunked:512", "--num-requests", "500", "--request-rate",
                  "12", "--seed", seed, "--json", (dir / (tag + ".json")).string(),
                  "--requests-csv", (dir / (tag + ".csv")).string()});
    REQUIRE(r.code == 0);
    return slurp(dir / (tag + ".json")) + slurp(dir / (tag + ".csv"));
  };
  const std::string a = run("a", "5"), b = run("b", "5"), c = run("c", "6");
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a.size() > 10000);
}

TEST_CASE("cli: compare runs each policy on the same requests and says what the table shows",
          "[cli]") {
  const fs::path dir = scratch("compare");
  const Result r =
      call_cli({"compare", "--num-requests", "300", "--scheduler", "vllm-v0,chunked:256",
                "--scheduler", "chunked", "--json", (dir / "c.json").string()});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("chunked:256"));
  CHECK_THAT(r.out, Catch::Contains("chunked:2048"));
  CHECK_THAT(r.out, Catch::Contains("lowest TTFT p50"));
  const auto j = nlohmann::json::parse(slurp(dir / "c.json"));
  REQUIRE(j["runs"].size() == 3);
  CHECK(j["runs"][1]["max_num_batched_tokens"] == 256);
  // The same requests: every run completes all of them, so the tokens served are the same.
  for (int i = 0; i < 3; ++i)
    REQUIRE(j["runs"][i]["requests"]["completed"] == 300);
  auto tokens = [&](int i) {
    return j["runs"][i]["throughput"]["total_tokens_per_s"].get<double>() *
           j["runs"][i]["makespan_s"].get<double>();
  };
  CHECK(tokens(0) == Approx(tokens(1)).epsilon(1e-9));
  CHECK(tokens(0) == Approx(tokens(2)).epsilon(1e-9));
}

TEST_CASE("cli: list prints the catalogues", "[cli]") {
  CHECK_THAT(call_cli({"list", "gpus"}).out, Catch::Contains("h100-sxm"));
  CHECK_THAT(call_cli({"list", "models"}).out, Catch::Contains("mixtral-8x7b"));
  CHECK_THAT(call_cli({"list", "schedulers"}).out, Catch::Contains("vllm-v0"));
  CHECK(call_cli({"list", "tables"}).code == 2);
}

TEST_CASE("cli: --help on each command exits 0", "[cli]") {
  for (const char* cmd : {"run", "compare"}) {
    const Result r = call_cli({cmd, "--help"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("--max-num-batched-tokens"));
  }
  CHECK(call_cli({"--help"}).code == 0);
  CHECK(call_cli({}).code == 2);
}

TEST_CASE("cli: bad input is one clear line on stderr and exit code 2", "[cli][errors]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--no-such-flag"}, "no-such-flag"},
      {{"frobnicate"}, "unknown command"},
      {{"run", "--model", "gpt-9"}, "unknown model 'gpt-9'"},
      {{"run", "--gpu", "tpu-v9"}, "unknown GPU 'tpu-v9'"},
      {{"run", "--scheduler", "fifo"}, "unknown scheduler 'fifo'"},
      {{"run", "--scheduler", "chunked:0"}, "token budget"},
      {{"run", "--scheduler", "chunked:abc"}, "token budget"},
      {{"run", "--max-num-batched-tokens", "-1"}, "max-num-batched-tokens"},
      {{"run", "--input-len", "normal:5"}, "field 'input-len'"},
      {{"run", "--output-len", "uniform:9:2"}, "field 'output-len'"},
      {{"run", "--request-rate", "fast"}, "field 'request-rate'"},
      {{"run", "--num-requests", "0"}, "num-requests"},
      {{"run", "--num-requests", "ten"}, "num-requests"},
      {{"run", "--gpu-memory-utilization", "1.5"}, "gpu-memory-utilization"},
      {{"run", "--tensor-parallel-size", "3"}, "must divide"},
      {{"run", "--model", "llama-2-70b", "--gpu", "l4"}, "does not fit"},
      {{"run", "--config", "/nonexistent/x.ini"}, "/nonexistent/x.ini: cannot open: no such file"},
      {{"run", "--config", "/tmp"}, "/tmp: cannot read: is a directory"},
      {{"run", "--seed", "-1"}, "field 'seed'"},
      {{"run", "--scheduler", "chunked:512", "--max-num-batched-tokens", "1024"}, "contradicts"},
      {{"run", "--max-num-seqs", "1000000000000"}, "max-num-seqs"},
      {{"run", "--num-requests", "5000000000"}, "num-requests"},
      {{"run", "--request-rate", "1e-308"}, "request-rate"},
      {{"run", "--request-rate", "1e308", "--burstiness", "10"}, "request-rate"},
      {{"run", "--burstiness", "1e-310"}, "burstiness"},
      {{"run", "--json", "/nonexistent/dir/x.json", "--num-requests", "5"},
       "cannot write: folder '/nonexistent/dir' does not exist"},
  };
  for (const auto& [args, expect] : cases) {
    INFO(args[0] << " " << (args.size() > 1 ? args[1] : "") << " "
                 << (args.size() > 2 ? args[2] : ""));
    const Result r = call_cli(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(expect));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') <= 12);  // usage at most, no trace
  }
}

TEST_CASE("cli: --config reads flags from INI, the command line wins, errors name the line",
          "[cli][errors]") {
  const fs::path dir = scratch("config");
  write(dir / "ok.ini", "# a comment\nnum-requests = 40\nscheduler = vllm-v0\nseed = 3\n");
  const fs::path json = dir / "o.json";
  Result r = call_cli(
      {"run", "--config", (dir / "ok.ini").string(), "--seed", "9", "--json", json.string()});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(json));
  CHECK(j["requests"]["total"] == 40);
  CHECK(j["scheduler"] == "vllm-v0");
  CHECK(j["config"]["workload"]["seed"] == 9);

  write(dir / "typo.ini", "num-requests = 40\nmax-num-seq = 8\n");
  r = call_cli({"run", "--config", (dir / "typo.ini").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("typo.ini:2: field 'max-num-seq': unknown key"));

  write(dir / "bad.ini", "seed = 1\nnum-requests = many\n");
  r = call_cli({"run", "--config", (dir / "bad.ini").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("bad.ini:2: field 'num-requests'"));

  write(dir / "syntax.ini", "seed 1\n");
  r = call_cli({"run", "--config", (dir / "syntax.ini").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("syntax.ini:1:"));

  write(dir / "nokey.ini", "seed = 1\n= 5\n");
  r = call_cli({"run", "--config", (dir / "nokey.ini").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("nokey.ini:2: missing key"));

  write(dir / "nested.ini", "config = other.ini\n");
  r = call_cli({"run", "--config", (dir / "nested.ini").string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("nested.ini:1: field 'config': only allowed on the command"));

  write(dir / "bom.ini", "\xEF\xBB\xBFnum-requests = 7\n");
  r = call_cli({"run", "--config", (dir / "bom.ini").string(), "--json", json.string()});
  CHECK(r.code == 0);
  CHECK(nlohmann::json::parse(slurp(json))["requests"]["total"] == 7);
}

static void e_check(const Result& r, const std::string& says) {
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains(says));
}

TEST_CASE("cli: a GPU is known by its architecture and never by its name", "[cli][cost]") {
  // An H100's figures under another name got other defaults (TTFT p50 50.7 vs 43.2 ms): the
  // hardware fit and vLLM's large-GPU defaults came from the name.
  const fs::path dir = scratch("gpu_arch");
  write(dir / "mine.ini",
        "name = my-accelerator\nbf16_tflops = 989.4\nfp8_tflops = 1978.9\nhbm_gib = 79.22\n"
        "hbm_gb_per_s = 3350\ninterconnect_gb_per_s = 450\nnetwork_gb_per_s = 50\n"
        "arch = hopper\n");
  const std::vector<std::string> load = {"--num-requests", "300", "--scheduler", "vllm-v1"};
  std::vector<std::string> named = {"run", "--gpu", "h100-sxm", "--json",
                                    (dir / "a.json").string()};
  std::vector<std::string> file = {"run", "--gpu-file", (dir / "mine.ini").string(), "--json",
                                   (dir / "b.json").string()};
  named.insert(named.end(), load.begin(), load.end());
  file.insert(file.end(), load.begin(), load.end());
  REQUIRE(call_cli(named).code == 0);
  REQUIRE(call_cli(file).code == 0);
  const auto a = nlohmann::json::parse(slurp(dir / "a.json"));
  const auto b = nlohmann::json::parse(slurp(dir / "b.json"));
  CHECK(a["ttft_ms"] == b["ttft_ms"]);
  CHECK(a["itl_ms"] == b["itl_ms"]);
  CHECK(a["config"]["max_num_seqs"] == b["config"]["max_num_seqs"]);  // V1's 1024 on both
  CHECK(b["config"]["max_num_seqs"] == 1024);
  CHECK(a["config"]["cost_model"]["hardware"] == b["config"]["cost_model"]["hardware"]);
  // Without arch the file is refused, naming the key.
  write(dir / "noarch.ini",
        "name = g\nbf16_tflops = 989\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
        "interconnect_gb_per_s = 450\n");
  Result e = call_cli({"run", "--gpu-file", (dir / "noarch.ini").string()});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("noarch.ini") && Catch::Contains("arch"));
  write(dir / "volta.ini",
        "name = g\nbf16_tflops = 125\nhbm_gib = 32\nhbm_gb_per_s = 900\n"
        "interconnect_gb_per_s = 150\narch = volta\n");
  e = call_cli({"run", "--gpu-file", (dir / "volta.ini").string()});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("volta.ini:6: field 'arch': unknown GPU architecture"));
}

TEST_CASE("cli: compare holds the engine and hardware fixed across its rows", "[cli]") {
  const std::vector<std::string> load = {"compare", "--num-requests", "200"};
  Result r = call_cli(load);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("every row shares") &&
                        Catch::Contains("engine v1 (async scheduling)") &&
                        Catch::Contains("hardware hopper"));
  CHECK_THAT(r.out, !Catch::Contains("* "));
  // vLLM V1 caps a max_num_seqs not given at the token budget (EngineArgs), so chunked:512 runs
  // 512 sequences where the others run 1,024: its budget's doing, listed as its KV blocks are.
  CHECK_THAT(r.out, Catch::Contains("max_num_seqs (vLLM V1 caps its default at the token budget): "
                                    "chunked:512 512\n"));
  // V0 policies only: the V0 engine for every row.
  r = call_cli({"compare", "--num-requests", "200", "--scheduler", "vllm-v0,chunked"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("engine v0"));
  CHECK_THAT(r.out, !Catch::Contains("* "));
  // Each on its own engine, as vLLM ran them: the rows that differ say how, and the verdict too.
  r = call_cli({"compare", "--num-requests", "200", "--scheduler", "chunked,vllm-v1", "--engine",
                "per-policy"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("* engine v1, max_num_seqs 1024"));
  CHECK_THAT(r.out, Catch::Contains("differ in more than their scheduling policy"));
  r = call_cli({"compare", "--num-requests", "200", "--engine", "v0"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("engine v0") && !Catch::Contains("* "));
  // The V1 engine's own flag on the V0 engine would do nothing.
  e_check(call_cli({"run", "--scheduler", "chunked", "--no-async-scheduling"}),
          "field 'no-async-scheduling'");
  e_check(call_cli({"run", "--engine", "per-policy"}), "field 'engine'");
  e_check(call_cli({"run", "--engine", "v2"}), "unknown engine 'v2'");
  CHECK(call_cli({"run", "--scheduler", "chunked", "--engine", "v1", "--no-async-scheduling",
                  "--num-requests", "20"})
            .code == 0);
}

TEST_CASE("cli: --gpu-file and --model-file define new hardware and models", "[cli]") {
  const fs::path dir = scratch("files");
  write(dir / "gpu.ini",
        "name = my-gpu\nbf16_tflops = 500\nhbm_gib = 96\nhbm_gb_per_s = 4000\n"
        "interconnect_gb_per_s = 400\narch = hopper\n");
  write(dir / "model.ini",
        "name = my-model\nnum_hidden_layers = 16\nhidden_size = 2048\nnum_attention_heads = 16\n"
        "num_key_value_heads = 4\nintermediate_size = 8192\nvocab_size = 50000\n"
        "max_position_embeddings = 4096\n");
  const fs::path json = dir / "o.json";
  const Result r = call_cli({"run", "--gpu-file", (dir / "gpu.ini").string(), "--model-file",
                             (dir / "model.ini").string(), "--num-requests", "50", "--input-len",
                             "fixed:100", "--output-len", "fixed:10", "--json", json.string()});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(json));
  CHECK(j["config"]["gpu"] == "my-gpu");
  CHECK(j["config"]["model"] == "my-model");
  CHECK(j["config"]["max_model_len"] == 4096);

  write(dir / "bad_gpu.ini",
        "name = g\nbf16_tflops = 500\nhbm_gib = -1\nhbm_gb_per_s = 1\n"
        "interconnect_gb_per_s = 1\narch = hopper\n");
  Result e = call_cli({"run", "--gpu-file", (dir / "bad_gpu.ini").string()});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("field 'hbm_gib'"));
  write(dir / "bad_model.ini",
        "name = m\nnum_hidden_layers = 2\nhidden_size = 64\n"
        "num_attention_heads = 6\nnum_key_value_heads = 4\n"
        "intermediate_size = 10\nvocab_size = 10\n"
        "max_position_embeddings = 100\n");
  e = call_cli({"run", "--model-file", (dir / "bad_model.ini").string()});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("field 'num_key_value_heads'"));
  write(dir / "missing.ini", "name = m\nhidden_size = 64\n");
  e = call_cli({"run", "--model-file", (dir / "missing.ini").string()});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("missing.ini"));
}

TEST_CASE("cli: a value holding a message placeholder is quoted in the error, not looped on",
          "[cli][errors]") {
  // Found by fuzz_config_client_mix: Boost.Program_options fills %value% in its messages in a
  // loop that never ends when the value holds "%value%" itself; `run --num-requests %value%`
  // hung, as did an unknown flag --%canonical_option% and the same in a --config file.
  const fs::path dir = servesim::test::scratch("cli_placeholders");
  servesim::test::write(dir / "c.ini", "num-requests = %value%\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--num-requests", "%value%"}, "the argument ('%value%') for option"},
      {{"run", "--%canonical_option%"}, "unrecognised option '--%canonical_option%'"},
      {{"run", "--%original_token%"}, "'--%original_token%'"},
      {{"sweep", "--num-requests", "%value%", "--out", (dir / "s.h5").string()}, "('%value%')"},
      {{"run", "--config", (dir / "c.ini").string()}, "c.ini:1: field 'num-requests'"},
  };
  for (const auto& [args, expect] : cases) {
    const auto r = call_cli(args);
    INFO(args[1]);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(expect));
  }
}
