// The run flags table: a RunSpec built from typed patches (sweeps, capacity, check) is the one
// `servesim run` parses from the same flags, and values are parsed once, with run's messages.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "analysis/report.hpp"
#include "analysis/run_spec.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "cli_helpers.hpp"

using namespace servesim;
using servesim::cli::parse_run_flag;
using servesim::cli::spec_from_flags;
using Flags = std::vector<std::pair<std::string, std::string>>;

namespace {

// `servesim run FLAGS --json F`'s summary.
nlohmann::ordered_json run_json(const Flags& flags, const std::filesystem::path& dir) {
  std::vector<std::string> args = {"run"};
  for (const auto& [name, value] : flags) {
    args.push_back("--" + name);
    if (!value.empty()) args.push_back(value);
  }
  const std::string json = (dir / "run.json").string();
  args.insert(args.end(), {"--json", json});
  const auto r = servesim::test::call_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto j = nlohmann::ordered_json::parse(servesim::test::slurp(json));
  REQUIRE(j["servesim"]["command"].get<std::string>().rfind("servesim run ", 0) == 0);
  j.erase("servesim");  // the command that wrote it, which summary_json does not know
  return j;
}

}  // namespace

TEST_CASE("run flags: patches give the RunSpec `run` parses", "[cli][sweep]") {
  const auto dir = servesim::test::scratch("run_flags");
  servesim::test::write(dir / "t.csv",
                        "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,20\n0.5,300,40\n"
                        "1.0,2000,100\n1.2,50,5\n3,100,10\n4,700,30\n");
  const std::vector<Flags> cases = {
      {{"num-requests", "150"}, {"request-rate", "6.5"}, {"scheduler", "vllm-v0"}},
      {{"num-requests", "150"},
       {"input-len", "uniform:10:900"},
       {"output-len", "fixed:40"},
       {"burstiness", "0.5"},
       {"seed", "7"},
       {"gpu", "a100-80g"},
       {"tp", "2"},
       {"max-num-seqs", "32"},
       {"gpu-memory-utilization", "0.8"},
       {"block-size", "32"}},
      {{"num-requests", "150"},
       {"request-rate", "inf"},
       {"scheduler", "chunked:256"},
       {"input-scale", "1.5"},
       {"max-output-len", "50"},
       {"max-requests", "120"}},
      {{"trace", (dir / "t.csv").string()}, {"window", "0.4:3.5"}, {"time-scale", "2"}},
      {{"trace", (dir / "t.csv").string()}, {"request-rate", "3"}, {"input-trim", "20"}},
  };
  for (const Flags& flags : cases) {
    INFO(servesim::cli::flags_text(flags));
    Inputs inputs;
    const PointRun p = run_point(spec_from_flags(flags), inputs);
    CHECK(summary_json(p.run, p.workload).dump() == run_json(flags, dir).dump());
  }
}

TEST_CASE("run flags: a value is checked when it is parsed, with run's message", "[cli]") {
  CHECK_THROWS_WITH(parse_run_flag("num-requests", "abc"),
                    Catch::Contains("the argument ('abc') for option '--num-requests' is invalid"));
  CHECK_THROWS_WITH(parse_run_flag("request-rate", "0"),
                    Catch::Contains("is not a positive number or inf"));
  CHECK_THROWS_WITH(parse_run_flag("input-len", "bogus:1"), Catch::Contains("input-len"));
  CHECK_THROWS_WITH(parse_run_flag("window", "5"), Catch::Contains("START:END"));
  CHECK_THROWS_WITH(parse_run_flag("no-such-flag", "1"), Catch::Contains("not a flag"));
  CHECK_THROWS_WITH(parse_run_flag("json", "x.json"), Catch::Contains("not allowed in a point"));
  // A switch takes no value and sets its field.
  RunSpec s;
  parse_run_flag("skip-bad-rows", "")(s);
  CHECK(s.import.skip_bad_rows);
  CHECK(servesim::cli::run_flag_is_switch("skip-bad-rows"));
  CHECK_FALSE(servesim::cli::run_flag_is_switch("seed"));
  CHECK(servesim::cli::run_flag_is_numeric("request-rate"));
  CHECK_FALSE(servesim::cli::run_flag_is_numeric("input-len"));
}

TEST_CASE("run flags: --tp against --tensor-parallel-size, as given", "[cli]") {
  Inputs inputs;
  CHECK(tensor_parallel_size(spec_from_flags({{"tp", "2"}})) == 2);
  CHECK(tensor_parallel_size(spec_from_flags({{"tensor-parallel-size", "4"}})) == 4);
  CHECK(tensor_parallel_size(spec_from_flags({{"tp", "2"}, {"tensor-parallel-size", "2"}})) == 2);
  CHECK_THROWS_WITH(check_flags(spec_from_flags({{"tp", "2"}, {"tensor-parallel-size", "4"}})),
                    Catch::Contains("conflicts with --tensor-parallel-size"));
  // The default of --tensor-parallel-size is not a conflict.
  CHECK_NOTHROW(check_flags(spec_from_flags({{"tp", "4"}})));
}

TEST_CASE("run flags: a value given is told from the same value by default", "[cli]") {
  // On the command line: the options write every value in place, defaults too; only what was
  // typed is marked given.
  RunSpec s;
  namespace po = boost::program_options;
  po::options_description d;
  d.add(servesim::cli::run_flag_group(servesim::cli::FlagGroup::kWorkload, s));
  d.add(servesim::cli::run_flag_group(servesim::cli::FlagGroup::kHardware, s));
  const char* argv[] = {"run", "--request-rate", "9", "--num-turns", "5", "--tp", "2"};
  po::variables_map vm;
  po::store(po::parse_command_line(7, argv, d), vm);
  po::notify(vm);
  servesim::cli::mark_given_flags(vm, s);
  CHECK(s.request_rate == RunSpec{}.request_rate);  // 9 is the default...
  CHECK(s.request_rate.given());                    // ...but typed: a trace is rescaled to it
  CHECK(s.num_turns.given());
  CHECK(s.tp == 2);
  CHECK(s.tp.given());
  CHECK_FALSE(s.burstiness.given());
  CHECK_FALSE(s.tensor_parallel_size.given());
  CHECK_FALSE(s.input_len.given());
  CHECK(s.input_len->spec == RunSpec{}.input_len->spec);
  // A patch gives its value; forget() takes that back and keeps the value.
  parse_run_flag("burstiness", "1")(s);
  CHECK(s.burstiness.given());
  s.burstiness.forget();
  CHECK_FALSE(s.burstiness.given());
  CHECK(s.burstiness == 1.0);
  CHECK(tensor_parallel_size(s) == 2);  // --tp given: the alias wins over the default
}
