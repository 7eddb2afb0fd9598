// vLLM's spellings and start-up refusals (issue 42, item 5), and check specs whose scenarios
// override or unset a top-level key (item 6).
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/results.hpp"
#include "cli_helpers.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using servesim::test::call_cli;
using servesim::test::CliResult;
using servesim::test::refused;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;

namespace {

nlohmann::json spelled_run(std::vector<std::string> args, const fs::path& file) {
  args.insert(args.begin(), "run");
  args.insert(args.end(), {"--json", file.string()});
  const CliResult r = call_cli(args);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(slurp(file));
}

}  // namespace

TEST_CASE("vllm spellings: every flag also with underscores, as vLLM's parser takes it", "[cli]") {
  const fs::path dir = scratch("vllm_underscores");
  const std::vector<std::string> dashes = {"--num-requests=40",
                                           "--max-num-seqs",
                                           "64",
                                           "--max-num-batched-tokens",
                                           "4096",
                                           "--speculative-config",
                                           R"({"method": "eagle3", "num_speculative_tokens": 2})",
                                           "--spec-acceptance-rate",
                                           "0.6",
                                           "--kv-cache-dtype",
                                           "fp8"};
  std::vector<std::string> underscores = dashes;
  for (std::string& a : underscores) {
    if (a.rfind("--", 0) != 0) continue;
    const size_t end = std::min(a.find('='), a.size());
    for (size_t i = 2; i < end; ++i)
      if (a[i] == '-') a[i] = '_';
  }
  REQUIRE(underscores[0] == "--num_requests=40");
  auto a = spelled_run(dashes, dir / "a.json"), b = spelled_run(underscores, dir / "b.json");
  // The same run; each records the command as typed.
  CHECK_THAT(b["servesim"]["command"].get<std::string>(), Catch::Contains("--num_requests=40"));
  a.erase("servesim");
  b.erase("servesim");
  CHECK(a == b);
  CHECK(a["config"]["max_num_seqs"] == 64);
  // sweep, capacity and compare read them so too; an error names the flag as it was typed.
  CliResult r = call_cli(
      {"sweep", "--num_requests", "30", "--request_rate", "2,4", "--out", (dir / "s.h5").string()});
  INFO(r.err);
  CHECK(r.code == 0);
  refused({"run", "--max_num_seqs", "-5"}, "field 'max_num_seqs'");
  refused({"run", "--no_such_flag", "1"}, "unrecognised option '--no_such_flag'");
  refused({"sweep", "--no_such_flag", "1", "--out", (dir / "x.h5").string()}, "'no_such_flag'");
  // Values keep their underscores.
  r = call_cli(
      {"capacity", "--slo", "ttft_p99_ms=2000", "--num_requests", "40", "--rate_max", "4"});
  INFO(r.err);
  CHECK(r.code == 0);
  // Config files and check specs: keys with underscores.
  write(dir / "flags.ini", "num_requests = 30\nmax_num_seqs = 32\n");
  const auto c = spelled_run({"--config", (dir / "flags.ini").string()}, dir / "c.json");
  CHECK(c["requests"]["total"] == 30);
  CHECK(c["config"]["max_num_seqs"] == 32);
}

TEST_CASE("vllm refusals: the token budget against max_num_seqs and max_model_len, block sizes",
          "[cli]") {
  const fs::path dir = scratch("vllm_refusals");
  // SchedulerConfig: max_num_batched_tokens >= max_num_seqs, both given.
  refused({"run", "--max-num-batched-tokens", "100", "--max-num-seqs", "1024"},
          "max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (1024)");
  refused({"run", "--max-num-batched-tokens", "100", "--max-num-seqs", "1024"},
          "lower --max-num-seqs");
  // A budget alone: V1's EngineArgs caps the default max_num_seqs (1,024 on an H100) at it.
  const auto j =
      spelled_run({"--num-requests", "20", "--max-num-batched-tokens", "100"}, dir / "capped.json");
  CHECK(j["config"]["max_num_seqs"] == 100);
  CHECK(j["config"]["max_num_batched_tokens"] == 100);
  // V0's engine did not cap it: 128 tokens against its 256 sequences is refused.
  refused({"run", "--scheduler", "chunked:128"},
          "max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256)");
  // Without chunked prefill, a budget below max_model_len.
  refused({"run", "--scheduler", "vllm-v0", "--max-num-batched-tokens", "4096"},
          "max_num_batched_tokens (4096) is smaller than max_model_len (131072) without chunked "
          "prefill");
  const auto ok = spelled_run({"--num-requests", "20", "--scheduler", "vllm-v0",
                               "--max-num-batched-tokens", "4096", "--max-model-len", "4096"},
                              dir / "v0.json");
  CHECK(ok["config"]["max_num_batched_tokens"] == 4096);
  // CacheConfig's block sizes.
  refused({"run", "--block-size", "7"}, "must be one of 1, 8, 16, 32, 64, 128, 256");
  CHECK(spelled_run({"--num-requests", "20", "--block-size", "32"},
                    dir / "b.json")["config"]["block_size"] == 32);
  // A sweep point vLLM would refuse is a row with its error, not a run.
  const CliResult s =
      call_cli({"sweep", "--num-requests", "20", "--scheduler", "chunked:128,chunked:512", "--out",
                (dir / "s.h5").string(), "--csv", (dir / "s.csv").string()});
  INFO(s.err);
  CHECK(s.code == 0);
  CHECK_THAT(slurp(dir / "s.csv"),
             Catch::Contains("must be greater than or equal to max_num_seqs"));
}

TEST_CASE("check: a scenario overrides or unsets a top-level key, errors name the spec's line",
          "[cli][check]") {
  const fs::path dir = scratch("check_override");
  std::string timed = "arrival_s,input,output\n";
  for (int i = 0; i < 80; ++i)
    timed += std::to_string(i * 0.25) + "," + std::to_string(50 + i) + ",8\n";
  write(dir / "timed.csv", timed);
  const std::string head =
      "baseline = base.h5\n"    // 1
      "num-requests = 60\n"     // 2
      "max_num_seqs = 64\n"     // 3
      "[tolerance]\n"           // 4
      "ttft_ms.p50 = +10%\n"    // 5
      "[scenario.generated]\n"  // 6
      "request-rate = 4\n"      // 7
      "[scenario.override]\n"   // 8
      "max-num-seqs = 32\n"     // 9
      "[scenario.replay]\n"     // 10
      "trace = timed.csv\n"     // 11
      "trace-format = csv\ncol-arrival = arrival_s\ncol-input = input\ncol-output = output\n";
  write(dir / "spec.ini", head + "num-requests =\n");  // line 16 unsets the top level's
  CliResult r = call_cli({"check", (dir / "spec.ini").string(), "--update"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const std::string base = (dir / "base.h5").string();
  CHECK(read_results_summary(base, "generated")["requests"]["total"] == 60);
  CHECK(read_results_summary(base, "generated")["config"]["max_num_seqs"] == 64);
  CHECK(read_results_summary(base, "override")["config"]["max_num_seqs"] == 32);
  CHECK(read_results_summary(base, "replay")["requests"]["total"] == 80);
  // Without the unset line, the top level's num-requests reaches the trace scenario: the error
  // names the line that set it.
  write(dir / "spec.ini", head);
  r = call_cli({"check", (dir / "spec.ini").string(), "--update"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("spec.ini:2: field 'num-requests': scenario replay: not used "
                                    "with --trace"));
  // A scenario's own bad value: its line.
  write(dir / "spec.ini", head + "num-requests =\n[scenario.bad]\nmax-num-seqs = -1\n");
  r = call_cli({"check", (dir / "spec.ini").string(), "--update"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("spec.ini:18: field 'max-num-seqs': scenario bad:"));
}
