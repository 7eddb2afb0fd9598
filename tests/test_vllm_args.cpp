// The fidelity manifest (issue 43): one table of vLLM's engine arguments and behaviours, printed by
// `list vllm-args`, the docs page generated from it, and warnings where a run leans on an
// approximated entry.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/vllm_args.hpp"
#include "cli/run_flags.hpp"
#include "cli_helpers.hpp"
#include "util/text_input.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::slurp;

namespace {

const char* kApproxWarning = "approximated (servesim list vllm-args): ";

std::string manifest_run_out(const std::string& model, const std::string& gpu, const char* tp) {
  const auto r = call_cli({"run", "--model", model, "--gpu", gpu, "--tp", tp, "--num-requests",
                           "20", "--request-rate", "2", "--seed", "1"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("vllm-args: the docs page is the table's", "[vllm-args]") {
  const std::filesystem::path page =
      std::filesystem::path(SERVESIM_SOURCE_DIR) / "docs" / "manual" / "vllm-args.md";
  INFO("regenerate it: servesim list vllm-args --markdown > docs/manual/vllm-args.md");
  CHECK(slurp(page) == vllm_args_markdown());
  const auto r = call_cli({"list", "vllm-args", "--markdown"});
  CHECK(r.code == 0);
  CHECK(r.out == vllm_args_markdown());
}

TEST_CASE("vllm-args: every entry is listed once, with a note, and its servesim flags exist",
          "[vllm-args]") {
  std::set<std::string> names;
  const std::vector<std::string> flags = cli::run_flag_names();
  const std::set<std::string> run_flags(flags.begin(), flags.end());
  const auto listed = call_cli({"list", "vllm-args"});
  REQUIRE(listed.code == 0);
  CHECK_THAT(listed.out, Catch::Contains(kManifestVllmVersion));
  for (const VllmArg& a : vllm_args()) {
    INFO(a.vllm);
    CHECK(names.insert(a.vllm).second);
    CHECK(std::string(a.note).size() > 10);
    CHECK_THAT(listed.out, Catch::Contains(a.vllm) && Catch::Contains(a.note));
    std::string_view rest = a.servesim;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string flag(trim(rest.substr(0, comma)));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (flag.empty()) continue;
      REQUIRE(flag.rfind("--", 0) == 0);
      CHECK(run_flags.count(flag.substr(2)) == 1);
    }
  }
  // The three states all occur: a table of one kind says nothing.
  for (const Fidelity f : {Fidelity::kModelled, Fidelity::kApproximated, Fidelity::kIgnored}) {
    CHECK(std::any_of(vllm_args().begin(), vllm_args().end(),
                      [&](const VllmArg& a) { return a.fidelity == f; }));
  }
}

TEST_CASE("vllm-args: run warns when a configuration leans on an approximated entry",
          "[vllm-args]") {
  // A dense model on a GPU with its own fit leans on none of the warned entries.
  CHECK_THAT(manifest_run_out("llama-3.1-8b", "h100-sxm", "1"), !Catch::Contains(kApproxWarning));
  const std::string moe = manifest_run_out("mixtral-8x7b", "h100-sxm", "2");
  CHECK_THAT(moe, Catch::Contains(std::string(kApproxWarning) + "behaviour: MoE routing"));
  CHECK_THAT(moe, !Catch::Contains("GPU without profiles"));
  const std::string l40s = manifest_run_out("llama-3.1-8b", "l40s", "1");
  CHECK_THAT(l40s,
             Catch::Contains(std::string(kApproxWarning) + "behaviour: GPU without profiles"));
  const auto fp8 = call_cli({"run", "--model", "llama-3.1-8b", "--kv-cache-dtype", "fp8",
                             "--quantization", "fp8", "--num-requests", "20"});
  REQUIRE(fp8.code == 0);
  CHECK_THAT(fp8.out, Catch::Contains(std::string(kApproxWarning) + "--kv-cache-dtype") &&
                          Catch::Contains(std::string(kApproxWarning) + "--quantization"));
}
