// `servesim capacity` sizing and pricing fleets: --target-rate's fleet behind its router (copies,
// a disaggregated P:D split, a mixed fleet's groups, one group with --size-group), the dollars of
// every simulated GPU, and the headers and notes a fleet's configuration shows.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/capacity.hpp"
#include "analysis/report.hpp"
#include "capacity_fixtures.hpp"
#include "cli/grid_args.hpp"
#include "cli_helpers.hpp"

namespace fs = std::filesystem;
using servesim::test::call_cli;
using servesim::test::num;
using servesim::test::read_csv;
using servesim::test::run_ttft_p99;
using servesim::test::slurp;

TEST_CASE("capacity: --target-rate sizes the fleet behind its router by simulating it",
          "[capacity][cli][fleet]") {
  const fs::path dir = servesim::test::scratch("capacity_fleet");
  const std::vector<std::string> common = {
      "--num-requests", "300",          "--input-len", "fixed:2000", "--output-len",
      "fixed:50",       "--burstiness", "0.3",         "--slo",      "ttft_p99_ms=1000"};
  std::vector<std::string> args = {
      "capacity", "--target-rate",         "40", "--router", "least-requests",
      "--csv",    (dir / "c.csv").string()};
  args.insert(args.end(), common.begin(), common.end());
  const auto r = call_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto row = read_csv(dir / "c.csv")[0];
  const int k = int(num(row, "fleet_replicas"));
  REQUIRE(k >= 1);
  CHECK_THAT(r.out, Catch::Contains("fleet_replicas"));
  CHECK_THAT(r.out, Catch::Contains("behind --router least-requests"));
  // Its definition: the fleet of k meets the SLO at the target, the fleet of k - 1 does not.
  auto p99 = [&](int replicas) {
    std::vector<std::string> run = {"--num-replicas", std::to_string(replicas), "--router",
                                    "least-requests"};
    run.insert(run.end(), common.begin(), common.end() - 2);  // without --slo
    return run_ttft_p99(dir, "40", run);
  };
  CHECK(p99(k) <= 1000);
  if (k > 1) CHECK(p99(k - 1) > 1000);
  // The router needs a fleet to route.
  const auto e = call_cli(
      {"capacity", "--num-requests", "20", "--slo", "ttft_p99_ms=2000", "--router", "least-kv"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("--target-rate"));
}

TEST_CASE("capacity: --target-rate on a disaggregated fleet finds its cheapest P:D split",
          "[capacity][cli][fleet]") {
  const fs::path dir = servesim::test::scratch("capacity_split");
  const std::vector<std::string> common = {
      "--scheduler", "vllm-v1",      "--num-requests", "200",   "--input-len",
      "fixed:3000",  "--output-len", "fixed:20",       "--slo", "ttft_p99_ms=600"};
  std::vector<std::string> args = {
      "capacity", "--prefill-replicas",    "1", "--decode-replicas", "1", "--target-rate", "12",
      "--csv",    (dir / "c.csv").string()};
  args.insert(args.end(), common.begin(), common.end());
  const auto r = call_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto row = read_csv(dir / "c.csv")[0];
  const std::string split = row.at("fleet_split");
  REQUIRE(split.find('+') != std::string::npos);
  const int p = std::stoi(split.substr(0, split.find('+')));
  const int d = std::stoi(split.substr(split.find('+') + 1));
  CHECK(p + d == int(num(row, "fleet_replicas")));
  CHECK_THAT(r.out, Catch::Contains("(" + split + ")"));
  // The split meets the SLO at the target when run; long prompts make prefill the bottleneck.
  auto p99 = [&](int prefill, int decode) {
    std::vector<std::string> run = {"--prefill-replicas", std::to_string(prefill),
                                    "--decode-replicas", std::to_string(decode)};
    run.insert(run.end(), common.begin(), common.end() - 2);
    return run_ttft_p99(dir, "12", run);
  };
  CHECK(p99(p, d) <= 600);
  CHECK(p >= d);
}

TEST_CASE("capacity: --target-rate whose fleet lands on a limit is a row, not a failed command",
          "[capacity][cli][fleet][errors]") {
  const fs::path dir = servesim::test::scratch("capacity_fleet_limits");
  // Item 10: an ideal fleet of one under --router failed with "field 'router': routes between
  // replicas"; a target beyond 4096 replicas with "field 'num-replicas'". Neither names a flag
  // the user gave.
  const std::vector<std::string> common = {"capacity",         "--num-requests", "40", "--slo",
                                           "ttft_p50_ms=2000", "--rate-max",     "50"};
  auto with = [&](const std::vector<std::string>& more) {
    std::vector<std::string> a = common;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  auto one = call_cli(with(
      {"--router", "least-requests", "--target-rate", "0.5", "--csv", (dir / "one.csv").string()}));
  INFO(one.err);
  REQUIRE(one.code == 0);
  CHECK(num(read_csv(dir / "one.csv")[0], "fleet_replicas") == 1);
  auto huge = call_cli(with({"--target-rate", "5e8", "--csv", (dir / "huge.csv").string()}));
  INFO(huge.err);
  REQUIRE(huge.code == 0);
  const auto row = read_csv(dir / "huge.csv")[0];
  CHECK(num(row, "fleet_replicas") == -1);
  CHECK(num(row, "replicas") > 4096);
  CHECK_THAT(huge.out, Catch::Contains("none"));
  // Item 19: the SLO line said "TPOT <= inf ms" when only a TTFT bound was given.
  auto att = call_cli({"capacity", "--num-requests", "40", "--attainment", "0.9", "--slo-ttft-ms",
                       "800", "--rate-max", "8"});
  INFO(att.err);
  REQUIRE(att.code == 0);
  CHECK_THAT(att.out, Catch::Contains("90% of requests with TTFT <= 800 ms\n"));
  CHECK_THAT(att.out, !Catch::Contains("inf"));
}

TEST_CASE("capacity prices every GPU of every fleet shape, by hand", "[capacity]") {
  // Issue 25: a 2-replica fleet was priced as one GPU, a 1P+1D split as one GPU, and the fleet's
  // $/h came from the ideal count. price_pools is the one place that prices.
  using namespace servesim;
  GpuHourCost cost = parse_gpu_hour_cost("2,h100=3");  // an alias prices its catalogue GPU
  CHECK(cost.of("h100-sxm", NAN) == 3);
  CHECK(cost.of("a100-80g", NAN) == 2);
  auto pool = [](const char* gpu, const char* role, int replicas, int tp) {
    GpuPool p;
    p.gpu = gpu;
    p.role = role;
    p.replicas = replicas;
    p.tp = tp;
    return p;
  };
  const std::vector<GpuPool> one = {pool("h100-sxm", "colocated", 1, 1)};
  const std::vector<GpuPool> copies = {pool("h100-sxm", "colocated", 4, 2)};
  const std::vector<GpuPool> mixed = {pool("h100-sxm", "colocated", 2, 1),
                                      pool("a100-80g", "colocated", 3, 1)};
  const std::vector<GpuPool> split = {pool("h100-sxm", "prefill", 1, 4),
                                      pool("h100-sxm", "decode", 2, 2)};
  CHECK(price_pools(one, cost).usd_per_h == 3);
  CHECK(price_pools(copies, cost).gpus == 8);
  CHECK(price_pools(copies, cost).usd_per_h == 24);
  CHECK(price_pools(mixed, cost).gpus == 5);
  CHECK(price_pools(mixed, cost).usd_per_h == 2 * 3 + 3 * 2);
  CHECK(price_pools(split, cost).gpus == 8);
  CHECK(price_pools(split, cost).usd_per_h == 24);
  CHECK(std::isnan(price_pools(one, GpuHourCost{}).usd_per_h));  // no price known
  CHECK(describe_pools(one) == "h100-sxm");
  CHECK(describe_pools(copies) == "4x h100-sxm");
  CHECK(describe_pools(mixed) == "2x h100-sxm + 3x a100-80g");
  CHECK(describe_pools(split) == "1x h100-sxm tp4 prefill + 2x h100-sxm tp2 decode");
}

TEST_CASE("cli: capacity's dollars count every simulated GPU", "[capacity][cli]") {
  const fs::path dir = servesim::test::scratch("capacity_money");
  auto row_of = [&](std::vector<std::string> args, const std::string& csv) {
    args.insert(args.begin(), {"capacity", "--num-requests", "300", "--slo", "ttft_p50_ms=500",
                               "--gpu-hour-cost", "3", "--csv", (dir / csv).string()});
    const auto r = call_cli(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return std::make_pair(r.out, read_csv(dir / csv).at(0));
  };
  for (const auto& [args, gpus, fleet] :
       {std::tuple<std::vector<std::string>, double, std::string>{{}, 1, "h100-sxm"},
        {{"--num-replicas", "2"}, 2, "2x h100-sxm"},
        {{"--tp", "2", "--num-replicas", "2"}, 4, "2x h100-sxm"},
        {{"--scheduler", "vllm-v1", "--prefill-replicas", "1", "--decode-replicas", "1"},
         2,
         "1x h100-sxm prefill + 1x h100-sxm decode"}}) {
    const auto [out, row] = row_of(args, "m.csv");
    INFO(fleet);
    CHECK(num(row, "gpus") == gpus);
    CHECK(row.at("fleet") == fleet);
    CHECK(num(row, "usd_per_h") == Approx(3 * gpus));
    // Dollars per million tokens over the same fleet's throughput at capacity.
    CHECK(num(row, "cost_per_million_output_tokens") ==
          Approx(3 * gpus / (num(row, "output_tokens_per_s") * 3600) * 1e6));
    CHECK(num(row, "cost_per_million_total_tokens") ==
          Approx(3 * gpus / (num(row, "total_tokens_per_s") * 3600) * 1e6));
    CHECK_THAT(out, Catch::Contains(fleet));
  }
  // With a target, the fleet is priced as simulated: its GPUs times the price.
  const auto [out, sized] = row_of({"--target-rate", "20"}, "t.csv");
  REQUIRE(num(sized, "fleet_replicas") > 0);
  CHECK(num(sized, "fleet_gpus") == num(sized, "fleet_replicas"));
  CHECK(num(sized, "fleet_cost_per_hour") == Approx(3 * num(sized, "fleet_gpus")));
}

TEST_CASE("a configuration vLLM refuses to start is refused with vLLM's reason",
          "[capacity][cli]") {
  // Issue 25: 70B at TP2 under vllm-v1's defaults got 8 KV blocks (128 tokens) and rejected every
  // request silently; vLLM stops at start-up when max_model_len exceeds what the cache holds.
  servesim::test::refused(
      {"run", "--model", "llama-3.1-70b", "--tp", "2", "--scheduler", "vllm-v1", "--num-requests",
       "20"},
      "larger than the maximum number of tokens that can be stored in KV cache");
  servesim::test::refused({"run", "--model", "llama-3.1-70b", "--tp", "2", "--scheduler", "vllm-v1",
                           "--num-requests", "20"},
                          "field 'max-model-len'");
  // A max_model_len the cache holds starts (and serves what fits).
  const auto ok = call_cli({"run", "--model", "llama-3.1-70b", "--tp", "2", "--scheduler",
                            "vllm-v1", "--num-requests", "20", "--max-model-len", "96",
                            "--input-len", "fixed:32", "--output-len", "fixed:8"});
  INFO(ok.err);
  CHECK(ok.code == 0);
}

TEST_CASE("loops over replica counts and silent no-ops", "[capacity][cli]") {
  // Issue 25: --num-replicas 1 --router X was an error, which broke loops over 1, 2, 4.
  for (const char* n : {"1", "2"}) {
    const auto r = call_cli(
        {"run", "--num-replicas", n, "--router", "least-requests", "--num-requests", "40"});
    INFO(n << r.err);
    CHECK(r.code == 0);
  }
  // A router with no replica count at all is still a mistake, and says how to ask for one.
  servesim::test::refused({"run", "--router", "least-requests", "--num-requests", "10"},
                          "1 for a fleet of one");
  // capacity sets the rate, so --time-scale would do nothing: refused.
  servesim::test::refused(
      {"capacity", "--num-requests", "50", "--slo", "ttft_p50_ms=500", "--time-scale", "0.5"},
      "field 'time-scale'");
}

TEST_CASE("a mixed or disaggregated fleet's header names every pool", "[fleet][cli]") {
  // Issue 25: the header named the first GPU ("on h100-sxm x1, 3 replicas") for a mixed fleet.
  const auto mixed =
      call_cli({"run", "--replica-gpus", "h100-sxm:2,a100-80g:1", "--num-requests", "30"});
  REQUIRE(mixed.code == 0);
  CHECK_THAT(mixed.out, Catch::Contains("on 2x h100-sxm + 1x a100-80g"));
  CHECK_THAT(mixed.out, Catch::Contains("first pool (h100-sxm): KV cache"));
  const auto split = call_cli({"run", "--scheduler", "vllm-v1", "--prefill-replicas", "1",
                               "--decode-replicas", "2", "--num-requests", "30"});
  REQUIRE(split.code == 0);
  CHECK_THAT(split.out, Catch::Contains("1x prefill h100-sxm + 2x decode h100-sxm"));
}

TEST_CASE("a router with nothing to act on says so", "[fleet][cli]") {
  // Issue 25: prefix-aware on a workload without prompt content silently equalled least-kv, and
  // on a V0 policy (no prefix cache) ran anyway.
  const fs::path dir = servesim::test::scratch("honest_router");
  const std::string json_path = (dir / "r.json").string();
  const auto none =
      call_cli({"run", "--num-replicas", "2", "--router", "prefix-aware", "--scheduler", "vllm-v1",
                "--num-requests", "40", "--json", json_path});
  REQUIRE(none.code == 0);
  CHECK_THAT(none.out, Catch::Contains("WARNING: prefix-aware has no prompt content to score"));
  const auto j = nlohmann::json::parse(slurp(json_path));
  REQUIRE(j["fleet"]["router_warnings"].size() == 1);
  const auto v0 =
      call_cli({"run", "--num-replicas", "2", "--router", "prefix-aware", "--scheduler", "vllm-v0",
                "--dataset-name", "prefix_repetition", "--num-requests", "40"});
  REQUIRE(v0.code == 0);
  CHECK_THAT(v0.out, Catch::Contains("keeps no prefix cache here"));
  CHECK_THAT(v0.out, !Catch::Contains("has no prompt content"));
  // With shared prefixes and vLLM V1's prefix cache, nothing to say.
  const auto ok =
      call_cli({"run", "--num-replicas", "2", "--router", "prefix-aware", "--scheduler", "vllm-v1",
                "--dataset-name", "prefix_repetition", "--num-requests", "40"});
  REQUIRE(ok.code == 0);
  CHECK_THAT(ok.out, !Catch::Contains("WARNING: prefix-aware"));
  const auto session =
      call_cli({"run", "--num-replicas", "2", "--router", "session", "--num-requests", "40"});
  CHECK_THAT(session.out, Catch::Contains("session has no sessions to keep together"));
  // capacity's sizing notes it in the table.
  const std::string csv = (dir / "c.csv").string();
  REQUIRE(call_cli({"capacity", "--num-requests", "200", "--slo", "ttft_p50_ms=500",
                    "--target-rate", "60", "--router", "prefix-aware", "--csv", csv})
              .code == 0);
  CHECK_THAT(read_csv(csv).at(0).at("note"), Catch::Contains("prefix-aware has no prompt content"));
}

TEST_CASE("cli: a mixed fleet is priced per group and sized in proportion", "[capacity][cli]") {
  // Issue 25: --gpu-hour-cost could not price a mixed fleet, which capacity did not size.
  const fs::path dir = servesim::test::scratch("capacity_mixed");
  const std::string csv = (dir / "m.csv").string();
  const auto r = call_cli({"capacity", "--replica-gpus", "h100-sxm:1,a100-80g:1", "--num-requests",
                           "300", "--slo", "ttft_p50_ms=500", "--target-rate", "40",
                           "--gpu-hour-cost", "h100=3,a100=2", "--csv", csv});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto row = read_csv(csv).at(0);
  CHECK(row.at("fleet") == "1x h100-sxm + 1x a100-80g");
  CHECK(num(row, "gpus") == 2);
  CHECK(num(row, "usd_per_h") == Approx(5));
  const double copies = num(row, "fleet_replicas");
  REQUIRE(copies > 0);
  CHECK(num(row, "fleet_gpus") == 2 * copies);
  CHECK(num(row, "fleet_cost_per_hour") == Approx(5 * copies));
}

TEST_CASE("cli: capacity sizes a length-only trace without an import step", "[capacity][cli]") {
  // Issue 25: capacity refused --request-rate (it searches the rate) while the length-only trace
  // was refused for lacking one. Each probe now gives its rows Gamma arrivals at its rate.
  const fs::path dir = servesim::test::scratch("capacity_lengths");
  std::string rows = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n";
  for (int i = 0; i < 400; ++i)
    rows += std::to_string(200 + 37 * (i % 20)) + "," + std::to_string(20 + 7 * (i % 9)) + ",0,1\n";
  servesim::test::write(dir / "lengths.csv", rows);
  const auto r = call_cli({"capacity", "--trace", (dir / "lengths.csv").string(), "--slo",
                           "ttft_p99_ms=1000", "--csv", (dir / "c.csv").string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto row = read_csv(dir / "c.csv").at(0);
  CHECK(num(row, "capacity_req_s") > 1);
  CHECK(num(row, "completed") == 400);
}

TEST_CASE("cli: capacity --size-group sizes one group of a mixed fleet, the others fixed",
          "[capacity][cli]") {
  const fs::path dir = servesim::test::scratch("capacity_size_group");
  const std::vector<std::string> base = {"capacity",
                                         "--scheduler",
                                         "vllm-v1",
                                         "--num-requests",
                                         "1200",
                                         "--replica-gpus",
                                         "h100-sxm:1,a100-80g:1",
                                         "--router",
                                         "least-requests",
                                         "--slo",
                                         "ttft_p99_ms=2000,itl_p99_ms=250",
                                         "--gpu-hour-cost",
                                         "h100-sxm=3,a100-80g=1.8"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--target-rate", "25", "--size-group", "a100-80g", "--csv",
                           (dir / "g.csv").string()});
  const auto r = call_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto row = read_csv(dir / "g.csv").at(0);
  const double k = num(row, "fleet_replicas");
  REQUIRE(k >= 2);  // one A100 beside the H100 cannot serve 25 req/s
  CHECK(row.at("fleet_split") == "h100-sxm:1,a100-80g:" + std::to_string(int(k)));
  CHECK(num(row, "fleet_gpus") == 1 + k);
  CHECK(num(row, "fleet_cost_per_hour") == Approx(3 + 1.8 * k));
  // The count found is the fewest: one A100 fewer fails the SLO at the target.
  const auto fewer =
      call_cli({"run", "--scheduler", "vllm-v1", "--num-requests", "1200", "--replica-gpus",
                "h100-sxm:1,a100-80g:" + std::to_string(int(k) - 1), "--router", "least-requests",
                "--request-rate", "25", "--json", (dir / "f.json").string()});
  REQUIRE(fewer.code == 0);
  const auto j = nlohmann::json::parse(slurp(dir / "f.json"));
  const double ttft = j["ttft_ms"]["p99"], itl = j["itl_ms"]["p99"];
  CHECK((ttft > 2000 || itl > 250 || j["overloaded"]["overloaded"].get<bool>()));
  servesim::test::refused(
      {"capacity", "--slo", "ttft_p99_ms=2000", "--target-rate", "5", "--size-group", "a100-80g"},
      "give --replica-gpus");
  args = base;
  args.insert(args.end(), {"--target-rate", "5", "--size-group", "l40s"});
  servesim::test::refused(args, "not a group");
}
