// --request-rate reaches the arrivals unchanged in every command (issue 42, item 1): a fractional,
// a sub-1 and a large rate rescale a timed trace to exactly that mean rate, and draw a length-only
// trace's arrivals at it, through run, compare, sweep (grid values), check and capacity. A rate
// truncated to an integer (1.5 -> 1, 0.5 -> the trace's own pace) fails every case here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "analysis/results.hpp"
#include "analysis/run_spec.hpp"
#include "cli_helpers.hpp"
#include "util/text_input.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using servesim::test::call_cli;
using servesim::test::CliResult;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;

namespace {

// A timed trace: 600 requests, one every 0.25 s (4 req/s), short prompts and answers, so that
// every rate below is served without a queue. And the same lengths without arrival times.
struct RateTraces {
  fs::path dir, timed, lengths;
};
RateTraces rate_traces(const std::string& name) {
  RateTraces t;
  t.dir = scratch(name);
  t.timed = t.dir / "timed.csv";
  t.lengths = t.dir / "lengths.csv";
  std::ostringstream timed, lengths;
  timed << "arrival_s,input,output\n";
  lengths << "input,output\n";
  for (int i = 0; i < 600; ++i) {
    const int in = 40 + (i * 37) % 200, out = 4 + (i * 13) % 30;
    timed << i * 0.25 << "," << in << "," << out << "\n";
    lengths << in << "," << out << "\n";
  }
  write(t.timed, timed.str());
  write(t.lengths, lengths.str());
  return t;
}

// A csv trace's flags; a length-only one has no arrival column.
std::vector<std::string> csv_flags(const fs::path& trace, bool timed) {
  std::vector<std::string> f = {"--trace",     trace.string(), "--trace-format", "csv",
                                "--col-input", "input",        "--col-output",   "output"};
  if (timed) f.insert(f.end(), {"--col-arrival", "arrival_s"});
  return f;
}

std::vector<std::string> join(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

nlohmann::json json_file(const fs::path& p) {
  return nlohmann::json::parse(slurp(p));
}

// The rate the run's requests arrived at: first to last arrival (Overload's arrival rate).
double arrival_rate(const nlohmann::json& summary) {
  return summary["overloaded"]["arrival_rate_req_s"].get<double>();
}

// The arrival times of a results file's only run.
std::vector<double> arrivals(const fs::path& results) {
  return read_results_log(results.string(), "").arrival_s;
}

// Column NAME of a CSV's rows (header first).
std::vector<std::string> csv_column(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line, reason;
  CsvSplitter splitter;
  std::vector<std::string_view> fields;
  std::getline(in, line);
  REQUIRE(splitter.split(line, fields, reason));
  const auto k = size_t(std::find(fields.begin(), fields.end(), name) - fields.begin());
  REQUIRE(k < fields.size());
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    REQUIRE(splitter.split(line, fields, reason));
    REQUIRE(k < fields.size());
    out.emplace_back(fields[k]);
  }
  return out;
}

}  // namespace

TEST_CASE("request rate: run rescales a timed trace to a fractional, sub-1 or large rate",
          "[cli][traces]") {
  const RateTraces t = rate_traces("rate_run");
  for (const double rate : {1.5, 0.5, 2.5, 0.37, 7.25, 1000.5}) {
    std::ostringstream text;
    text << rate;
    const fs::path js = t.dir / "run.json";
    const CliResult r = call_cli(join(join({"run"}, csv_flags(t.timed, true)),
                                      {"--request-rate", text.str(), "--json", js.string()}));
    INFO("--request-rate " << text.str() << "\n" << r.out << r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("--request-rate " + text.str()));
    const nlohmann::json j = json_file(js);
    CHECK(arrival_rate(j) == Approx(rate).epsilon(1e-9));
  }
}

TEST_CASE("request rate: a length-only trace's arrivals are drawn at the rate given",
          "[cli][traces]") {
  const RateTraces t = rate_traces("rate_lengths");
  // Arrivals drawn from one seed at two rates are the same draws, scaled: those at 0.5 req/s are
  // three times those at 1.5 req/s.
  std::vector<std::vector<double>> at;
  for (const std::string rate : {"0.5", "1.5"}) {
    const fs::path h5 = t.dir / ("run" + rate + ".h5");
    const CliResult r = call_cli(join(join({"run"}, csv_flags(t.lengths, false)),
                                      {"--request-rate", rate, "--out", h5.string()}));
    INFO("--request-rate " << rate << "\n" << r.out << r.err);
    REQUIRE(r.code == 0);
    at.push_back(arrivals(h5));
  }
  REQUIRE(at[0].size() == 600);
  REQUIRE(at[1].size() == 600);
  REQUIRE(at[1].back() > 0);
  // --col-arrival none says the same (its help promised it; it was read as a column name).
  const fs::path none = t.dir / "none.h5";
  const CliResult r =
      call_cli(join(join({"run"}, csv_flags(t.lengths, false)),
                    {"--col-arrival", "none", "--request-rate", "0.5", "--out", none.string()}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(arrivals(none) == at[0]);
  for (size_t i = 0; i < at[0].size(); ++i)
    CHECK(at[0][i] == Approx(3 * at[1][i]).epsilon(1e-9).margin(1e-9));
}

TEST_CASE("request rate: compare, sweep, check and capacity use the fractional rate",
          "[cli][traces][sweep]") {
  const RateTraces t = rate_traces("rate_commands");
  SECTION("compare: every row at the rate") {
    const fs::path js = t.dir / "compare.json";
    const CliResult c = call_cli(join({"compare", "--scheduler", "vllm-v0,vllm-v1",
                                       "--request-rate", "1.5", "--json", js.string()},
                                      csv_flags(t.timed, true)));
    INFO(c.out << c.err);
    REQUIRE(c.code == 0);
    const nlohmann::json j = json_file(js);
    REQUIRE(j["runs"].size() == 2);
    for (const auto& run : j["runs"])
      CHECK(arrival_rate(run) == Approx(1.5).epsilon(1e-9));
  }
  SECTION("sweep: grid values 2.5 and 3.9, each point at its own rate") {
    const fs::path csv = t.dir / "sweep.csv";
    const CliResult r = call_cli(join({"sweep", "--request-rate", "0.5,2.5,3.9", "--csv",
                                       csv.string(), "--out", (t.dir / "sweep.h5").string()},
                                      csv_flags(t.timed, true)));
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    const std::vector<std::string> rates = csv_column(slurp(csv), "arrival_rate_req_s");
    REQUIRE(rates.size() == 3);
    CHECK(std::stod(rates[0]) == Approx(0.5).epsilon(1e-6));
    CHECK(std::stod(rates[1]) == Approx(2.5).epsilon(1e-6));
    CHECK(std::stod(rates[2]) == Approx(3.9).epsilon(1e-6));
  }
  SECTION("check: a scenario's rate") {
    const fs::path spec = t.dir / "spec.ini";
    write(spec,
          "baseline = base.h5\n"
          "trace = timed.csv\ntrace-format = csv\ncol-arrival = arrival_s\n"
          "col-input = input\ncol-output = output\n"
          "[tolerance]\nttft_ms.p50 = +10%\n"
          "[scenario.slow]\nrequest-rate = 0.5\n"
          "[scenario.fractional]\nrequest-rate = 2.5\n");
    const CliResult r = call_cli({"check", spec.string(), "--update"});
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    const fs::path base = t.dir / "base.h5";
    CHECK(arrival_rate(read_results_summary(base.string(), "slow")) == Approx(0.5).epsilon(1e-9));
    CHECK(arrival_rate(read_results_summary(base.string(), "fractional")) ==
          Approx(2.5).epsilon(1e-9));
  }
  SECTION("capacity: the probe at the capacity ran at the capacity") {
    const fs::path csv = t.dir / "capacity.csv";
    const CliResult r = call_cli(
        join({"capacity", "--slo", "ttft_p99_ms=60", "--rate-start", "0.7", "--csv", csv.string()},
             csv_flags(t.timed, true)));
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    const std::string text = slurp(csv);
    const double capacity = std::stod(csv_column(text, "capacity_req_s").at(0));
    const double arrived = std::stod(csv_column(text, "arrival_rate_req_s").at(0));
    CHECK(capacity > 0);
    CHECK(arrived == Approx(capacity).epsilon(1e-6));
  }
}

TEST_CASE("request rate: a Given setting reads as its own type", "[cli]") {
  // `given() ? rate : 0` truncated the rate because Given<double> converted on to int: that is
  // now a -Wfloat-conversion error in CI's build (tests/compile_fail/given_narrowing.cpp, whose
  // ctest entries must fail to compile), the same with GCC and Clang.
  STATIC_REQUIRE(std::is_convertible_v<const Given<double>&, double>);
  STATIC_REQUIRE(std::is_convertible_v<const Given<double>&, const double&>);
  Given<double> rate{9};
  rate = 2.5;
  CHECK((rate.given() ? *rate : 0.0) == 2.5);
}
