// Defaults are today's vLLM (issue 42, item 4): run, sweep, capacity and check without a
// scheduler run vllm-v1 on the V1 engine and say so; compare's default keeps its four rows.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/results.hpp"
#include "analysis/run_spec.hpp"
#include "cli_helpers.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using servesim::test::call_cli;
using servesim::test::CliResult;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;

TEST_CASE("defaults: run without --scheduler is vllm-v1 on the V1 engine, and says so", "[cli]") {
  const fs::path dir = scratch("defaults_run");
  const fs::path js = dir / "run.json";
  CliResult r = call_cli({"run", "--num-requests", "60", "--json", js.string()});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("vllm-v1 (the default scheduler;"));
  const auto j = nlohmann::json::parse(slurp(js));
  CHECK(j["scheduler"] == "vllm-v1");
  CHECK(j["config"]["engine"] == "v1");
  CHECK(j["config"]["async_scheduling"] == true);
  // Speculative decoding needs V1's scheduler: the default takes it.
  r = call_cli({"run", "--num-requests", "30", "--speculative-config",
                R"({"method": "eagle3", "num_speculative_tokens": 2})", "--spec-acceptance-rate",
                "0.7"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  // Named, the header does not call it the default.
  r = call_cli({"run", "--num-requests", "30", "--scheduler", "vllm-v1"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, !Catch::Contains("the default scheduler"));
  // vLLM's switch alone: true is the default, false V0's prefill priority.
  r = call_cli({"run", "--num-requests", "30", "--enable-chunked-prefill", "--json", js.string()});
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(slurp(js))["scheduler"] == "vllm-v1");
  r = call_cli(
      {"run", "--num-requests", "30", "--enable-chunked-prefill=false", "--json", js.string()});
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(slurp(js))["scheduler"] == "vllm-v0");
}

TEST_CASE("defaults: sweep, capacity and check run vllm-v1 and say so, compare keeps four rows",
          "[cli][sweep]") {
  const fs::path dir = scratch("defaults_commands");
  CliResult r = call_cli({"sweep", "--num-requests", "40", "--request-rate", "2,4", "--out",
                          (dir / "sweep.h5").string(), "--csv", (dir / "sweep.csv").string()});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains(kDefaultSchedulerNote));
  CHECK_THAT(slurp(dir / "sweep.csv"), Catch::Contains(",vllm-v1:8192,vllm-v1,"));

  r = call_cli(
      {"capacity", "--slo", "ttft_p99_ms=2000", "--num-requests", "40", "--rate-max", "8"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains(kDefaultSchedulerNote));
  CHECK_THAT(r.out, Catch::Contains("vllm-v1:8192"));

  write(dir / "spec.ini",
        "baseline = base.h5\nnum-requests = 40\n[tolerance]\nttft_ms.p50 = +10%\n"
        "[scenario.plain]\nrequest-rate = 2\n[scenario.v0]\nscheduler = chunked\n");
  r = call_cli({"check", (dir / "spec.ini").string(), "--update"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains(std::string("plain: ") + kDefaultSchedulerNote));
  CHECK(read_results_summary((dir / "base.h5").string(), "plain")["scheduler"] == "vllm-v1");
  CHECK(read_results_summary((dir / "base.h5").string(), "v0")["scheduler"] == "chunked");

  const fs::path js = dir / "compare.json";
  r = call_cli({"compare", "--num-requests", "40", "--json", js.string()});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(js));
  REQUIRE(j["runs"].size() == 4);
  CHECK(j["runs"][0]["label"] == "vllm-v0:131072");
  CHECK(j["runs"][1]["label"] == "chunked:512");
  CHECK(j["runs"][2]["label"] == "chunked:2048");
  CHECK(j["runs"][3]["label"] == "vllm-v1:8192");
}
