// servesim diagnose's decision rule on statistics and logs built by hand: the precedence of the
// findings and the tolerance, the prompts first when they moved with the latency, the host
// check on the fastest prefills, and the edges (changes from zero, dropped requests, alarm ends,
// tiny periods). Simulated and trace-driven cases are in test_diagnose.cpp and
// test_diagnose_load.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/diagnose.hpp"
#include "analysis/diagnose_verdict_text.hpp"

using namespace servesim;
using Catch::Contains;

namespace {

std::string all_text(const VerdictText& t) {
  std::string s = t.headline + "\n";
  for (const std::string& line : t.details)
    s += line + "\n";
  return s;
}

// Five identical requests per log by hand: 100 output tokens, no queueing, prefill speed
// input / TTFT.
RequestLog uniform_log(int64_t input, double ttft_ms, double decode_ms) {
  RequestLog log;
  log.source = "uniform";
  for (int i = 0; i < 5; ++i) {
    log.arrival_s.push_back(i);
    log.ttft_ms.push_back(ttft_ms);
    log.e2e_ms.push_back(ttft_ms + decode_ms);
    log.output_tokens.push_back(100);
    log.input_tokens.push_back(input);
    log.queue_ms.push_back(0);
  }
  return log;
}

// A log at 5 req/s whose decode line is tpot = 5 ms + 0.2 ms x concurrency over concurrencies 10
// to 30 (p50 20), p50s IL 1100 ms, TTFT 100 ms, OTC 100, OTPS 100.
LogStats loaded_stats() {
  LogStats s;
  s.p50 = {1100, 100, 100, 100};
  s.request_rate = 5;
  s.decode.requests = 100;
  s.decode.a_ms = 5;
  s.decode.b_ms = 0.2;
  s.decode.concurrency_p5 = 10;
  s.decode.concurrency_p50 = 20;
  s.decode.concurrency_p95 = 30;
  return s;
}

// The current log's prefill speed p99, as the JSON reports it.
double prefill_tps(const Diagnosis& d) {
  return diagnosis_json(d)["current"]["prefill_tps_p99"].get<double>();
}

}  // namespace

TEST_CASE("diagnose: the verdict's precedence and tolerance", "[diagnose]") {
  LogStats base;
  base.p50 = {1100, 100, 100, 100};
  auto with = [&](double il, double ttft, double otc, double otps) {
    LogStats s = base;
    s.p50 = {il, ttft, otc, otps};
    return s;
  };
  // OTPS down wins over TTFT up.
  const Verdict both = decide(base, with(2300, 300, 100, 50), 0.1);
  CHECK(both.finding == Finding::kThroughput);
  CHECK(both.otps_down);
  CHECK(both.ttft_up);
  CHECK(both.otps.relative == Approx(-0.5));
  // TTFT up with OTPS up too: still the TTFT finding.
  CHECK(decide(base, with(1300, 300, 100, 100), 0.1).finding == Finding::kTtft);
  CHECK(decide(base, with(1000 + 300, 300, 100, 120), 0.1).finding == Finding::kTtft);
  // Latency and tokens up, TTFT and OTPS within tolerance.
  CHECK(decide(base, with(2100, 100, 200, 100), 0.1).finding == Finding::kOutputLength);
  // Just inside the tolerance on every side.
  CHECK(decide(base, with(1100, 109, 100, 91), 0.1).finding == Finding::kNone);
  // ... and just outside.
  CHECK(decide(base, with(1100, 111, 100, 100), 0.1).finding == Finding::kTtft);
  CHECK(decide(base, with(1100, 100, 100, 89), 0.1).finding == Finding::kThroughput);
  // A wider tolerance absorbs the same change.
  CHECK(decide(base, with(1100, 100, 100, 89), 0.2).finding == Finding::kNone);
  // Faster everything is no regression.
  CHECK(decide(base, with(600, 50, 100, 200), 0.1).finding == Finding::kNone);
}

TEST_CASE("diagnose: prompts that moved with the latency come first", "[diagnose]") {
  LogStats base;
  base.requests = base.completed = 100;
  base.p50 = {1100, 100, 100, 100};
  base.input_tokens_p50 = 1000;
  auto with = [&](double input, double il, double ttft, double otps) {
    LogStats s = base;
    s.p50 = {il, ttft, 100, otps};
    s.input_tokens_p50 = input;
    return s;
  };
  auto finding = [&](const LogStats& cur) {
    return std::string(finding_name(decide(base, cur, 0.1).finding));
  };
  // Longer prompts with TTFT up, OTPS down (the loaded case), or both: the prompts.
  CHECK(finding(with(2000, 1300, 300, 100)) == "input_length");
  CHECK(finding(with(2000, 2100, 100, 50)) == "input_length");
  CHECK(finding(with(2000, 2300, 300, 50)) == "input_length");
  const VerdictText loaded = verdict_text(decide(base, with(2000, 2300, 300, 50), 0.1));
  CHECK_THAT(loaded.headline, Contains("prompts got longer: input tokens p50 1000.0 -> 2000.0"));
  CHECK_THAT(all_text(loaded), Contains("a consequence of the prompts, not the verdict"));
  // The host check needs the queueing delay: without it, the verdict says it cannot tell.
  CHECK_THAT(all_text(loaded), Contains("cannot tell whether the host slowed"));
  // Shorter prompts with a faster service: the prompts again.
  CHECK(finding(with(500, 700, 50, 120)) == "input_length");
  CHECK_THAT(verdict_text(decide(base, with(500, 700, 50, 120), 0.1)).headline,
             Contains("prompts got shorter"));
  // Shorter prompts do not explain a slower host, nor longer prompts a faster service.
  CHECK(finding(with(500, 2100, 100, 50)) == "throughput");
  CHECK_THAT(all_text(verdict_text(decide(base, with(500, 2100, 100, 50), 0.1))),
             Contains("so they do not explain the slowdown"));
  CHECK(finding(with(2000, 700, 50, 120)) == "none");
  // Prompts within the tolerance, or a latency that held: the other rules, and a note.
  CHECK(finding(with(1090, 1300, 300, 100)) == "ttft");
  CHECK(finding(with(1090, 2100, 100, 50)) == "throughput");
  CHECK_THAT(all_text(verdict_text(decide(base, with(1090, 2100, 100, 50), 0.1))),
             Contains("the prompts held"));
  CHECK(finding(with(2000, 1100, 100, 100)) == "none");
  CHECK_THAT(verdict_text(decide(base, with(2000, 1100, 100, 100), 0.1)).headline,
             Contains("though the prompts changed (input tokens p50 +100.0%)"));
  // Not recorded in a log: judged as before, and the verdict says so.
  CHECK(finding(with(NAN, 2100, 100, 50)) == "throughput");
  CHECK(finding(with(NAN, 1300, 300, 100)) == "ttft");
  CHECK_THAT(all_text(verdict_text(decide(base, with(NAN, 2100, 100, 50), 0.1))),
             Contains("input tokens: not recorded in the current log (give --col-input)"));
}

TEST_CASE("diagnose: the host check reads the fastest prefills per prompt token", "[diagnose]") {
  // 1000 tokens in 100 ms: 10,000 tokens/s. Doubled prompts at the same speed take 200 ms.
  const RequestLog base = uniform_log(1000, 100, 1000);
  const Diagnosis same_host = diagnose(base, uniform_log(2000, 200, 2000), DiagnoseOptions{});
  CHECK(prefill_tps(same_host) == Approx(10000));
  CHECK(finding_name(same_host.verdict.finding) == std::string("input_length"));
  CHECK_THAT(all_text(verdict_text(same_host.verdict)),
             Contains("the host prefills as fast as before"));
  // Doubled prompts in 600 ms: the host prefills at a third of its speed, and the verdict says
  // so beside the prompts.
  const Diagnosis slower = diagnose(base, uniform_log(2000, 600, 2000), DiagnoseOptions{});
  CHECK(prefill_tps(slower) == Approx(2000.0 / 0.6));
  CHECK(finding_name(slower.verdict.finding) == std::string("input_length"));
  CHECK_THAT(verdict_text(slower.verdict).headline, Contains("check the host as well"));
  CHECK_THAT(all_text(verdict_text(slower.verdict)), Contains("the host is slower as well"));
  // Without a queueing column there is no host check.
  RequestLog no_queue = uniform_log(2000, 600, 2000);
  no_queue.queue_ms.clear();
  CHECK(std::isnan(prefill_tps(diagnose(base, no_queue, DiagnoseOptions{}))));
}

TEST_CASE("diagnose: changes from zero, dropped requests, alarm ends and tiny periods",
          "[diagnose]") {
  LogStats base;
  base.requests = base.completed = 100;
  base.p50 = {100, 0, 10, 100};  // a TTFT of 0 ms at the baseline
  LogStats cur = base;
  cur.p50 = {5100, 5000, 10, 100};
  // All of the change is TTFT: a rise from 0 is significant.
  const Verdict v = decide(base, cur, 0.1);
  CHECK(v.finding == Finding::kTtft);
  // Half the requests failed: the verdict says their share fell.
  cur = base;
  cur.completed = 50;
  const Verdict dropped = decide(base, cur, 0.1);
  CHECK(dropped.fewer_completed);
  bool said = false;
  for (const std::string& line : verdict_text(dropped).details)
    said = said || line.find("100.0% -> 50.0%") != std::string::npos;
  CHECK(said);
  // An alarm that ends in missing data says so, not "OK again".
  const std::vector<double> otps = {70, NAN};
  const std::vector<AlarmState> s = evaluate_alarm(otps, 80, 1, 1);
  CHECK(s == std::vector<AlarmState>{AlarmState::kAlarm, AlarmState::kInsufficientData});
  const auto e = alarm_episodes(s);
  REQUIRE(e.size() == 1);
  CHECK(e[0].ended);
  // A period so small that it overflows is an error naming --period-s, never a crash.
  RequestLog log;
  log.arrival_s = {1.7e9, 1.7e9 + 5};
  log.ttft_ms = {10, 10};
  log.e2e_ms = {100, 100};
  log.output_tokens = {5, 5};
  for (double period : {1e-300, 1e-7}) {
    CHECK_THROWS_WITH(compute_windows(log, period), Contains("period-s"));
  }
}

TEST_CASE("diagnose: OTPS down at the same decode speed is the load's cause, by hand",
          "[diagnose]") {
  // Both logs' decode lines: tpot = 5 ms + 0.2 ms x concurrency, concurrency 10 to 30. The
  // current's OTPS p50 halved.
  LogStats base = loaded_stats();
  LogStats cur = base;
  cur.p50 = {2100, 100, 100, 50};
  cur.decode.concurrency_p50 = 25;
  // The same line, bigger batches, nothing else moved: noise.
  Verdict v = decide(base, cur, 0.1);
  CHECK(v.finding == Finding::kNoise);
  CHECK(v.decode_held);
  CHECK_FALSE(v.decode_extrapolated);
  CHECK(v.matched_concurrency == 25);  // the current's p50, inside both ranges
  CHECK(v.decode_speed.relative == Approx(0));
  CHECK(v.concurrency.relative == Approx(0.25));
  CHECK_THAT(all_text(verdict_text(v)), Contains("not alarm-worthy"));
  // Longer answers, or a higher rate, or a changed configuration make the batches bigger.
  LogStats longer = cur;
  longer.p50.otc = 200;
  CHECK(decide(base, longer, 0.1).finding == Finding::kOutputLength);
  LogStats faster_arrivals = cur;
  faster_arrivals.request_rate = 6;
  CHECK(decide(base, faster_arrivals, 0.1).finding == Finding::kRate);
  LogStats reconfigured = cur;
  base.config = {{"gpu", "h100-sxm"}, {"max_num_seqs", 256}, {"workload", {{"seed", 1}}}};
  reconfigured.config = {{"gpu", "h100-sxm"}, {"max_num_seqs", 512}, {"workload", {{"seed", 1}}}};
  const Verdict config = decide(base, reconfigured, 0.1);
  CHECK(config.finding == Finding::kConfig);
  REQUIRE(config.config_changes.size() == 1);
  CHECK(config.config_changes[0] == "max_num_seqs: 256 -> 512");
  // Only the seed differs: noise, and the headline names the seeds.
  LogStats other_seed = cur;
  other_seed.config = {{"gpu", "h100-sxm"}, {"max_num_seqs", 256}, {"workload", {{"seed", 7}}}};
  const Verdict seeded = decide(base, other_seed, 0.1);
  CHECK(seeded.finding == Finding::kNoise);
  CHECK_THAT(verdict_text(seeded).headline, Contains("but for the seed (7 instead of 1)"));
  // A steeper line (each token 30% slower at the same concurrency): the host, throughput.
  LogStats slower = cur;
  slower.decode.a_ms = 6.5;
  slower.decode.b_ms = 0.26;
  const Verdict host = decide(base, slower, 0.1);
  CHECK(host.finding == Finding::kThroughput);
  CHECK(host.decode_slower);
  CHECK(host.decode_speed.relative == Approx(1 / 1.3 - 1));
  // Longer answers on a slower host: still the host.
  slower.p50.otc = 200;
  CHECK(decide(base, slower, 0.1).finding == Finding::kThroughput);
  // No decode line in a log (too few requests): OTPS down is throughput, as the article reads it.
  LogStats unknown = cur;
  unknown.decode = DecodeLoad{};
  unknown.p50.otc = 200;
  CHECK(decide(base, unknown, 0.1).finding == Finding::kThroughput);
  // Loads that do not overlap: the baseline's line extrapolated to the current's p50, and said.
  LogStats heavy = cur;
  heavy.decode.concurrency_p5 = 50;
  heavy.decode.concurrency_p50 = 60;
  heavy.decode.concurrency_p95 = 70;
  const Verdict far = decide(base, heavy, 0.1);
  CHECK(far.decode_extrapolated);
  CHECK(far.matched_concurrency == 60);
  CHECK_THAT(all_text(verdict_text(far)), Contains("the baseline's line extrapolated"));
  // TTFT up with a higher rate while the host prefills as fast: the rate.
  LogStats queued = base;
  queued.p50 = {1300, 300, 100, 100};
  queued.request_rate = 7;
  CHECK(decide(base, queued, 0.1).finding == Finding::kRate);
}

TEST_CASE("diagnose: the decode line of a log built by hand", "[diagnose]") {
  // Twenty requests of 11 tokens: ten alone (concurrency 1, 10 ms a token after the first), ten
  // in pairs (concurrency 2, 14 ms a token): tpot = 6 + 4 x concurrency.
  RequestLog log;
  log.source = "hand";
  for (int i = 0; i < 10; ++i) {  // alone, 1 s apart
    log.arrival_s.push_back(i);
    log.ttft_ms.push_back(50);
    log.e2e_ms.push_back(50 + 10 * 10);
  }
  for (int i = 0; i < 10; ++i) {  // pairs arriving together, 1 s apart, from t = 100 s
    log.arrival_s.push_back(100 + i / 2);
    log.ttft_ms.push_back(50);
    log.e2e_ms.push_back(50 + 10 * 14);
  }
  log.output_tokens.assign(20, 11);
  const DecodeLoad d = decode_load(log);
  REQUIRE(d.defined());
  CHECK(d.requests == 20);
  CHECK(d.a_ms == Approx(6));
  CHECK(d.b_ms == Approx(4));
  CHECK(d.concurrency_p5 == Approx(1));
  CHECK(d.concurrency_p95 == Approx(2));
  // Fewer than kMinDecodeRequests, or one output token each: undefined.
  RequestLog few = log;
  few.output_tokens.assign(20, 1);
  CHECK_FALSE(decode_load(few).defined());
  // One concurrency throughout: flat at the mean.
  RequestLog flat = log;
  flat.arrival_s.resize(10);
  flat.ttft_ms.resize(10);
  flat.e2e_ms.resize(10);
  flat.output_tokens.resize(10);
  const DecodeLoad f = decode_load(flat);
  CHECK(f.b_ms == 0);
  CHECK(f.a_ms == Approx(10));
}

TEST_CASE("diagnose: configurations equal but for the seed make a realized rate change noise",
          "[diagnose]") {
  LogStats base = loaded_stats();
  base.config = {{"gpu", "h100-sxm"}, {"workload", {{"request_rate", 9}, {"seed", 0}}}};
  LogStats cur = base;
  cur.p50 = {2100, 100, 100, 50};
  cur.request_rate = 6;  // the draw's realized rate, +20%
  cur.config["workload"]["seed"] = 1;
  const Verdict v = decide(base, cur, 0.1);
  CHECK(v.other_seed_only);
  CHECK(v.finding == Finding::kNoise);
  CHECK_THAT(verdict_text(v).headline, Contains("its rate +20.0%"));
  // TTFT up from more queueing at that rate: noise as well; without recorded configurations,
  // the rate.
  LogStats queued = base;
  queued.p50 = {1300, 300, 100, 100};
  queued.request_rate = 7;
  queued.config["workload"]["seed"] = 1;
  CHECK(decide(base, queued, 0.1).finding == Finding::kNoise);
  queued.config = nullptr;
  CHECK(decide(base, queued, 0.1).finding == Finding::kRate);
}
