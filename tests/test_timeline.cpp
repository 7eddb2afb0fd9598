// The Perfetto timeline: what it holds for a window, on a hand-worked disaggregated request and
// on a fleet, and its flags.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/timeline.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "scheduler/policy.hpp"
#include "traces/synthetic.hpp"

using namespace servesim;
using servesim::test::error_field;

namespace {

SimConfig v1() {
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.scheduler.policy = Policy::kVllmV1;
  return resolve(c);
}

}  // namespace

TEST_CASE("timeline: one disaggregated request's phases, transfer and steps", "[timeline]") {
  const SimConfig c = v1();
  SimulateOptions o;
  o.keep_steps = true;
  o.fleet.groups = {ReplicaGroup{c, 1, ReplicaRole::kPrefill},
                    ReplicaGroup{c, 1, ReplicaRole::kDecode}};
  Workload w(1);
  w[0].input_tokens = 600;
  w[0].output_tokens = 4;
  const RunResult r = simulate(c, w, nullptr, o);
  const auto j = timeline_json(r, 0, 10);
  std::map<std::string, int> begins, ends;
  int steps = 0, transfers = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "b") ++begins[e["name"].get<std::string>()];
    if (ph == "e") ++ends[e["name"].get<std::string>()];
    if (ph == "X" && e["cat"] == "step") {
      ++steps;
      CHECK(e["pid"].get<int>() < 2);
    }
    if (ph == "X" && e["cat"] == "transfer") {
      ++transfers;
      CHECK(e["pid"] == 1);  // shown on the decode replica that receives it
      CHECK(e["ts"].get<double>() == Approx(r.fleet.kv_sent_s[0] * 1e6));
      CHECK(e["dur"].get<double>() ==
            Approx((r.fleet.kv_landed_s[0] - r.fleet.kv_sent_s[0]) * 1e6));
    }
  }
  // Queued, prefill (prefill replica), first token (decode replica), decode: each opened once,
  // closed once.
  for (const char* p : {"queued", "prefill", "first token", "decode"}) {
    INFO(p);
    CHECK(begins[p] == 1);
    CHECK(ends[p] == 1);
  }
  CHECK(transfers == 1);
  CHECK(steps == int(r.steps.size()));  // 1 prefill step, then 4 on the decode replica
  CHECK(steps == 5);
  // A window after the run holds only the replicas' names.
  const auto after = timeline_json(r, 100, 200);
  for (const auto& e : after["traceEvents"])
    CHECK(e["ph"] == "M");
}

TEST_CASE("timeline: a fleet's window and the flags", "[timeline][cli]") {
  const auto dir = servesim::test::scratch("timeline");
  const auto path = (dir / "t.json").string();
  const auto r = servesim::test::call_cli(
      {"run", "--num-replicas", "3", "--router", "least-requests", "--num-requests", "200",
       "--request-rate", "20", "--timeline", path, "--timeline-window", "1:2"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(servesim::test::slurp(path));
  int names = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") {
      names += e["name"] == "process_name";
      continue;
    }
    CHECK(e["pid"].get<int>() < 3);
    if (e["ph"] == "X") {  // a step overlapping [1 s, 2 s]
      CHECK(e["ts"].get<double>() <= 2e6);
      CHECK(e["ts"].get<double>() + e["dur"].get<double>() >= 1e6);
    }
  }
  CHECK(names == 3);
  CHECK(error_field([] { parse_timeline_window("2:1"); }) == "timeline-window");
  CHECK(error_field([] { parse_timeline_window("x"); }) == "timeline-window");
  CHECK(error_field([] { parse_timeline_window("1:2x"); }) == "timeline-window");
  const auto e = servesim::test::call_cli({"run", "--timeline-window", "0:5"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("--timeline"));
}

TEST_CASE("timeline: only the window's steps are kept, and the file is the same",
          "[timeline][cli]") {
  // Issue 23: a --timeline kept every step (~23 KB a request at low load: 100k requests peaked
  // at 2.67 GB), though only its window is written.
  const SimConfig c = v1();
  SyntheticOptions w;
  w.num_requests = 200;
  w.request_rate = 2;
  SimulateOptions all;
  all.keep_steps = true;
  SimulateOptions window = all;
  window.metrics.keep_steps_from_s = 10;
  window.metrics.keep_steps_to_s = 20;
  const RunResult full = simulate(c, generate_synthetic(w), nullptr, all);
  const RunResult kept = simulate(c, generate_synthetic(w), nullptr, window);
  REQUIRE(!kept.steps.empty());
  CHECK(kept.steps.size() * 4 < full.steps.size());
  for (const StepRecord& s : kept.steps)
    CHECK((s.start_s <= 20 && s.start_s + s.duration_s >= 10));
  CHECK(timeline_json(full, 10, 20).dump() == timeline_json(kept, 10, 20).dump());
  // The command writes the same file whether or not --out keeps every step.
  const auto dir = servesim::test::scratch("timeline_window_memory");
  const std::vector<std::string> run = {"run", "--num-requests",    "100", "--request-rate",
                                        "2",   "--timeline-window", "5:15"};
  auto with = [&](const std::vector<std::string>& more) {
    std::vector<std::string> a = run;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  REQUIRE(servesim::test::call_cli(with({"--timeline", (dir / "a.json").string()})).code == 0);
  REQUIRE(servesim::test::call_cli(
              with({"--timeline", (dir / "b.json").string(), "--out", (dir / "b.h5").string()}))
              .code == 0);
  CHECK(servesim::test::slurp(dir / "a.json") == servesim::test::slurp(dir / "b.json"));
}
