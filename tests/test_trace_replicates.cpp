// Replicates of a timed trace (issue 24): the circular block bootstrap and the jitter by hand,
// their promises (sorted arrivals, content renamed on a copy, deterministic per seed), and
// --num-seeds on a trace through run, compare (paired), check and --out.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_helpers.hpp"
#include "traces/resample.hpp"
#include "traces/trace.hpp"
#include "util/error.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;
using servesim::test::call_cli;
using servesim::test::refused;
using servesim::test::scratch;
using servesim::test::slurp;

namespace {

// N requests one second apart, request i with input 100 + i and one hash id i + 1000.
Trace spaced(int n) {
  Trace t;
  t.format = "csv";
  t.hash_block_size = 512;
  t.hash_offsets.push_back(0);
  for (int i = 0; i < n; ++i) {
    t.push(double(i), 100 + i, 10);
    t.hash_ids.push_back(uint64_t(1000 + i));
    t.hash_offsets.push_back(t.hash_ids.size());
  }
  return t;
}

bool sorted(const std::vector<double>& a) {
  return std::is_sorted(a.begin(), a.end());
}

// `servesim trace synth` of N requests at RATE req/s into DIR/trace.h5.
std::string synth(const fs::path& dir, const std::string& n, const std::string& rate) {
  const std::string path = (dir / "trace.h5").string();
  REQUIRE(call_cli({"trace", "synth", "--num-requests", n, "--request-rate", rate, "--seed", "3",
                    "-o", path})
              .code == 0);
  return path;
}

}  // namespace

TEST_CASE("trace replicates: the circular block bootstrap by hand", "[replicates]") {
  // Four requests at 0, 1, 2, 3 s: the circle is 3 x 4 / 3 = 4 s long, cut into four 1 s slots;
  // each slot's block of 1 s holds exactly one request wherever it starts, at its offset in it.
  const Trace t = spaced(4);
  for (uint64_t seed : {1u, 2u, 3u}) {
    Trace r = t;
    resample_trace(r, Resample::kBootstrap, 1.0, seed);
    REQUIRE(r.size() == 4);
    CHECK(sorted(r.arrival_s));
    for (size_t j = 0; j < 4; ++j) {
      CHECK(r.arrival_s[j] >= double(j));
      CHECK(r.arrival_s[j] < double(j) + 1);
    }
    // Every request is one of the trace's; a request drawn again gets new hash ids, so that a
    // copy never hits its original in the prefix cache; the lengths follow their row.
    std::set<uint64_t> ids;
    for (size_t j = 0; j < 4; ++j) {
      REQUIRE(r.hash_offsets[j + 1] - r.hash_offsets[j] == 1);
      const uint64_t id = r.hash_ids[r.hash_offsets[j]];
      CHECK(ids.insert(id).second);
      const int row = r.input_tokens[j] - 100;
      REQUIRE(row >= 0);
      REQUIRE(row < 4);
      if (id != uint64_t(1000 + row)) CHECK(id > 100000);  // renamed, not another row's
    }
  }
  // The same seed draws the same replicate; another seed another.
  Trace a = spaced(200), b = spaced(200), c = spaced(200);
  resample_trace(a, Resample::kBootstrap, 10.0, 7);
  resample_trace(b, Resample::kBootstrap, 10.0, 7);
  resample_trace(c, Resample::kBootstrap, 10.0, 8);
  CHECK(a.arrival_s == b.arrival_s);
  CHECK(a.input_tokens == b.input_tokens);
  CHECK(a.input_tokens != c.input_tokens);
  // Twenty 10 s slots of a 200 s circle, ten requests each: the count holds.
  CHECK(a.size() == 200);
  CHECK(sorted(a.arrival_s));
  CHECK(a.arrival_s.back() < 200);
  // A block longer than the trace: the whole circle rotated, every row once.
  Trace whole = spaced(10);
  resample_trace(whole, Resample::kBootstrap, 1000.0, 5);
  REQUIRE(whole.size() == 10);
  std::vector<int> inputs(whole.input_tokens.begin(), whole.input_tokens.end());
  std::sort(inputs.begin(), inputs.end());
  for (int i = 0; i < 10; ++i)
    CHECK(inputs[size_t(i)] == 100 + i);
}

TEST_CASE("trace replicates: jitter moves arrivals within its width and keeps every row",
          "[replicates]") {
  const Trace t = spaced(50);
  Trace r = t;
  resample_trace(r, Resample::kJitter, 0.5, 11);
  REQUIRE(r.size() == 50);
  CHECK(sorted(r.arrival_s));
  // Offsets within +-0.25 s of a 1 s grid: the order is kept and each row keeps its content.
  for (size_t i = 0; i < 50; ++i) {
    CHECK(std::abs(r.arrival_s[i] - double(i)) <= 0.25);
    CHECK(r.input_tokens[i] == 100 + int(i));
    CHECK(r.hash_ids[i] == uint64_t(1000 + i));
  }
  CHECK(r.arrival_s.front() >= 0);  // floored at 0
  CHECK(r.arrival_s != t.arrival_s);
  CHECK_THROWS_AS(parse_resample("blocks"), Error);
}

TEST_CASE("trace replicates: --num-seeds on a timed trace through run, compare, check, --out",
          "[replicates][cli]") {
  const fs::path dir = scratch("trace_replicates");
  const std::string trace = synth(dir, "600", "6");
  // run: the replicates differ (the trace itself would give one value, no interval).
  const std::string rj = (dir / "run.json").string();
  auto r = call_cli({"run", "--trace", trace, "--num-seeds", "4", "--json", rj, "--out",
                     (dir / "run.h5").string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("--trace-replicates bootstrap --replicate-block-s 60 --seed 0"));
  const json j = json::parse(slurp(rj));
  REQUIRE(j["runs"].size() == 4);
  std::set<double> ttft;
  for (const json& s : j["runs"]) {
    ttft.insert(s["ttft_ms"]["p50"].get<double>());
    CHECK(s["config"]["workload"]["replicates"] == "bootstrap");
  }
  CHECK(ttft.size() == 4);
  CHECK(j["runs"][2]["config"]["workload"]["seed"] == 2);
  // --out holds one run per seed, and diagnose reads one of them.
  const auto d =
      call_cli({"diagnose", (dir / "run.h5").string(), (dir / "run.h5").string(), "--baseline-run",
                "vllm-v1:8192@seed=0", "--current-run", "vllm-v1:8192@seed=3"});
  INFO(d.err);
  CHECK(d.code == 0);
  CHECK_THAT(d.out, Contains("recorded configuration: workload.options"));

  // compare: every policy sees the same replicate k, so the change is paired.
  const std::string cj = (dir / "compare.json").string();
  r = call_cli({"compare", "--trace", trace, "--num-seeds", "4", "--scheduler",
                "vllm-v0,chunked:512", "--trace-replicates", "jitter", "--json", cj});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json c = json::parse(slurp(cj));
  CHECK(c["runs"][1]["paired_change"]["metrics"]["otps.p50"]["test"] == "paired t");
  for (size_t k = 0; k < 4; ++k) {
    CHECK(c["runs"][0]["summaries"][k]["requests"]["total"] ==
          c["runs"][1]["summaries"][k]["requests"]["total"]);
  }

  // check: num-seeds on a trace scenario runs (it was refused), and a rerun passes.
  const std::string spec = (dir / "spec.ini").string();
  servesim::test::write(spec, "baseline = base.h5\ntrace = " + trace +
                                  "\nnum-seeds = 4\n[tolerance]\nttft_ms.p50 = +10%\n"
                                  "otps.p50 = -10%\n[scenario.trace]\n");
  r = call_cli({"check", spec, "--update"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const std::string kj = (dir / "check.json").string();
  r = call_cli({"check", spec, "--json", kj});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  bool paired = false;
  const json report = json::parse(slurp(kj));
  for (const json& line : report["lines"]) {
    if (line["metric"] == "ttft_ms.p50") paired = line["test"] == "paired t";
  }
  CHECK(paired);

  // Hostile values name their flag; a length-only trace has no arrivals to resample.
  refused({"run", "--trace", trace, "--trace-replicates", "blocks"}, "field 'trace-replicates'");
  refused({"run", "--trace", trace, "--num-seeds", "2", "--replicate-block-s", "0"},
          "field 'replicate-block-s'");
  refused({"run", "--trace", trace, "--num-seeds", "2", "--trace-replicates", "jitter",
           "--replicate-jitter-s", "nan"},
          "field 'replicate-jitter-s'");
  refused({"run", "--trace", trace, "--num-seeds", "2", "--requests-csv", (dir / "r.csv").string()},
          "field 'requests-csv'");
  // --seed alone on a timed trace still does nothing, and says so.
  refused({"run", "--trace", trace, "--seed", "3"}, "its arrival times are replayed");
}
