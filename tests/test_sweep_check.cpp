// The commands built on sweeps' machinery, end to end: the capacity search's answer checked
// against runs of its own, the check gate (baseline, regression, tolerances, the shipped example
// spec), and inputs a review found mishandled.
#include <H5Cpp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "analysis/sweep.hpp"
#include "cli_helpers.hpp"
#include "sweep_fixtures.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using servesim::test::call_cli;
using servesim::test::run_args;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::with;
using servesim::test::write;

TEST_CASE("capacity: the rate found meets the SLO, a little more does not", "[capacity][cli]") {
  const fs::path dir = scratch("capacity");
  const std::vector<std::string> base = {"--num-requests", "300", "--scheduler", "chunked:512"};
  const auto r = call_cli(
      with(with({"capacity"}, base),
           {"--slo", "ttft_p50_ms=400,itl_p99_ms=100", "--rel-tol", "0.01", "--target-rate", "50",
            "--out", (dir / "c.h5").string(), "--csv", (dir / "c.csv").string()}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  H5::H5File f((dir / "c.h5").string(), H5F_ACC_RDONLY);
  H5::DataSet ds = f.openDataSet("capacity/capacity_req_s");
  double cap = 0;
  ds.read(&cap, H5::PredType::NATIVE_DOUBLE);
  REQUIRE(cap > 1);
  // The probe at the capacity may have run longer than --num-requests (too short to judge
  // overload): a little more is judged on as many requests.
  double completed = 0;
  f.openDataSet("capacity/completed").read(&completed, H5::PredType::NATIVE_DOUBLE);
  const std::string requests = std::to_string(int64_t(completed));
  auto at = [&](double rate, const std::string& n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", rate);
    return run_args(with(with(base, {"--request-rate", buf}), {"--num-requests", n})).run.summary;
  };
  const RunSummary ok = at(cap, requests);
  CHECK(ok.ttft_ms.p50 <= 400);
  CHECK(ok.itl_ms.p99 <= 100);
  const RunSummary over = at(cap * 1.03, requests);
  // A little more fails a bound, or overloads the replica (which fails the SLO too).
  CHECK((over.ttft_ms.p50 > 400 || over.itl_ms.p99 > 100 || over.overload.overloaded));
  CHECK_THAT(r.out, Catch::Contains(std::to_string(int(std::ceil(50 / cap)))));
  CHECK_THAT(slurp(dir / "c.csv"), Catch::Contains("chunked:512"));

  // Goodput form: at the capacity, at least 90% of requests meet both per-request SLOs.
  const auto g = call_cli(
      with(with({"capacity"}, base), {"--attainment", "0.9", "--slo-ttft-ms", "800",
                                      "--slo-tpot-ms", "40", "--csv", (dir / "g.csv").string()}));
  REQUIRE(g.code == 0);
  const std::string csv = slurp(dir / "g.csv");
  auto fields = [](const std::string& line) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');)
      f.push_back(x);
    return f;
  };
  const auto header = fields(csv.substr(0, csv.find('\n')));
  const auto values = fields(csv.substr(csv.find('\n') + 1));
  const size_t col = size_t(std::find(header.begin(), header.end(), "attainment") - header.begin());
  REQUIRE(col < values.size());
  CHECK(std::stod(values[col]) >= 0.9);

  // A configuration that rejects requests has no capacity; bad SLOs are errors.
  const auto rej = call_cli({"capacity", "--num-requests", "200", "--scheduler", "vllm-v0",
                             "--max-num-batched-tokens", "512", "--max-model-len", "512", "--slo",
                             "ttft_p50_ms=1000"});
  REQUIRE(rej.code == 0);
  CHECK_THAT(rej.out, Catch::Contains("rejects"));
  CHECK(call_cli({"capacity", "--slo", "nonsense_p50_ms=3"}).code == 2);
  CHECK(call_cli({"capacity", "--slo", "ttft_p50_ms=3", "--request-rate", "4"}).code == 2);
  CHECK(call_cli({"capacity"}).code == 2);
}

TEST_CASE("check: exit 0 against its own baseline, 1 on a regression, 2 on bad specs",
          "[check][cli]") {
  const fs::path dir = scratch("check");
  const std::string spec = R"(baseline = base.h5
num-requests = 300
request-rate = 8
[tolerance]
ttft_ms.p50 = +10%
itl_ms.p99 = +5%
otps.p50 = -5%
[scenario.fast]
scheduler = chunked:512
[scenario.prefill-first]
scheduler = vllm-v0
gpu = h100-sxm
)";
  write(dir / "spec.ini", spec);
  const std::string path = (dir / "spec.ini").string();
  const auto missing = call_cli({"check", path});
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Catch::Contains("--update"));
  REQUIRE(call_cli({"check", path, "--update"}).code == 0);
  REQUIRE(fs::exists(dir / "base.h5"));
  const auto same = call_cli({"check", path});
  INFO(same.out << same.err);
  CHECK(same.code == 0);
  CHECK_THAT(same.out, Catch::Contains("check: passed"));
  // A slower GPU for one scenario regresses TTFT and OTPS.
  std::string slower = spec;
  slower.replace(slower.find("gpu = h100-sxm"), 14, "gpu = a100-80g");
  write(dir / "spec.ini", slower);
  const auto worse = call_cli({"check", path});
  CHECK(worse.code == 1);
  CHECK_THAT(worse.out, Catch::Contains("REGRESSED"));
  CHECK_THAT(worse.out, Catch::Contains("prefill-first"));
  // A looser tolerance lets it pass; a bad tolerance or metric is exit 2 naming the line.
  write(dir / "spec.ini", spec + "");
  write(dir / "bad.ini", "baseline = base.h5\n[tolerance]\nttft_ms.p50 = 10%\n[scenario.fast]\n");
  const auto bad = call_cli({"check", (dir / "bad.ini").string()});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("bad.ini:3"));
  write(dir / "bad2.ini",
        "baseline = base.h5\n[tolerance]\nnope.p50 = +1%\n[scenario.fast]\n"
        "scheduler = chunked:512\nnum-requests = 300\nrequest-rate = 8\n");
  const auto bad2 = call_cli({"check", (dir / "bad2.ini").string()});
  CHECK(bad2.code == 2);
  CHECK_THAT(bad2.err, Catch::Contains("nope.p50"));
  write(dir / "bad3.ini",
        "baseline = base.h5\n[tolerance]\nttft_ms.p50 = +1%\n[scenario.x]\n"
        "no-such-flag = 3\n");
  const auto bad3 = call_cli({"check", (dir / "bad3.ini").string()});
  CHECK(bad3.code == 2);
  CHECK_THAT(bad3.err, Catch::Contains("bad3.ini:5"));
}

TEST_CASE("check: the shipped example spec runs", "[check][cli]") {
  const fs::path src = fs::path(SERVESIM_SOURCE_DIR) / "scripts" / "ci-check.ini";
  REQUIRE(fs::exists(src));
  const fs::path dir = scratch("check_example");
  fs::copy_file(src, dir / "ci-check.ini");
  const std::string path = (dir / "ci-check.ini").string();
  REQUIRE(call_cli({"check", path, "--update", "--jobs", "2"}).code == 0);
  const auto r = call_cli({"check", path, "--jobs", "2"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("check: passed (3 scenarios, 6 tolerances)"));
}

TEST_CASE("sweep and check: inputs a review found mishandled are clear errors or right answers",
          "[sweep][check][capacity][cli][errors]") {
  const fs::path dir = scratch("review_cases");
  const std::string out = (dir / "o.h5").string();
  // An empty value does not swallow the next flag.
  const auto empty = call_cli(
      {"sweep", "--num-requests", "20", "--log-type=", "--gpu", "a100-80g,l40s", "--out", out});
  CHECK(empty.code == 2);
  CHECK_THAT(empty.err, Catch::Contains("log-type"));
  // Unknown names and bad workload values stop the sweep before it runs.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--model", "llama-nope", "--request-rate", "1,2"},
        std::vector<std::string>{"--input-len", "1", "--request-rate", "1,2"},
        std::vector<std::string>{"--burstiness", "-0.3", "--request-rate", "1,2"}}) {
    const auto r = call_cli(with(with({"sweep", "--num-requests", "20"}, bad), {"--out", out}));
    CHECK(r.code == 2);
    CHECK_FALSE(fs::exists(out));
  }
  // A grid too large to run is refused, not wrapped around to zero points.
  const auto huge = call_cli({"sweep", "--seed", "0:65535:1", "--num-requests", "0:65535:1",
                              "--max-num-seqs", "1:65536:1", "--out", out});
  CHECK(huge.code == 2);
  CHECK_THAT(huge.err, Catch::Contains("more than"));
  // Integer ranges stay exact beyond 2^53.
  CHECK(expand_values("seed", "9007199254740993:9007199254740995:1", true) ==
        std::vector<std::string>{"9007199254740993", "9007199254740994", "9007199254740995"});
  // A period that cuts a run into millions of windows is an error, not an exhausted machine.
  const auto tiny = call_cli({"run", "--num-requests", "20", "--out", out, "--period-s", "1e-7"});
  CHECK(tiny.code == 2);
  CHECK_THAT(tiny.err, Catch::Contains("period-s"));
  // A journal whose header was cut short is a fresh start.
  write(out + ".journal", "{\"grid_id\":\"00");
  const auto fresh =
      call_cli({"sweep", "--num-requests", "20", "--request-rate", "1,2", "--out", out});
  INFO(fresh.err);
  CHECK(fresh.code == 0);
  CHECK_THAT(fresh.out, Catch::Contains("2 run, 0 already done"));

  // capacity tries --rate-max itself: a configuration that meets the SLO there reports it.
  const auto capped =
      call_cli({"capacity", "--num-requests", "100", "--scheduler", "chunked", "--slo",
                "ttft_p50_ms=100000", "--rate-max", "5", "--csv", (dir / "cap.csv").string()});
  REQUIRE(capped.code == 0);
  CHECK_THAT(capped.out, Catch::Contains("at least"));
  CHECK_THAT(slurp(dir / "cap.csv"), Catch::Contains(",5,"));

  // check: a mistyped metric is an error naming its line; an empty scenario section runs with
  // the top-level flags.
  const std::string spec = (dir / "spec.ini").string();
  write(spec,
        "baseline = b.h5\nnum-requests = 100\n[tolerance]\nttft_ms.p50 = +10%\n"
        "[scenario.defaults]\n[scenario.small]\nmax-num-seqs = 8\n");
  const auto up = call_cli({"check", spec, "--update"});
  INFO(up.err);
  REQUIRE(up.code == 0);
  CHECK_THAT(up.out, Catch::Contains("2 scenarios"));
  write(spec,
        "baseline = b.h5\nnum-requests = 100\n[tolerance]\nttft_ms.p5O = +10%\n"
        "[scenario.defaults]\n[scenario.small]\nmax-num-seqs = 8\n");
  const auto typo = call_cli({"check", spec});
  CHECK(typo.code == 2);
  CHECK_THAT(typo.err, Catch::Contains("spec.ini:4"));
}

TEST_CASE(
    "check: tolerances only on numbers, written as numbers, and an INI value keeps its semicolons",
    "[check][cli][errors]") {
  const fs::path dir = scratch("check_round2");
  const std::string spec = (dir / "spec.ini").string();
  // Item 15: --update wrote a baseline for a tolerance on `label`, after which every check
  // exited 2; "+0x10" and "++5" were read as tolerances.
  for (const std::string metric : {"label", "overloaded", "rejected_by_reason"}) {
    write(spec,
          "baseline = b.h5\nnum-requests = 20\n[tolerance]\n" + metric + " = +10%\n[scenario.a]\n");
    const auto r = call_cli({"check", spec, "--update"});
    INFO(metric << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("spec.ini:4: field '" + metric + "'"));
    CHECK_FALSE(fs::exists(dir / "b.h5"));
  }
  for (const std::string tolerance : {"+0x10", "++5", "+-5", "+1e", "+5%%"}) {
    write(spec, "baseline = b.h5\nnum-requests = 20\n[tolerance]\nttft_ms.p50 = " + tolerance +
                    "\n[scenario.a]\n");
    const auto r = call_cli({"check", spec, "--update"});
    INFO(tolerance);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("must be like +10%"));
  }
  // Item 7: `client-mix` in an INI file was cut at its first ';' (the comment character): a
  // ';' inside a value stays, as in Python's configparser; quotes keep a value whole.
  const std::string mix = "rate=1,input=fixed:100,output=fixed:10;rate=3,input=fixed:50";
  write(spec, "baseline = b.h5\nnum-requests = 40\ndataset-name = mixture\nclient-mix = " + mix +
                  "  ; two classes\n[tolerance]\nttft_ms.p50 = +10%\n[scenario.a]\n"
                  "[scenario.quoted]\nclient-mix = \"" +
                  mix + " ;rate=2\"\n");
  const auto up = call_cli({"check", spec, "--update"});
  INFO(up.err);
  REQUIRE(up.code == 0);
  H5::H5File f((dir / "b.h5").string(), H5F_ACC_RDONLY);
  for (const auto& [scenario, classes] :
       std::vector<std::pair<std::string, int>>{{"a", 2}, {"quoted", 3}}) {
    H5::Group g = f.openGroup("runs/" + scenario);
    H5::Attribute a = g.openAttribute("summary");
    std::string text;
    a.read(a.getStrType(), text);
    const auto j = nlohmann::json::parse(text);
    const std::string given = j["config"]["workload"]["client_mix"];
    CHECK(std::count(given.begin(), given.end(), ';') == classes - 1);
  }
  const fs::path config = dir / "c.ini";
  write(config,
        "dataset-name = mixture\nnum-requests = 30 ; a comment\nclient-mix = " + mix + "\n");
  const auto run = call_cli({"run", "--config", config.string()});
  INFO(run.err);
  REQUIRE(run.code == 0);
  CHECK_THAT(run.out, Catch::Contains("mixture of 2 client classes, 30 requests"));
}
