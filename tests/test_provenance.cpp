// Every file servesim writes records its version and the command that wrote it (the page of
// `servesim report` shows both), a run's summary its warnings, and a day plan its fleets.
#include "util/provenance.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_helpers.hpp"
#include "util/format.hpp"
#include "util/h5_columns.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::CliResult;
using servesim::test::scratch;
using servesim::test::slurp;

namespace {

std::string attr(const std::filesystem::path& h5, const std::string& name) {
  H5::H5File f(h5.string(), H5F_ACC_RDONLY);
  return h5::read_string_attr(f, name);
}

}  // namespace

TEST_CASE("shell_quoted: bare when safe, single-quoted otherwise, quotes escaped") {
  CHECK(shell_quoted("--request-rate=2.5") == "--request-rate=2.5");
  CHECK(shell_quoted("ttft_p99_ms=2000,itl_p99_ms=100") == "ttft_p99_ms=2000,itl_p99_ms=100");
  CHECK(shell_quoted("") == "''");
  CHECK(shell_quoted("a b") == "'a b'");
  CHECK(shell_quoted("it's") == "'it'\\''s'");
  CHECK(shell_quoted("$(rm)") == "'$(rm)'");
}

TEST_CASE("placement flags: where results go and how work is spread, in any spelling") {
  for (const char* a :
       {"--out", "--out=x.h5", "-o", "-ox.h5", "--json", "--csv", "--junit", "--timeline",
        "--requests-csv", "--requests_csv=r.csv", "--jobs", "-j", "-j4", "--shard=0/2"})
    CHECK(is_placement_flag(a));
  for (const char* a : {"--seed", "--output-len", "--json-like", "-h", "out", "--outx", "-",
                        "--request-rate", "--scheduler=vllm-v1"})
    CHECK_FALSE(is_placement_flag(a));
}

TEST_CASE("CommandScope: the thread's command line while it lives, the previous one after") {
  const char* outer[] = {"run", "--seed", "7", "--out", "a.h5"};
  const char* inner[] = {"sweep", "--seed=1 2"};
  CHECK(current_command_line().empty());
  {
    const CommandScope a(5, outer);
    CHECK(current_command_line() == "servesim run --seed 7");
    {
      const CommandScope b(2, inner);
      CHECK(current_command_line() == "servesim sweep '--seed=1 2'");
    }
    CHECK(current_command_line() == "servesim run --seed 7");
  }
  CHECK(current_command_line().empty());
}

TEST_CASE("results, JSON, sweep and capacity files record the version and the command") {
  const auto dir = scratch("provenance");
  const std::string h5 = (dir / "r.h5").string(), js = (dir / "r.json").string();
  const CliResult r =
      call_cli({"run", "--num-requests", "20", "--request-rate", "2.5", "--seed", "3", "--out", h5,
                "--json", js, "--timeline", (dir / "t.json").string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  // Where the results went is no part of the study.
  const std::string want = "servesim run --num-requests 20 --request-rate 2.5 --seed 3";
  CHECK(attr(h5, "command_line") == want);
  CHECK(attr(h5, "servesim_version") == servesim_version());
  const auto j = nlohmann::json::parse(slurp(js));
  CHECK(j["servesim"]["command"] == want);
  CHECK(j["servesim"]["version"] == servesim_version());
  CHECK(j["warnings"].is_array());
  const auto t = nlohmann::json::parse(slurp(dir / "t.json"));
  CHECK(t["otherData"]["command"] == want);
  CHECK(t["otherData"]["version"] == servesim_version());

  const std::string sweep = (dir / "s.h5").string();
  REQUIRE(call_cli({"sweep", "--num-requests", "10", "--request-rate", "1,2", "--jobs", "2",
                    "--out=" + sweep})
              .code == 0);
  CHECK(attr(sweep, "command_line") == "servesim sweep --num-requests 10 --request-rate 1,2");
  CHECK(attr(sweep, "servesim_version") == servesim_version());
  CHECK(current_command_line().empty());  // the scope ended with the command
}

TEST_CASE("a run's warnings are in its summary: rejections and overload, as printed") {
  const auto dir = scratch("provenance_warnings");
  const std::string js = (dir / "w.json").string();
  // Llama-3-8B's context is 8,192 tokens: the longer prompts are rejected.
  const CliResult r = call_cli({"run", "--num-requests", "40", "--model", "llama-3-8b",
                                "--input-len", "uniform:6000:12000", "--json", js});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(js));
  REQUIRE(j["requests"]["rejected"].get<int>() > 0);
  bool named = false;
  for (const auto& w : j["warnings"]) {
    named = named || w.get<std::string>().find("were rejected") != std::string::npos;
    CHECK_THAT(r.out, Catch::Contains(w.get<std::string>()));
  }
  CHECK(named);
}

TEST_CASE("capacity --over-time --out holds each fleet's day and the size over time") {
  const auto dir = scratch("provenance_plan");
  const std::string h5 = (dir / "plan.h5").string();
  const CliResult r = call_cli({"capacity",
                                "--num-requests",
                                "600",
                                "--request-rate",
                                "4",
                                "--rate-pattern",
                                "diurnal",
                                "--scheduler",
                                "chunked:512",
                                "--slo",
                                "ttft_p99_ms=2000",
                                "--over-time",
                                "50",
                                "--autoscale",
                                "running",
                                "--autoscale-target",
                                "8",
                                "--max-replicas",
                                "3",
                                "--out",
                                h5});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  H5::H5File f(h5, H5F_ACC_RDONLY);
  H5::Group fleets = f.openGroup("fleets");
  const auto names = h5::read_string_column(fleets, h5, "fleet", 3);
  CHECK(names == std::vector<std::string>{"fixed", "plan", "autoscaler"});
  const auto peak = h5::read_checked<int64_t>(fleets, h5, "peak_replicas", 3);
  const auto hours = h5::read_checked<double>(fleets, h5, "replica_hours", 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(peak[i] >= 1);
    CHECK(hours[i] > 0);
    // The text's table holds the same figures.
    CHECK_THAT(r.out, Catch::Contains(format("%-10s %5lld %10.2f", names[i].c_str(),
                                             static_cast<long long>(peak[i]), hours[i])));
  }
  H5::Group size = f.openGroup("fleet_size");
  const hsize_t n = h5::column_length<double>(size, h5, "time_s", 1u << 20);
  const auto owner = h5::read_string_column(size, h5, "fleet", n);
  CHECK(std::count(owner.begin(), owner.end(), "plan") >= 2);
  CHECK(std::count(owner.begin(), owner.end(), "autoscaler") >= 2);
  CHECK(std::count(owner.begin(), owner.end(), "fixed") == 0);
  CHECK(h5::read_string_attr(f, "command_line").rfind("servesim capacity ", 0) == 0);
}
