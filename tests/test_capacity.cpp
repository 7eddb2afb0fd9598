// `servesim capacity` as a planner uses it: configurations from lists of GPUs, models and TP
// degrees, the value of each SLO term at capacity and the binding term, a tolerated share of
// rejected requests, and the cost per million output tokens.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/capacity.hpp"
#include "analysis/intervals.hpp"
#include "analysis/report.hpp"
#include "capacity_fixtures.hpp"
#include "cli/grid_args.hpp"
#include "cli_helpers.hpp"

namespace fs = std::filesystem;
using servesim::test::num;
using servesim::test::read_csv;
using servesim::test::slurp;

namespace {

servesim::test::CliResult exec(const std::vector<std::string>& args) {
  return servesim::test::call_cli(args);
}

// A Vidur trace of N requests, Poisson arrivals at 1 req/s, with request LONG (if < N) far beyond
// the model's context.
void write_trace(const fs::path& p, int n, int long_one) {
  std::string text = "arrived_at,num_prefill_tokens,num_decode_tokens\n";
  uint64_t x = 12345;
  auto next = [&] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return double(x >> 11) / double(1ull << 53);
  };
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += -std::log(1 - next());
    const int input = i == long_one ? 300000 : 100 + int(next() * 1500);
    const int output = 20 + int(next() * 200);
    text += std::to_string(t) + "," + std::to_string(input) + "," + std::to_string(output) + "\n";
  }
  servesim::test::write(p, text);
}

}  // namespace

TEST_CASE("capacity: one over-long request is tolerated within --max-rejected-share",
          "[capacity][cli]") {
  const fs::path dir = servesim::test::scratch("capacity_rejected");
  write_trace(dir / "t.csv", 1000, 500);
  const std::vector<std::string> base = {"capacity", "--trace", (dir / "t.csv").string(), "--slo",
                                         "ttft_p99_ms=2000"};
  // Without the flag the one request rejected at every rate leaves no capacity.
  auto args = base;
  args.insert(args.end(), {"--csv", (dir / "strict.csv").string()});
  const auto strict = exec(args);
  INFO(strict.err);
  REQUIRE(strict.code == 0);
  CHECK_THAT(strict.out, Catch::Contains("rejects 1 of 1000 requests"));
  const auto s = read_csv(dir / "strict.csv");
  REQUIRE(s.size() == 1);
  CHECK(num(s[0], "capacity_req_s") == 0);
  CHECK(s[0].at("binding") == "rejected_share");
  // A tolerated share of 0.1% serves it: a capacity, and the note counts the rejected request.
  args = base;
  args.insert(args.end(),
              {"--max-rejected-share", "0.001", "--csv", (dir / "tolerant.csv").string()});
  const auto tolerant = exec(args);
  INFO(tolerant.err);
  REQUIRE(tolerant.code == 0);
  const auto t = read_csv(dir / "tolerant.csv");
  REQUIRE(t.size() == 1);
  CHECK(num(t[0], "capacity_req_s") > 0);
  CHECK(num(t[0], "ttft_ms_p99") <= 2000);
  CHECK(num(t[0], "rejected") == 1);
  CHECK_THAT(t[0].at("note"), Catch::Contains("1 of 1000 requests"));
  CHECK_THAT(tolerant.out, Catch::Contains("within --max-rejected-share"));
  // Bad shares are errors naming the flag.
  for (const char* bad : {"1", "-0.1", "x"}) {
    args = base;
    args.insert(args.end(), {"--max-rejected-share", bad});
    const auto r = exec(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("max-rejected-share"));
  }
}

TEST_CASE("capacity: lists of GPUs and TP degrees give one row each, with their columns",
          "[capacity][cli]") {
  const fs::path dir = servesim::test::scratch("capacity_gpus");
  const std::vector<std::string> base = {"capacity",         "--gpu", "a100-80g,h100-sxm",
                                         "--num-requests",   "200",   "--slo",
                                         "ttft_p99_ms=2000", "--csv", (dir / "c.csv").string()};
  const auto r = exec(base);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto rows = read_csv(dir / "c.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("gpu") == "a100-80g");
  CHECK(rows[1].at("gpu") == "h100-sxm");
  for (const auto& row : rows) {
    CHECK(row.at("model") == "llama-3.1-8b");
    CHECK(row.at("tp") == "1");
  }
  CHECK(num(rows[1], "capacity_req_s") > num(rows[0], "capacity_req_s"));
  CHECK(num(rows[0], "capacity_req_s") > 0);
  CHECK_THAT(r.out, Catch::Contains("a100-80g") && Catch::Contains("h100-sxm"));
  // The first listed flag varies slowest; the table does not depend on the threads.
  auto more = base;
  more.insert(more.end(), {"--tp", "1,2", "--jobs", "1"});
  const auto one = exec(more);
  REQUIRE(one.code == 0);
  const auto grid = read_csv(dir / "c.csv");
  REQUIRE(grid.size() == 4);
  CHECK((grid[1].at("gpu") == "a100-80g" && grid[1].at("tp") == "2"));
  CHECK((grid[2].at("gpu") == "h100-sxm" && grid[2].at("tp") == "1"));
  more.back() = "2";
  const std::string first = slurp(dir / "c.csv");
  CHECK(exec(more).out == one.out);
  CHECK(slurp(dir / "c.csv") == first);
  // A bad value in a list is an error naming its flag, before anything runs.
  const auto bad = exec({"capacity", "--gpu", "a100-80g,nope", "--slo", "ttft_p99_ms=2000"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("gpu"));
}

TEST_CASE("capacity: each SLO term's value at capacity, and the binding term marked",
          "[capacity][cli]") {
  const fs::path dir = servesim::test::scratch("capacity_binding");
  auto run = [&](const std::string& slo, const std::string& csv) {
    const auto r =
        exec({"capacity", "--num-requests", "300", "--slo", slo, "--csv", (dir / csv).string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto rows = read_csv(dir / csv);
    REQUIRE(rows.size() == 1);
    return std::make_pair(r.out, rows[0]);
  };
  // With a loose ITL bound, TTFT p99 binds; its p99 at capacity is in the table and the file.
  // (vllm-v1 admits everything it can hold, so from about 500 ms its running batch diverges
  // before TTFT p99 passes the bound: then `overloaded` binds, below.)
  const auto [out, row] = run("ttft_p99_ms=300,itl_p99_ms=100000", "a.csv");
  CHECK(row.at("binding") == "ttft_ms_p99");
  const double ttft = num(row, "ttft_ms_p99");
  CHECK(ttft <= 300);
  CHECK(num(row, "itl_ms_p99") <= 100000);
  CHECK_THAT(out, Catch::Contains("ttft_ms_p99") && Catch::Contains("itl_ms_p99"));
  char cell[32];
  std::snprintf(cell, sizeof cell, ttft >= 1000 ? "%.0f*" : "%.1f*", ttft);
  CHECK_THAT(out, Catch::Contains(cell));
  // With a loose TTFT bound, ITL p99 binds instead.
  CHECK(run("ttft_p99_ms=100000,itl_p99_ms=30", "b.csv").second.at("binding") == "itl_ms_p99");
  // The goodput form is a term too.
  const auto g = exec({"capacity", "--num-requests", "300", "--attainment", "0.9", "--slo-ttft-ms",
                       "400", "--csv", (dir / "g.csv").string()});
  REQUIRE(g.code == 0);
  CHECK(read_csv(dir / "g.csv")[0].at("binding") == "attainment");
  CHECK_THAT(g.out, Catch::Contains("attainment"));
  // Bounds so loose that every latency passes while the queue diverges: an overloaded probe
  // fails the SLO (issue 25: capacity took probes its own CSV marked overloaded), and binds.
  const auto [loose_out, loose] = run("ttft_p99_ms=100000,itl_p99_ms=100000", "o.csv");
  CHECK(loose.at("binding") == "overloaded");
  CHECK(num(loose, "overloaded") == 0);  // the capacity's own probe kept up
  // 300 requests are too few to tell a 5% backlog near capacity: the probes ran longer.
  CHECK_THAT(loose_out, Catch::Contains("probes lengthened to judge overload"));
  CHECK(num(loose, "completed") > 300);
}

TEST_CASE("capacity: cost per million output tokens from --gpu-hour-cost or the GPU file",
          "[capacity][cli]") {
  const fs::path dir = servesim::test::scratch("capacity_cost");
  auto formula = [](const std::map<std::string, std::string>& row, double price) {
    return price * num(row, "tp") / (num(row, "output_tokens_per_s") * 3600) * 1e6;
  };
  const auto r =
      exec({"capacity", "--num-requests", "200", "--tp", "2", "--slo", "ttft_p99_ms=2000",
            "--gpu-hour-cost", "2.5", "--target-rate", "100", "--csv", (dir / "a.csv").string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto a = read_csv(dir / "a.csv")[0];
  CHECK(num(a, "gpu_hour_cost") == 2.5);
  CHECK(num(a, "cost_per_million_output_tokens") == Approx(formula(a, 2.5)).epsilon(1e-8));
  // The fleet as simulated at the target (probes too short to judge overload run longer, so it
  // may take more replicas than the ideal count).
  CHECK(num(a, "fleet_replicas") >= num(a, "replicas"));
  CHECK(num(a, "fleet_cost_per_hour") == Approx(num(a, "fleet_replicas") * 2 * 2.5));
  CHECK_THAT(r.out, Catch::Contains("usd_per_Mtok"));
  // A GPU file's cost_per_hour; without any price the column is empty (NaN).
  servesim::test::write(dir / "g.ini",
                        "name = my-h100\nbf16_tflops = 989.4\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
                        "interconnect_gb_per_s = 900\ncost_per_hour = 4\narch = hopper\n");
  const auto f = exec({"capacity", "--num-requests", "200", "--gpu-file", (dir / "g.ini").string(),
                       "--slo", "ttft_p99_ms=2000", "--csv", (dir / "f.csv").string()});
  INFO(f.err);
  REQUIRE(f.code == 0);
  const auto b = read_csv(dir / "f.csv")[0];
  CHECK(b.at("gpu") == "my-h100");
  CHECK(num(b, "cost_per_million_output_tokens") == Approx(formula(b, 4)).epsilon(1e-8));
  REQUIRE(exec({"capacity", "--num-requests", "200", "--slo", "ttft_p99_ms=2000", "--csv",
                (dir / "n.csv").string()})
              .code == 0);
  CHECK(std::isnan(num(read_csv(dir / "n.csv")[0], "cost_per_million_output_tokens")));
  // Bad prices are errors naming the flag or the file's field.
  for (const char* bad : {"-1", "x", "a100-80g=3"}) {
    const auto e = exec(
        {"capacity", "--num-requests", "20", "--slo", "ttft_p99_ms=2000", "--gpu-hour-cost", bad});
    CHECK(e.code == 2);
    CHECK_THAT(e.err, Catch::Contains("gpu-hour-cost"));
  }
  servesim::test::write(dir / "bad.ini",
                        "name = x\nbf16_tflops = 1\nhbm_gib = 80\nhbm_gb_per_s = 1\n"
                        "interconnect_gb_per_s = 1\ncost_per_hour = 0\narch = hopper\n");
  const auto e =
      exec({"capacity", "--gpu-file", (dir / "bad.ini").string(), "--slo", "ttft_p99_ms=2000"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("bad.ini:6") && Catch::Contains("cost_per_hour"));
}

TEST_CASE("capacity: a result crosses MPI ranks as bytes and comes back exactly", "[capacity]") {
  using namespace servesim;
  CapacitySpec spec;
  spec.bounds = parse_slo("ttft_p99_ms=500");
  spec.rate_max = 64;
  spec.rel_tol = 0.1;
  Inputs inputs;
  const RunSpec base = cli::spec_from_flags({{"num-requests", "20"}, {"scheduler", "chunked:512"}});
  CapacityResult r = search(base, spec, inputs);
  r.fleet_split = "1+2";  // the fields a fleet sizing sets
  r.router = "least-kv";
  r.fleet_replicas = 3;
  REQUIRE(r.capacity > 0);
  REQUIRE(std::isnan(r.at.summary.goodput_req_s));  // a NaN must stay NaN, not become null
  const CapacityResult back = capacity_result_from_bytes(capacity_result_bytes(r));
  CHECK(capacity_result_bytes(back) == capacity_result_bytes(r));
  // The table and the probe's metrics, NaN for NaN.
  const SweepTable a = capacity_table({r}, 10, "slo"), b = capacity_table({back}, 10, "slo");
  REQUIRE(a.rows.size() == 1);
  CHECK(a.rows[0].text == b.rows[0].text);
  CHECK(a.rows[0].ints == b.rows[0].ints);
  const auto ma = summary_metrics(r.at.summary), mb = summary_metrics(back.at.summary);
  REQUIRE(ma.size() == mb.size());
  for (size_t i = 0; i < ma.size(); ++i) {
    INFO(ma[i].first);
    CHECK((ma[i].second == mb[i].second || (std::isnan(ma[i].second) && std::isnan(mb[i].second))));
  }
  CHECK(back.at.summary.ttft_ms.extra == r.at.summary.ttft_ms.extra);
  CHECK(back.at.summary.rejected_by_reason[0] == r.at.summary.rejected_by_reason[0]);
  CHECK_THROWS(capacity_result_from_bytes("not cbor"));
}

TEST_CASE("capacity: an overloaded probe ends at its last arrival with the verdict a full run has",
          "[capacity][overload]") {
  using namespace servesim;
  Inputs inputs;
  CapacitySpec spec;
  spec.bounds = parse_slo("ttft_p99_ms=1000");
  const RunSpec base =
      cli::spec_from_flags({{"num-requests", "600"}, {"scheduler", "chunked:512"}});
  // BASE at RATE, with REQUESTS requests (0: its own; a probe too short to judge ran longer).
  auto at = [&](double rate, uint64_t requests = 0) {
    RunSpec s = base;
    s.request_rate = rate;
    if (requests > 0) s.num_requests = int64_t(requests);
    return s;
  };
  SECTION("an overloaded run stops, with its requests accounted for") {
    const Probe full = judge_run(at(80), spec, inputs, false);
    const Probe cut = judge_run(at(80), spec, inputs, true);
    REQUIRE(full.summary.overload.overloaded);
    CHECK_FALSE(full.stopped);
    CHECK_FALSE(full.ok);
    CHECK(cut.stopped);
    CHECK(cut.summary.overload.overloaded);
    CHECK_FALSE(cut.ok);
    CHECK(!cut.failed.empty());  // a bound its done requests already fail, else overloaded
    const RunSummary& c = cut.summary;
    CHECK(c.overload.unfinished > 0);
    CHECK(c.completed + c.rejected + c.overload.unfinished == c.total);
    CHECK(c.total == full.summary.total);
    CHECK(c.steps < full.summary.steps);  // the drain was not simulated
  }
  SECTION("a run that keeps up runs to its end either way, the same run") {
    const Probe full = judge_run(at(2), spec, inputs, false);
    const Probe cut = judge_run(at(2), spec, inputs, true);
    CHECK_FALSE(cut.stopped);
    CHECK(cut.summary.overload.unfinished == 0);
    CHECK(nlohmann::json(cut.summary.ttft_ms.p99) == nlohmann::json(full.summary.ttft_ms.p99));
    CHECK(cut.summary.steps == full.summary.steps);
    CHECK(cut.ok == full.ok);
  }
  SECTION("every probe of a search judges as a full run would, so the capacity is the same") {
    std::vector<Probe> probes;
    CapacitySpec s = spec;
    s.rate_max = 256;
    const CapacityResult r = search(base, s, inputs, [&](const Probe& p) { probes.push_back(p); });
    REQUIRE(r.capacity > 0);
    CHECK(r.probes_stopped > 0);
    CHECK(r.requests_unfinished > 0);
    CHECK(int(probes.size()) == r.iterations);
    int stopped = 0;
    for (const Probe& p : probes) {
      const Probe full = judge_run(at(p.rate, p.requests), s, inputs, false);
      INFO("rate " << p.rate << ", " << p.requests << " requests");
      CHECK(p.ok == full.ok);
      stopped += p.stopped;
    }
    CHECK(stopped == r.probes_stopped);
  }
}

TEST_CASE("capacity: the bracket found from the top down is the bracket of doubling up",
          "[capacity]") {
  using namespace servesim;
  Inputs inputs;
  const RunSpec base =
      cli::spec_from_flags({{"num-requests", "600"}, {"scheduler", "chunked:512"}});
  // Tight and loose SLOs: the all-at-once throughput is above the capacity by much or by little.
  for (const char* slo : {"ttft_p99_ms=300", "ttft_p99_ms=3000", "itl_p99_ms=60"}) {
    CapacitySpec spec;
    spec.bounds = parse_slo(slo);
    spec.rate_max = 512;
    std::vector<Probe> probes;
    const CapacityResult r =
        search(base, spec, inputs, [&](const Probe& p) { probes.push_back(p); });
    INFO(slo);
    REQUIRE(r.capacity > 0);
    REQUIRE_FALSE(r.above_max);
    // Doubling up from --rate-start by hand, every rung probed: the first rung that fails.
    double lo = spec.rate_start, hi = 0;
    for (double rate = lo * 2; hi == 0 && rate <= spec.rate_max; rate *= 2) {
      RunSpec s = base;
      s.request_rate = rate;
      (judge_run(s, spec, inputs).ok ? lo : hi) = rate;
    }
    REQUIRE(hi > 0);
    // The search's bisection starts inside that bracket and ends with a capacity in it.
    CHECK(r.capacity >= lo);
    CHECK(r.capacity < hi);
    CHECK(r.at.rate == r.capacity);
    // Its probes below LO all met the SLO and those at or above HI all failed.
    for (const Probe& p : probes) {
      if (p.rate <= lo) CHECK(p.ok);
      if (p.rate >= hi) CHECK_FALSE(p.ok);
    }
  }
}

TEST_CASE("capacity: --confidence sizes at the pessimistic end of each bound's interval",
          "[capacity][intervals][cli]") {
  const fs::path dir = servesim::test::scratch("capacity_confidence");
  const std::vector<std::string> base = {"capacity",
                                         "--num-requests",
                                         "300",
                                         "--slo",
                                         "ttft_p99_ms=1000,itl_p99_ms=100000",
                                         "--target-rate",
                                         "30"};
  auto with = [&](std::vector<std::string> extra, const std::string& csv) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--csv", (dir / csv).string()});
    const auto r = exec(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto rows = read_csv(dir / csv);
    REQUIRE(rows.size() == 1);
    return std::make_pair(r.out, rows[0]);
  };
  const auto [point_out, point] = with({}, "point.csv");
  const auto [out, confident] = with({"--confidence", "0.9"}, "confident.csv");
  CHECK_THAT(out, Catch::Contains("point_rps") && Catch::Contains("confident_rps@90%"));
  CHECK(num(confident, "confidence") == 0.9);
  // The point answer is the search without intervals, and the confident one no higher.
  CHECK(num(confident, "point_capacity_req_s") == num(point, "capacity_req_s"));
  const double conf = num(confident, "capacity_req_s");
  CHECK(conf > 0);
  CHECK(conf < num(point, "capacity_req_s"));
  // At the confident rate, TTFT p99 times at least its in-range 90% factor meets the bound (the
  // probe's own regime may have widened it further).
  const servesim::IntervalSet in_range = servesim::prediction_intervals(servesim::Regime{}, 0.9);
  CHECK(in_range.hi(servesim::IntervalMetric::kTtftP99, num(confident, "ttft_ms_p99")) <= 1000);
  // Sized by the confident capacity: at least as many replicas as the point answer needs.
  CHECK(num(confident, "replicas") >= num(point, "replicas"));
  // A bound tighter than TTFT p99's interval allows at any load fails at every rate, confidently.
  std::vector<std::string> tight = base;
  tight[4] = "ttft_p99_ms=300,itl_p99_ms=100000";
  tight.insert(tight.end(), {"--confidence", "0.9"});
  CHECK_THAT(exec(tight).out, Catch::Contains("fails the SLO at every rate tried"));
  // Without --confidence the table keeps its columns.
  CHECK(point.count("point_capacity_req_s") == 0);
  for (const char* bad : {"1", "0.99", "x", ""}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--confidence", bad});
    const auto r = exec(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("confidence"));
  }
}
