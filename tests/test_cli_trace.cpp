// `servesim trace ...` and replaying traces through `run` and `compare`.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_helpers.hpp"
#include "trace_fixtures.hpp"

using namespace servesim;
using servesim::test::fixture;
namespace fs = std::filesystem;

namespace {

using Result = servesim::test::CliResult;
using servesim::test::call_cli;

std::string tmp(const std::string& name) {
  return (fs::temp_directory_path() / "servesim_trace_fixtures" / name).string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

const std::string kAzure =
    "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
    "2023-11-16 18:17:03.9799600,480,10\r\n"
    "2023-11-16 18:17:04.0319800,x,8\r\n"
    "2023-11-16 18:17:05.0000000,300,20\r\n"
    "2023-11-16 18:17:06.5000000,200,5";

}  // namespace

TEST_CASE("cli trace: import, info and replay report every row", "[cli][traces]") {
  const auto csv = fixture("cli_azure.csv", kAzure);
  Result r = call_cli({"trace", "import", csv, "-o", tmp("cli_azure.h5")});
  CHECK(r.code == 2);  // the bad row stops the import
  CHECK_THAT(r.err, Catch::Contains("cli_azure.csv:3: field 'ContextTokens'"));

  r = call_cli({"trace", "import", csv, "--skip-bad-rows", "-o", tmp("cli_azure.h5")});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("3 requests (azure)"));
  CHECK_THAT(r.out, Catch::Contains("skipped 1 bad row"));
  CHECK_THAT(r.out, Catch::Contains("cli_azure.csv:3: field 'ContextTokens'"));

  r = call_cli({"trace", "info", tmp("cli_azure.h5")});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("rows: 4 read, 3 kept; skipped: 1 bad"));
  CHECK_THAT(r.out, Catch::Contains("--skip-bad-rows"));  // the import options are recorded

  r = call_cli({"run", "--trace", tmp("cli_azure.h5"), "--model", "llama-3-8b", "--gpu", "a100-80g",
                "--json", tmp("cli_run.json")});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("4 rows, 3 replayed, 1 skipped"));
  const auto j = read_json(tmp("cli_run.json"));
  CHECK(j["requests"]["total"] == 3);
  CHECK(j["config"]["workload"]["kind"] == "trace");
  CHECK(j["config"]["workload"]["rows_read"] == 4);
  CHECK(j["config"]["workload"]["skipped_bad"] == 1);
  CHECK(j["config"]["workload"]["replayed"] == 3);
}

TEST_CASE("cli trace: what-if transforms on run, compare and import", "[cli][traces]") {
  const auto csv = fixture("cli_azure_ok.csv",
                           "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                           "2023-11-16 18:17:00.0,480,10\n2023-11-16 18:17:10.0,300,20\n"
                           "2023-11-16 18:17:20.0,200,5\n2023-11-16 18:17:30.0,100,5\n");
  Result r = call_cli({"compare", "--trace", csv, "--scheduler", "vllm-v0,chunked:512", "--window",
                       "5:100", "--input-trim", "150", "--json", tmp("cli_cmp.json")});
  REQUIRE(r.code == 0);
  const auto j = read_json(tmp("cli_cmp.json"));
  CHECK(j["runs"][0]["requests"]["total"] == 3);
  CHECK(j["runs"][0]["config"]["workload"]["outside_window"] == 1);
  CHECK(j["runs"][0]["config"]["workload"]["options"] == "--window 5:100 --input-trim 150");

  r = call_cli({"trace", "import", csv, "--request-rate", "10", "--max-output-len", "6", "-o",
                tmp("cli_rate.h5")});
  REQUIRE(r.code == 0);
  r = call_cli({"trace", "info", tmp("cli_rate.h5")});
  CHECK_THAT(r.out, Catch::Contains("mean rate 10.000 req/s"));
  CHECK_THAT(r.out, Catch::Contains("clipped inputs: 0, outputs: 2"));
}

TEST_CASE("cli trace: length-only traces need --request-rate, synth writes a trace",
          "[cli][traces]") {
  const auto csv = fixture("cli_len.csv",
                           "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
                           "100,10,110,10\n200,20,220,10\n");
  Result r = call_cli({"run", "--trace", csv});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("no arrival times: give --request-rate"));
  r = call_cli({"run", "--trace", csv, "--request-rate", "2"});
  CHECK(r.code == 0);

  r = call_cli({"trace", "synth", "--num-requests", "40", "--input-len", "fixed:50", "-o",
                tmp("cli_synth.h5")});
  REQUIRE(r.code == 0);
  r = call_cli({"trace", "info", tmp("cli_synth.h5")});
  CHECK_THAT(r.out, Catch::Contains("rows: 40 read, 40 kept"));
  CHECK_THAT(r.out, Catch::Contains("(synthetic)"));
  r = call_cli({"run", "--trace", tmp("cli_synth.h5"), "--json", tmp("cli_synth.json")});
  REQUIRE(r.code == 0);
  CHECK(read_json(tmp("cli_synth.json"))["requests"]["total"] == 40);
}

TEST_CASE("cli trace: bad trace input exits 2 with one clear line", "[cli][traces][errors]") {
  const auto csv = fixture("cli_azure_ok2.csv",
                           "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:00.0,48,1\n");
  const auto junk = fixture("cli_junk.h5", std::string("\x89HDF\r\n\x1a\n", 8) + "garbage");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--trace", csv, "--num-requests", "5"}, "not used with --trace"},
      {{"run", "--trace", csv, "--input-len", "fixed:5"}, "not used with --trace"},
      {{"run", "--trace", junk}, "cli_junk.h5"},
      {{"run", "--trace", tmp("nope.csv")}, "cannot open"},
      {{"trace", "import", csv}, "output"},
      {{"trace", "import", "-o", tmp("x.h5")}, "input"},
      {{"trace", "info", csv, "--window", "9:1"}, "window"},
      {{"trace", "info", csv, "--trace-format", "parquet"}, "unknown format"},
      {{"trace", "frobnicate"}, "expected import, info or synth"},
  };
  for (const auto& [args, expect] : cases) {
    INFO(args[0] << " " << args[1]);
    const Result r = call_cli(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(expect));
  }
}
