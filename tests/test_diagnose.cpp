// servesim diagnose: CloudWatch windows and OTPS by hand, the exact split of a latency change,
// the verdicts on simulated what-if changes at light load, the "M out of N" alarm, and the
// command line. The rule on hand-built statistics is in test_diagnose_rule.cpp, loaded
// trace-driven cases in test_diagnose_load.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/diagnose.hpp"
#include "analysis/diagnose_verdict_text.hpp"
#include "analysis/windows.hpp"
#include "cli_helpers.hpp"
#include "models/gpu.hpp"
#include "models/model.hpp"
#include "sim/simulation.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace.hpp"
#include "traces/transform.hpp"
#include "util/error.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using Catch::Contains;

namespace {

fs::path diagnose_scratch(const std::string& name) {
  return servesim::test::scratch("diagnose_" + name);
}
using servesim::test::slurp;
using servesim::test::write;

// Four completed requests and one rejected, in 10 s periods:
//   [0, 10):  A, B, C complete; [10, 20): only E's arrival (rejected); [20, 30): D completes.
RequestLog tiny_log() {
  RequestLog log;
  log.source = "tiny";
  //               A     B     C     D     E
  log.arrival_s = {1.0, 2.0, 3.0, 5.0, 12.0};
  log.ttft_ms = {100, 200, 300, 400, NAN};
  log.e2e_ms = {1100, 2200, 3300, 18000, NAN};  // D finishes at 23 s
  log.output_tokens = {50, 100, 150, 80, 70};
  log.input_tokens = {10, 20, 30, 40, 50};
  log.queue_ms = {1, 2, 3, 4, NAN};
  return log;
}

// Llama-3.1-8B under 300 requests of ShareGPT-like lengths at 0.5 req/s (chunked prefill), with
// what-if transforms: a load where the article's assumptions hold (decode speed barely depends
// on the prompt), so each change shows in its own metric.
RunResult simulate_case(const std::string& gpu, double input_scale = 1, double output_scale = 1) {
  SyntheticOptions w;
  w.num_requests = 300;
  w.request_rate = 0.5;
  w.input_len = LengthDist::parse("lognormal:1024:0.8:16:6000", "input-len");
  w.output_len = LengthDist::parse("lognormal:256:0.8:4:2000", "output-len");
  w.seed = 1;
  Workload requests = generate_synthetic(w);
  if (input_scale != 1 || output_scale != 1) {
    Trace t = from_workload(requests);
    TransformOptions o;
    o.input_scale = input_scale;
    o.output_scale = output_scale;
    apply_transforms(t, o);
    requests = to_workload(t);
  }
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu(gpu);
  c.scheduler.policy = Policy::kChunked;
  return simulate(resolve(c), requests);
}

const RequestLog& baseline_log() {
  static const RequestLog log = request_log(simulate_case("h100-sxm"));
  return log;
}

DiagnoseOptions short_periods() {
  DiagnoseOptions o;
  o.period_s = 60;  // the runs last ~10 minutes: ten datapoints
  return o;
}

double rel(double base, double cur) {
  return (cur - base) / base;
}

}  // namespace

TEST_CASE("diagnose: windows and CloudWatch OTPS of a tiny log, by hand", "[diagnose]") {
  const std::vector<Window> w = compute_windows(tiny_log(), 10);
  REQUIRE(w.size() == 3);
  CHECK(w[0].start_s == 0);
  CHECK(w[2].end_s == 30);
  CHECK(w[0].arrivals == 4);
  CHECK(w[1].arrivals == 1);
  CHECK(w[2].arrivals == 0);
  CHECK(w[0].completions == 3);
  CHECK(w[1].completions == 0);
  CHECK(w[2].completions == 1);
  // Window 0: A, B, C. p50 = the middle value; p95 interpolates at rank 0.95 x 2 = 1.9.
  CHECK(w[0].ttft_ms_p50 == Approx(200));
  CHECK(w[0].ttft_ms_p95 == Approx(200 + 0.9 * 100));
  CHECK(w[0].e2e_ms_p50 == Approx(2200));
  CHECK(w[0].e2e_ms_p95 == Approx(2200 + 0.9 * 1100));
  CHECK(w[0].output_tokens_p50 == Approx(100));
  CHECK(w[0].otps == Approx(100.0 / (2200 - 200) * 1000));  // 50 tokens/s
  CHECK(w[0].input_tokens_p50 == Approx(20));
  CHECK(w[0].queue_ms_p50 == Approx(2));
  // Window 1: no completion, CloudWatch's missing data.
  CHECK(std::isnan(w[1].otps));
  CHECK(std::isnan(w[1].ttft_ms_p50));
  CHECK(std::isnan(w[1].e2e_ms_p50));
  // Window 2: D alone.
  CHECK(w[2].otps == Approx(80.0 / (18000 - 400) * 1000));

  // The whole log: p50s of four values interpolate halfway between the middle two.
  const LogStats s = log_stats(tiny_log());
  CHECK(s.requests == 5);
  CHECK(s.completed == 4);
  CHECK(s.p50.ttft_ms == Approx(250));
  CHECK(s.p50.il_ms == Approx(2750));
  CHECK(s.p50.otc == Approx(90));
  CHECK(s.p50.otps == Approx(90.0 / (2750 - 250) * 1000));  // 36 tokens/s
  CHECK(s.input_tokens_p50 == Approx(25));
  CHECK(s.queue_ms_p50 == Approx(2.5));
  // p95 at rank 0.95 x 3 = 2.85, and OTPS from the p95s.
  CHECK(s.p95.ttft_ms == Approx(300 + 0.85 * 100));
  CHECK(s.p95.il_ms == Approx(3300 + 0.85 * (18000 - 3300)));
  CHECK(s.p95.otc == Approx(100 + 0.85 * 50));
  CHECK(s.p95.otps == Approx(s.p95.otc / (s.p95.il_ms - s.p95.ttft_ms) * 1000));
  // Bedrock's identity holds at both percentiles.
  for (const LatencyPoint& p : {s.p50, s.p95}) {
    CHECK(p.ttft_ms + p.otc / p.otps * 1000 == Approx(p.il_ms).epsilon(1e-12));
    CHECK(p.decode_ms() == Approx(p.il_ms - p.ttft_ms).epsilon(1e-12));
  }
}

TEST_CASE("diagnose: the identity holds exactly for p50s of a simulated run", "[diagnose]") {
  const LogStats s = log_stats(baseline_log());
  REQUIRE(s.completed == 300);
  CHECK(std::abs(s.p50.ttft_ms + s.p50.otc / s.p50.otps * 1000 - s.p50.il_ms) < 1e-9);
  CHECK(std::abs(s.p95.ttft_ms + s.p95.otc / s.p95.otps * 1000 - s.p95.il_ms) < 1e-9);
  for (const Window& w : compute_windows(baseline_log(), 60)) {
    if (std::isnan(w.otps)) continue;
    CHECK(std::abs(w.ttft_ms_p50 + w.output_tokens_p50 / w.otps * 1000 - w.e2e_ms_p50) < 1e-9);
  }
}

TEST_CASE("diagnose: the parts of a latency change sum to it", "[diagnose]") {
  SECTION("by hand: same speed, longer answers and a slower first token") {
    const LatencyPoint base{2000, 200, 100, 100.0 / 1800 * 1000};
    const LatencyPoint cur{3000, 300, 150, 150.0 / 2700 * 1000};
    const Decomposition d = decompose(base, cur);
    CHECK(d.il == Approx(1000));
    CHECK(d.ttft == Approx(100));
    CHECK(d.decode == Approx(900));
    CHECK(d.output == Approx(50 / base.otps * 1000));  // = 900: all from length
    CHECK(d.output == Approx(900));
    CHECK(std::abs(d.speed) < 1e-9);
  }
  SECTION("by hand: same answers, slower speed") {
    const LatencyPoint base{1100, 100, 100, 100};  // 1000 ms of decode
    const LatencyPoint cur{2100, 100, 100, 50};    // 2000 ms
    const Decomposition d = decompose(base, cur);
    CHECK(d.output == Approx(0).margin(1e-12));
    CHECK(d.speed == Approx(100 * (1.0 / 50 - 1.0 / 100) * 1000));
    CHECK(d.speed == Approx(1000));
  }
  SECTION("on every what-if case, at p50 and p95") {
    const LogStats base = log_stats(baseline_log());
    for (const RunResult& r : {simulate_case("a100-80g"), simulate_case("h100-sxm", 2, 1),
                               simulate_case("h100-sxm", 1, 2)}) {
      const LogStats cur = log_stats(request_log(r));
      for (auto [b, c] : {std::pair{base.p50, cur.p50}, std::pair{base.p95, cur.p95}}) {
        const Decomposition d = decompose(b, c);
        CHECK(d.il == Approx(c.il_ms - b.il_ms));
        CHECK(std::abs(d.ttft + d.decode - d.il) < 1e-9);
        CHECK(std::abs(d.output + d.speed - d.decode) < 1e-9);
        CHECK(std::abs(d.ttft + d.output + d.speed - d.il) < 1e-9);
      }
    }
  }
  SECTION("input length + output length + speed, when the prompts changed") {
    for (double input_scale : {2.0, 0.5}) {
      const Diagnosis d =
          diagnose(baseline_log(), request_log(simulate_case("h100-sxm", input_scale, 1.5)),
                   short_periods());
      const auto j = diagnosis_json(d);
      REQUIRE(j["change"]["split"] == "input_output_speed");
      for (const char* q : {"p50", "p95"}) {
        const auto& p = j["change"][q];
        const double input = p["input_length_ms"].get<double>();
        CHECK(input == p["ttft_ms"].get<double>());
        CHECK(std::abs(input + p["output_length_ms"].get<double>() + p["speed_ms"].get<double>() -
                       p["invocation_latency_ms"].get<double>()) < 1e-9);
      }
    }
    // The prompts held: the TTFT and decode split, with no input length part.
    const auto j = diagnosis_json(
        diagnose(baseline_log(), request_log(simulate_case("a100-80g")), short_periods()));
    CHECK(j["change"]["split"] == "ttft_decode");
    CHECK(std::isnan(j["change"]["p50"]["input_length_ms"].get<double>()));  // null in a file
  }
}

// At 0.5 req/s the prompts move TTFT alone. The verdict was "ttft" (TTFT up while OTPS holds)
// before the prompts came first in the rule; it is now "input_length", with the same numbers.
TEST_CASE("diagnose: at light load, longer prompts raise TTFT while OTPS holds: input length",
          "[diagnose]") {
  const Diagnosis d =
      diagnose(baseline_log(), request_log(simulate_case("h100-sxm", 2, 1)), short_periods());
  CHECK(finding_name(d.verdict.finding) == std::string("input_length"));
  const LogStats& b = d.baseline;
  const LogStats& c = d.current;
  // The numbers behind it: prompts doubled, TTFT rose well past the tolerance, OTPS within it,
  // and the answers are as long as before.
  CHECK(rel(b.input_tokens_p50, c.input_tokens_p50) == Approx(1.0).margin(0.01));
  CHECK(rel(b.p50.ttft_ms, c.p50.ttft_ms) > 0.5);
  CHECK(std::abs(rel(b.p50.otps, c.p50.otps)) < 0.1);
  CHECK(c.p50.otc == b.p50.otc);
  // Prefill, not queueing: the queueing delay explains little of the TTFT change.
  CHECK(c.queue_ms_p50 - b.queue_ms_p50 < 0.2 * d.p50.ttft);
  // TTFT moved many times more than OTPS did; output length adds nothing.
  CHECK(rel(b.p50.ttft_ms, c.p50.ttft_ms) > 5 * std::abs(rel(b.p50.otps, c.p50.otps)));
  CHECK(d.p50.output == Approx(0).margin(1e-9));
  CHECK(d.firings.empty());
  // The split is input length + output length + speed, input length being the TTFT change.
  const auto j = diagnosis_json(d);
  CHECK(j["change"]["split"] == "input_output_speed");
  CHECK(j["change"]["p50"]["input_length_ms"].get<double>() == d.p50.ttft);
  const VerdictText text = verdict_text(d.verdict);
  CHECK_THAT(text.headline, Contains("prompts got longer"));
  std::string details;
  for (const std::string& line : text.details)
    details += line + "\n";
  CHECK_THAT(details, Contains("input tokens p50"));
  CHECK_THAT(details, Contains("queueing delay p50"));
  CHECK_THAT(details, Contains("decode speed held"));
  CHECK_THAT(details, Contains("the host prefills as fast as before"));
}

TEST_CASE("diagnose: a slower GPU lowers OTPS and fires the alarm", "[diagnose]") {
  const Diagnosis d =
      diagnose(baseline_log(), request_log(simulate_case("a100-80g")), short_periods());
  CHECK(d.verdict.finding == Finding::kThroughput);
  const LogStats& b = d.baseline;
  const LogStats& c = d.current;
  CHECK(rel(b.p50.otps, c.p50.otps) < -0.25);
  CHECK(c.p50.otc == b.p50.otc);  // same requests
  CHECK(c.input_tokens_p50 == b.input_tokens_p50);
  // Generation speed dominates the latency change.
  CHECK(d.p50.speed > 0.8 * d.p50.il);
  // OTPS is below 0.8 x the baseline in most periods, so the alarm fires once the first three
  // breaching periods have accumulated, and every period it fired in had >= 3 breaching.
  CHECK(d.alarm_threshold == Approx(0.8 * b.p50.otps));
  REQUIRE(!d.firings.empty());
  const size_t first = d.firings.front().first;
  int breaching = 0;
  for (size_t k = 0; k <= first; ++k)
    breaching += d.windows[k].otps < d.alarm_threshold;
  CHECK(breaching >= 3);
  int before = 0;
  for (size_t k = 0; k + 1 <= first; ++k)
    before += d.windows[k].otps < d.alarm_threshold;
  CHECK(before < 3);
}

TEST_CASE("diagnose: longer answers are a workload change, not a throughput incident",
          "[diagnose]") {
  const Diagnosis d =
      diagnose(baseline_log(), request_log(simulate_case("h100-sxm", 1, 2)), short_periods());
  CHECK(d.verdict.finding == Finding::kOutputLength);
  const LogStats& b = d.baseline;
  const LogStats& c = d.current;
  CHECK(rel(b.p50.otc, c.p50.otc) == Approx(1.0).margin(0.01));
  CHECK(rel(b.p50.il_ms, c.p50.il_ms) > 0.5);
  CHECK(std::abs(rel(b.p50.otps, c.p50.otps)) < 0.1);
  CHECK(std::abs(rel(b.p50.ttft_ms, c.p50.ttft_ms)) < 0.1);
  // Output length explains most of the latency change; speed and TTFT the rest.
  CHECK(d.p50.output > 0.8 * d.p50.il);
  CHECK(d.firings.empty());
}

TEST_CASE("diagnose: a log against itself shows no change", "[diagnose]") {
  const Diagnosis d = diagnose(baseline_log(), baseline_log(), short_periods());
  CHECK(d.verdict.finding == Finding::kNone);
  CHECK(d.p50.il == 0);
  CHECK(d.p95.il == 0);
  CHECK(d.p50.speed == 0);
  CHECK(d.firings.empty());
  // The baseline's own periods never fall below 0.8 x its p50 OTPS for three of five.
  for (AlarmState s : d.alarm)
    CHECK(s != AlarmState::kAlarm);
}

TEST_CASE("diagnose: the alarm fires on the M-th breach of N and returns to OK", "[diagnose]") {
  using S = AlarmState;
  const double nan = NAN;
  SECTION("3 of 5, with a missing datapoint inside the range") {
    const std::vector<double> otps = {100, 70,  100, 70,  70,  nan, 100, 100,
                                      100, 100, nan, nan, nan, nan, nan};
    const std::vector<S> s = evaluate_alarm(otps, 80, 3, 5);
    const std::vector<S> expected = {S::kOk,    S::kOk, S::kOk, S::kOk, S::kAlarm,
                                     S::kAlarm, S::kOk, S::kOk, S::kOk, S::kOk,
                                     S::kOk,    S::kOk, S::kOk, S::kOk, S::kInsufficientData};
    CHECK(s == expected);
    const std::vector<AlarmEpisode> e = alarm_episodes(s);
    REQUIRE(e.size() == 1);
    CHECK(e[0].first == 4);
    CHECK(e[0].last == 5);
    CHECK(e[0].ended);
  }
  SECTION("missing data is neither breaching nor OK") {
    const std::vector<double> otps = {nan, 70, nan, 70, nan, 70};
    const std::vector<S> s = evaluate_alarm(otps, 80, 3, 5);
    // Missing as breaching would alarm at index 2 or 3; as not breaching, never.
    const std::vector<S> expected = {
        S::kInsufficientData, S::kOk, S::kOk, S::kOk, S::kOk, S::kAlarm};
    CHECK(s == expected);
  }
  SECTION("M of N: the range is the last N datapoints") {
    const std::vector<double> otps = {70, 70, 100, 100, 100, 70};
    CHECK(alarm_episodes(evaluate_alarm(otps, 80, 3, 5)).empty());
    const std::vector<AlarmEpisode> e = alarm_episodes(evaluate_alarm(otps, 80, 3, 6));
    REQUIRE(e.size() == 1);
    CHECK(e[0].first == 5);
    CHECK(!e[0].ended);  // still in ALARM at the end
    // 1 of 1 alarms on each breaching datapoint alone.
    const std::vector<S> one = evaluate_alarm(otps, 80, 1, 1);
    CHECK(one == std::vector<S>{S::kAlarm, S::kAlarm, S::kOk, S::kOk, S::kOk, S::kAlarm});
    CHECK(alarm_episodes(one).size() == 2);
  }
  SECTION("the threshold itself is not breaching (LessThanThreshold)") {
    CHECK(evaluate_alarm({80, 80, 80}, 80, 3, 3).back() == S::kOk);
    CHECK(evaluate_alarm({79.999, 79.999, 79.999}, 80, 3, 3).back() == S::kAlarm);
  }
}

TEST_CASE("diagnose: options out of range are errors naming the flag", "[diagnose]") {
  DiagnoseOptions o;
  o.datapoints = 6;
  CHECK_THROWS_WITH(validate(o), Contains("datapoints"));
  o = {};
  o.period_s = 0;
  CHECK_THROWS_WITH(validate(o), Contains("period"));
  o = {};
  o.tolerance = -0.1;
  CHECK_THROWS_WITH(validate(o), Contains("tolerance"));
  RequestLog none = tiny_log();
  for (size_t i = 0; i < none.size(); ++i)
    none.ttft_ms[i] = NAN;
  CHECK_THROWS_WITH(diagnose(tiny_log(), none, DiagnoseOptions{}), Contains("no completed"));
}

TEST_CASE("diagnose: reads a request log CSV with renamed columns and units", "[diagnose]") {
  const fs::path dir = diagnose_scratch("csv");
  // Arrivals in epoch ms, latencies in seconds, a request that never completed, a blank line,
  // and a quoted header.
  write(dir / "log.csv",
        "\"ts\",first_token_s,total_s,completion_tokens,prompt_tokens,wait_s\n"
        "1700000000000,0.1,1.1,50,10,0.001\n"
        "1700000001000,0.2,2.2,100,20,0.002\n"
        "\n"
        "1700000002000,,,,,\n"
        "1700000004000,0.3,3.3,150,30,\n");
  CsvLogColumns c;
  c.arrival = "ts";
  c.ttft = "first_token_s";
  c.latency = "total_s";
  c.output = "completion_tokens";
  c.input = "prompt_tokens";
  c.queue = "wait_s";
  c.time_to_s = 1e-3;
  c.latency_to_ms = 1e3;
  const RequestLog log = read_request_log_csv((dir / "log.csv").string(), c);
  REQUIRE(log.size() == 4);
  CHECK(log.arrival_s[1] == Approx(1700000001.0));
  CHECK(log.ttft_ms[0] == Approx(100));
  CHECK(log.e2e_ms[2] != log.e2e_ms[2]);  // NaN: not completed
  CHECK(!log.completed(2));
  CHECK(log.output_tokens[3] == 150);
  CHECK(log.input_tokens[1] == 20);
  CHECK(log.queue_ms[1] == Approx(2));
  CHECK(std::isnan(log.queue_ms[3]));
  const LogStats s = log_stats(log);
  CHECK(s.completed == 3);
  CHECK(s.p50.otps == Approx(100.0 / (2200 - 200) * 1000));
  CHECK(s.queue_ms_p50 == Approx(1.5));  // the two rows that say

  // Without the optional columns the log has no input or queue data; a named optional column
  // that is absent is an error.
  CsvLogColumns defaults_for_optional = c;
  defaults_for_optional.input = "input_tokens";
  defaults_for_optional.queue = "queue_ms";
  const RequestLog bare = read_request_log_csv((dir / "log.csv").string(), defaults_for_optional);
  CHECK(bare.input_tokens.empty());
  CHECK(bare.queue_ms.empty());
  defaults_for_optional.input_required = true;
  CHECK_THROWS_WITH(read_request_log_csv((dir / "log.csv").string(), defaults_for_optional),
                    Contains("input_tokens"));
}

TEST_CASE("diagnose: bad CSV rows are errors naming file, line and field", "[diagnose]") {
  const fs::path dir = diagnose_scratch("bad_csv");
  const std::string header = "arrival_s,ttft_ms,e2e_ms,output_tokens\n";
  auto error_of = [&](const std::string& name, const std::string& text) -> Error {
    write(dir / name, text);
    try {
      read_request_log_csv((dir / name).string(), CsvLogColumns{});
    } catch (const Error& e) {
      return e;
    }
    FAIL("no error for " << name);
    return Error("", "");
  };
  Error e = error_of("nan_arrival.csv", header + "0,1,2,3\nnan,1,2,3\n");
  CHECK(e.line() == 3);
  CHECK(e.field() == "arrival_s");
  CHECK_THAT(e.file(), Contains("nan_arrival.csv"));
  e = error_of("latency_below_ttft.csv", header + "0,10,5,3\n");
  CHECK(e.line() == 2);
  CHECK(e.field() == "e2e_ms");
  e = error_of("negative.csv", header + "0,-1,5,3\n");
  CHECK(e.field() == "ttft_ms");
  e = error_of("tokens.csv", header + "0,1,5,3.5\n");
  CHECK(e.field() == "output_tokens");
  e = error_of("ragged.csv", header + "0,1,5\n");
  CHECK(e.line() == 2);
  e = error_of("no_rows.csv", header);
  CHECK_THAT(std::string(e.what()), Contains("no requests"));
  e = error_of("no_column.csv", "arrival_s,ttft_ms,latency_ms,output_tokens\n0,1,2,3\n");
  CHECK(e.line() == 1);
  CHECK(e.field() == "e2e_ms");
  CHECK_THAT(std::string(e.what()), Contains("col-latency"));
}

TEST_CASE("cli: diagnose two request CSVs written by servesim run", "[diagnose]") {
  using servesim::test::call_cli;
  const fs::path dir = diagnose_scratch("cli");
  const std::vector<std::string> load = {"--num-requests", "300", "--request-rate", "0.5"};
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "--requests-csv", (dir / (name + ".csv")).string(),
                                     "--json", (dir / (name + ".json")).string()};
    args.insert(args.end(), load.begin(), load.end());
    args.insert(args.end(), extra.begin(), extra.end());
    REQUIRE(call_cli(args).code == 0);
    return nlohmann::json::parse(slurp(dir / (name + ".json")));
  };
  const auto base = run("base", {});
  const auto slow = run("slow", {"--gpu", "a100-80g"});
  const auto r = call_cli({"diagnose", (dir / "base.csv").string(), (dir / "slow.csv").string(),
                           "--period-s", "60", "--json", (dir / "d.json").string()});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("verdict (throughput)"));
  CHECK_THAT(r.out, Contains("ALARM at the end of"));
  const auto d = nlohmann::json::parse(slurp(dir / "d.json"));
  CHECK(d["verdict"]["finding"] == "throughput");
  // The same OTPS and latencies as the runs' own summaries (computed by sim/metrics.cpp from the
  // records; here from the CSV's 3-decimal values).
  CHECK(d["baseline"]["p50"]["otps"].get<double>() ==
        Approx(base["otps"]["p50_ratio"].get<double>()).epsilon(1e-4));
  CHECK(d["current"]["p50"]["otps"].get<double>() ==
        Approx(slow["otps"]["p50_ratio"].get<double>()).epsilon(1e-4));
  CHECK(d["current"]["p50"]["invocation_latency_ms"].get<double>() ==
        Approx(slow["e2e_ms"]["p50"].get<double>()).margin(2e-3));
  CHECK(d["baseline"]["p50"]["ttft_ms"].get<double>() ==
        Approx(base["ttft_ms"]["p50"].get<double>()).margin(2e-3));
  CHECK(d["alarm"]["fired"] == true);
  const auto& p = d["change"]["p50"];
  CHECK(p["ttft_ms"].get<double>() + p["output_length_ms"].get<double>() +
            p["speed_ms"].get<double>() ==
        Approx(p["invocation_latency_ms"].get<double>()));

  SECTION("the same log twice: no change, alarm never fired") {
    const auto same = call_cli(
        {"diagnose", (dir / "base.csv").string(), (dir / "base.csv").string(), "--period-s", "60"});
    REQUIRE(same.code == 0);
    CHECK_THAT(same.out, Contains("verdict (none)"));
    CHECK_THAT(same.out, Contains("never fired"));
  }
  SECTION("--windows lists every period with its state") {
    const auto w = call_cli({"diagnose", (dir / "base.csv").string(), (dir / "slow.csv").string(),
                             "--period-s", "60", "--windows"});
    REQUIRE(w.code == 0);
    CHECK_THAT(w.out, Contains("[0, 60)"));
    CHECK_THAT(w.out, Contains("  ALARM\n"));
  }
}

TEST_CASE("cli: diagnose reports bad input with exit 2", "[diagnose]") {
  using servesim::test::call_cli;
  const fs::path dir = diagnose_scratch("cli_bad");
  write(dir / "good.csv",
        "arrival_s,ttft_ms,e2e_ms,output_tokens\n0,100,1100,100\n1,100,1200,100\n");
  write(dir / "missing.csv", "arrival_s,ttft_ms,output_tokens\n0,100,100\n");
  write(dir / "renamed.csv", "t,first,total,n\n0,100,1100,100\n1,100,2300,200\n");
  const std::string good = (dir / "good.csv").string();

  const auto missing = call_cli({"diagnose", good, (dir / "missing.csv").string()});
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Contains("missing.csv:1"));
  CHECK_THAT(missing.err, Contains("field 'e2e_ms'"));

  const auto renamed =
      call_cli({"diagnose", good, (dir / "renamed.csv").string(), "--col-arrival", "t",
                "--col-ttft", "first", "--col-latency", "total", "--col-output", "n"});
  // --col-* apply to both files: good.csv lacks "t".
  CHECK(renamed.code == 2);
  CHECK_THAT(renamed.err, Contains("good.csv:1"));
  CHECK_THAT(renamed.err, Contains("field 't'"));

  const std::string ren = (dir / "renamed.csv").string();
  const auto ok =
      call_cli({"diagnose", ren, ren, "--col-arrival", "t", "--col-ttft", "first", "--col-latency",
                "total", "--col-output", "n", "--json", (dir / "d.json").string()});
  REQUIRE(ok.code == 0);
  const auto d = nlohmann::json::parse(slurp(dir / "d.json"));
  // p50 of (1100, 2300) and (100, 200): OTPS = 150 / (1700 - 100) x 1000.
  CHECK(d["baseline"]["p50"]["otps"].get<double>() == Approx(150.0 / 1600 * 1000));
  CHECK(d["baseline"]["input_tokens_p50"].is_null());
  CHECK_THAT(ok.out, Contains("verdict (none)"));

  const auto run_flag = call_cli({"diagnose", good, good, "--baseline-run", "x"});
  CHECK(run_flag.code == 2);
  CHECK_THAT(run_flag.err, Contains("baseline-run"));
  const auto m_of_n = call_cli({"diagnose", good, good, "--datapoints", "6"});
  CHECK(m_of_n.code == 2);
  CHECK_THAT(m_of_n.err, Contains("datapoints"));
  const auto unit = call_cli({"diagnose", good, good, "--latency-unit", "us"});
  CHECK(unit.code == 2);
  CHECK_THAT(unit.err, Contains("latency-unit"));
  const auto absent = call_cli({"diagnose", good, (dir / "nope.csv").string()});
  CHECK(absent.code == 2);
  CHECK_THAT(absent.err, Contains("nope.csv"));
}

TEST_CASE("cli: diagnose reads servesim results files", "[diagnose]") {
  using servesim::test::call_cli;
  const fs::path dir = diagnose_scratch("cli_h5");
  const std::string base = (dir / "base.h5").string();
  const std::string both = (dir / "both.h5").string();
  REQUIRE(call_cli({"run", "--num-requests", "200", "--request-rate", "0.5", "--out", base,
                    "--requests-csv", (dir / "base.csv").string()})
              .code == 0);
  REQUIRE(call_cli({"compare", "--num-requests", "200", "--request-rate", "0.5", "--scheduler",
                    "chunked,vllm-v0", "--out", both})
              .code == 0);
  // The HDF5 file and the CSV of the same run give the same OTPS.
  const auto h5 = call_cli(
      {"diagnose", base, (dir / "base.csv").string(), "--json", (dir / "d.json").string()});
  REQUIRE(h5.code == 0);
  const auto d = nlohmann::json::parse(slurp(dir / "d.json"));
  CHECK(d["baseline"]["p50"]["otps"].get<double>() ==
        Approx(d["current"]["p50"]["otps"].get<double>()).epsilon(1e-4));
  CHECK(d["baseline"]["completed"] == 200);
  // A file with several runs needs --current-run.
  const auto several = call_cli({"diagnose", base, both});
  CHECK(several.code == 2);
  CHECK_THAT(several.err, Contains("current-run"));
  CHECK_THAT(several.err, Contains("chunked:2048"));
  const auto chosen = call_cli({"diagnose", base, both, "--current-run", "chunked:2048"});
  CHECK(chosen.code == 0);
}
