// Fleets: the routers' choices on hand-worked cases, conservation across replicas, determinism,
// and the fleet flags.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analysis/report.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "models/roofline.hpp"
#include "scheduler/policy.hpp"
#include "sim/router.hpp"
#include "sim/simulation.hpp"
#include "traces/datasets.hpp"
#include "traces/synthetic.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::error_field;

namespace {

// A fleet whose state the test sets by hand.
struct FakeFleet final : Router::Fleet {
  std::vector<ReplicaLoad> loads;
  std::vector<int64_t> cached;  // leading cached blocks of any prompt, per replica
  size_t size() const override { return loads.size(); }
  ReplicaLoad load(size_t i) const override { return loads[i]; }
  void cached_prompt_blocks(const RequestSpec&, std::span<int64_t> out) const override {
    std::copy(cached.begin(), cached.end(), out.begin());
  }
  int block_size() const override { return 16; }
  // As a simulation's gateway does: the router then re-reads only the replicas it is told of.
  bool tells = false;
  bool tells_load_changes() const override { return tells; }
};

RequestSpec request(uint32_t id, int32_t input = 64, uint32_t first_span = 0,
                    uint32_t num_spans = 0) {
  RequestSpec r;
  r.id = id;
  r.input_tokens = input;
  r.output_tokens = 8;
  r.first_span = first_span;
  r.num_spans = num_spans;
  r.output_continues = num_spans > 0;  // a turn of a conversation
  return r;
}

RouterOptions kind(RouterKind k) {
  RouterOptions o;
  o.kind = k;
  return o;
}

SimConfig v1_config() {
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.scheduler.policy = Policy::kVllmV1;
  c.scheduler.enable_prefix_caching = true;
  return resolve(c);
}

// N requests at RATE with lognormal lengths of these medians, as the default scenario draws them.
Workload conversations(int64_t n, double rate, int input_median, int output_median, uint64_t seed) {
  SyntheticOptions o;
  o.num_requests = n;
  o.request_rate = rate;
  o.input_len =
      LengthDist::parse("lognormal:" + std::to_string(input_median) + ":0.8:16:6000", "input-len");
  o.output_len =
      LengthDist::parse("lognormal:" + std::to_string(output_median) + ":0.8:2:1500", "output-len");
  o.seed = seed;
  return generate_synthetic(o);
}

SimulateOptions fleet_of(int n, RouterKind k) {
  SimulateOptions o;
  o.fleet.num_replicas = n;
  o.fleet.router.kind = k;
  return o;
}

}  // namespace

TEST_CASE("router: round-robin, least-requests and least-kv by hand", "[fleet]") {
  FakeFleet f;
  f.loads = {{3, 0, 0.5}, {1, 0, 0.2}, {1, 0, 0.2}};
  f.cached = {0, 0, 0};
  const Workload w;
  Router rr(kind(RouterKind::kRoundRobin), f, w);
  CHECK(rr.route(request(0), 0) == 0);
  CHECK(rr.route(request(1), 0) == 1);
  CHECK(rr.route(request(2), 0) == 2);
  CHECK(rr.route(request(3), 0) == 0);

  Router least(kind(RouterKind::kLeastRequests), f, w);
  CHECK(least.route(request(0), 0) == 1);  // 1 and 2 tie at one request: the first, 1
  CHECK(least.route(request(1), 0) == 2);  // still tied: the first after the last pick
  f.loads[2].outstanding = 5;
  CHECK(least.route(request(2), 0) == 1);

  Router kv(kind(RouterKind::kLeastKv), f, w);
  f.loads[1].kv_usage = 0.3;
  CHECK(kv.route(request(0), 0) == 2);
  f.loads[0].kv_usage = 0.1;
  CHECK(kv.route(request(1), 0) == 0);
}

TEST_CASE("router: told of each load change, least-requests and least-kv pick from their tree",
          "[fleet]") {
  // The case above, the fleet telling the router what changed: the same picks, ties included.
  FakeFleet f;
  f.tells = true;
  f.loads = {{3, 0, 0.5}, {1, 0, 0.2}, {1, 0, 0.2}};
  f.cached = {0, 0, 0};
  const Workload w;
  Router least(kind(RouterKind::kLeastRequests), f, w);
  CHECK(least.route(request(0), 0) == 1);
  CHECK(least.route(request(1), 0) == 2);
  f.loads[1].outstanding = 5;
  least.load_changed(1);
  CHECK(least.route(request(3), 0) == 2);  // told: 3, 5, 1
  f.loads[0].outstanding = 0;
  least.load_changed(0);
  CHECK(least.route(request(4), 0) == 0);
  least.set_routable(0, false);
  CHECK(least.route(request(5), 0) == 2);

  Router kv(kind(RouterKind::kLeastKv), f, w);
  f.loads[1].kv_usage = 0.3;
  kv.load_changed(1);
  CHECK(kv.route(request(0), 0) == 2);
  f.loads[0].kv_usage = 0.1;
  kv.load_changed(0);
  CHECK(kv.route(request(1), 0) == 0);
  // Ties over many replicas go to the first after the last pick, cyclically.
  f.loads.assign(40, {2, 0, 0.5});
  f.cached.assign(40, 0);
  Router many(kind(RouterKind::kLeastRequests), f, w);
  for (size_t i = 0; i < 45; ++i)
    CHECK(many.route(request(uint32_t(i)), 0) == i % 40);
}

TEST_CASE("router: prefix-aware weighs cached blocks against the queue and KV usage", "[fleet]") {
  FakeFleet f;
  // Replica 0 holds 3 of the prompt's 4 full blocks but has the longest queue (4) and KV 50%;
  // replica 1 holds nothing, queue 0, KV 10%; replica 2 holds 1 block, queue 2, KV 0%.
  f.loads = {{4, 4, 0.5}, {0, 0, 0.1}, {2, 2, 0.0}};
  f.cached = {3, 0, 1};
  const Workload w;
  Router r(kind(RouterKind::kPrefixAware), f, w);
  // Scores 3 x prefix + 2 x queue + 2 x (1 - KV):
  //   0: 3 x 0.75 + 2 x 0 + 2 x 0.5 = 3.25; 1: 0 + 2 + 1.8 = 3.8; 2: 0.75 + 1 + 2 = 3.75.
  CHECK(r.route(request(0, 64), 0) == 1);
  f.cached = {4, 0, 1};  // the whole prompt cached: 0 scores 4.0
  CHECK(r.route(request(1, 64), 0) == 0);
  RouterOptions prefix_only = kind(RouterKind::kPrefixAware);
  prefix_only.queue_weight = prefix_only.kv_weight = 0;
  f.cached = {3, 0, 1};
  CHECK(Router(prefix_only, f, w).route(request(2, 64), 0) == 0);
}

TEST_CASE("router: session sticks to a conversation's replica", "[fleet]") {
  FakeFleet f;
  f.loads = {{2, 0, 0}, {0, 0, 0}, {1, 0, 0}};
  f.cached = {0, 0, 0};
  Workload w;
  w.spans = {{stream_id(StreamKind::kSession, 7), 0, 0, 32},
             {stream_id(StreamKind::kSession, 8), 0, 0, 32},
             {stream_id(StreamKind::kSession, 7), 0, 0, 64}};
  Router r(kind(RouterKind::kSession), f, w);
  CHECK(r.route(request(0, 64, 0, 1), 0) == 1);  // session 7's first turn: fewest requests
  f.loads[1].outstanding = 9;
  CHECK(r.route(request(1, 64, 1, 1), 0) == 2);  // session 8's first turn
  CHECK(r.route(request(2, 96, 2, 1), 0) == 1);  // session 7 again: sticky despite its load
  CHECK(r.route(request(3, 96), 0) == 2);        // no span: fewest requests
  RequestSpec shared = request(4, 64, 0, 1);     // session 7's stream, but not a turn of it
  shared.output_continues = false;               // (a shared prefix): fewest requests
  CHECK(r.route(shared, 0) == 2);
}

TEST_CASE("router: a signal delay shows the load of the last refresh", "[fleet]") {
  FakeFleet f;
  f.loads = {{0, 0, 0}, {5, 0, 0}};
  f.cached = {0, 0};
  const Workload w;
  RouterOptions o = kind(RouterKind::kLeastRequests);
  o.signal_delay_s = 1.0;
  Router r(o, f, w);
  CHECK(r.route(request(0), 0.0) == 0);  // refreshed at 0: replica 0 is idle
  f.loads[0].outstanding = 10;
  CHECK(r.route(request(1), 0.5) == 0);  // still the snapshot of t = 0
  CHECK(r.route(request(2), 0.99) == 0);
  CHECK(r.route(request(3), 1.0) == 1);  // refreshed at 1 s
  o.signal_delay_s = 0;                  // live
  CHECK(Router(o, f, w).route(request(4), 0.5) == 1);
  CHECK(error_field([] { parse_router("random"); }) == "router");
  CHECK(parse_router("prefix-aware") == RouterKind::kPrefixAware);
}

TEST_CASE("fleet: every request ends once, on one replica, and the replicas add up to the fleet",
          "[fleet][invariants]") {
  Workload w = conversations(1500, 40, 600, 150, 3);
  w[7].input_tokens = 200000;  // longer than the context: rejected, on its replica
  const SimConfig c = v1_config();
  for (RouterKind k : {RouterKind::kRoundRobin, RouterKind::kLeastRequests, RouterKind::kLeastKv,
                       RouterKind::kPrefixAware, RouterKind::kSession}) {
    INFO(router_name(k));
    const RunResult r = simulate(c, w, nullptr, fleet_of(4, k));
    const FleetSummary& f = r.fleet;
    REQUIRE(f.replicas.size() == 4);
    REQUIRE(f.replica_of.size() == w.size());
    CHECK(r.summary.completed + r.summary.rejected == w.size());
    CHECK(r.summary.rejected == 1);
    uint64_t routed = 0, completed = 0, rejected = 0;
    int64_t output = 0;
    for (size_t i = 0; i < 4; ++i) {
      routed += f.routed[i];
      completed += f.replicas[i].completed;
      rejected += f.replicas[i].rejected;
      output += f.replicas[i].output_tokens;
      CHECK(f.replicas[i].total == f.routed[i]);
      CHECK(f.routed[i] > 0);
    }
    CHECK(routed == w.size());
    CHECK(completed == r.summary.completed);
    CHECK(rejected == r.summary.rejected);
    CHECK(output == r.summary.output_tokens);
    REQUIRE(r.requests.size() == w.size());
    for (size_t id = 0; id < w.size(); ++id) {
      const RequestRecord& q = r.requests[id];
      CHECK((q.finished() || q.status == SeqStatus::kRejected));
      CHECK(f.replica_of[id] < 4);
      if (q.finished()) CHECK(q.output_tokens == w[id].output_tokens);
    }
    int64_t expected_output = 0;
    for (const RequestSpec& q : w)
      expected_output += q.id == 7 ? 0 : q.output_tokens;
    CHECK(r.summary.output_tokens == expected_output);
  }
}

TEST_CASE("fleet: the same inputs give the same fleet, byte for byte", "[fleet][invariants]") {
  PrefixRepetitionOptions o;
  o.num_requests = 600;
  o.request_rate = 30;
  o.prefix_len = 512;
  o.suffix_len = 64;
  o.num_prefixes = 6;
  o.output_len = 32;
  const Workload w = generate_prefix_repetition(o);
  const SimConfig c = v1_config();
  SimulateOptions opt = fleet_of(3, RouterKind::kPrefixAware);
  opt.fleet.router.signal_delay_s = 0.05;
  const std::string a = summary_json(simulate(c, w, nullptr, opt), {}).dump();
  const std::string b = summary_json(simulate(c, w, nullptr, opt), {}).dump();
  CHECK(a == b);
  // Prefix-aware routing finds more of the shared prefixes cached than round-robin does.
  const RunResult aware = simulate(c, w, nullptr, fleet_of(3, RouterKind::kPrefixAware));
  const RunResult rr = simulate(c, w, nullptr, fleet_of(3, RouterKind::kRoundRobin));
  CHECK(aware.summary.prefix_cache.hit_rate() > rr.summary.prefix_cache.hit_rate());
}

TEST_CASE("fleet: two idle replicas serve two simultaneous requests as one serves one", "[fleet]") {
  Workload one = {request(0, 512)}, two = {request(0, 512), request(1, 512)};
  one[0].output_tokens = two[0].output_tokens = two[1].output_tokens = 20;
  const SimConfig c = v1_config();
  const RunResult alone = simulate(c, one);
  const RunResult pair = simulate(c, two, nullptr, fleet_of(2, RouterKind::kRoundRobin));
  CHECK(pair.fleet.replica_of == std::vector<uint32_t>{0, 1});
  for (const RequestRecord& r : pair.requests) {
    CHECK(r.first_token_s == alone.requests[0].first_token_s);
    CHECK(r.last_token_s == alone.requests[0].last_token_s);
  }
}

TEST_CASE("fleet: the flags", "[fleet][cli]") {
  const auto ok = call_cli({"run", "--num-replicas", "3", "--router", "least-kv", "--num-requests",
                            "60", "--input-len", "fixed:100", "--output-len", "fixed:10"});
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, Catch::Contains("3 replicas (least-kv)"));
  CHECK_THAT(ok.out, Catch::Contains("fleet: 3 replicas behind least-kv"));
  auto e = call_cli({"run", "--num-replicas", "2", "--router", "random"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("field 'router'"));
  e = call_cli({"run", "--router", "session"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("--num-replicas"));
  e = call_cli({"run", "--num-replicas", "2", "--data-parallel-size", "3"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("field 'data-parallel-size'"));
  e = call_cli({"run", "--num-replicas", "0"});
  CHECK(e.code == 2);
  e = call_cli({"run", "--num-replicas", "2", "--router-signal-delay-s", "-1"});
  CHECK(e.code == 2);
  CHECK_THAT(e.err, Catch::Contains("router-signal-delay-s"));
}

TEST_CASE("fleet: disaggregated TTFT is the prefill, the KV transfer and the decode's first step",
          "[fleet][disaggregated]") {
  const SimConfig c = v1_config();
  SimulateOptions o;
  o.fleet.groups = {ReplicaGroup{c, 1, ReplicaRole::kPrefill},
                    ReplicaGroup{c, 1, ReplicaRole::kDecode}};
  o.fleet.kv_transfer_gb_per_s = 12.5;  // 100 Gb/s
  o.fleet.kv_transfer_latency_s = 0.002;
  Workload w = {request(0, 1000)};
  w[0].output_tokens = 5;
  const RunResult r = simulate(c, w, nullptr, o);
  REQUIRE(r.requests.size() == 1);
  const RequestRecord& q = r.requests[0];
  REQUIRE(q.finished());
  CHECK(q.output_tokens == 5);
  // By hand: the API server's latency; the prefill instance's one step over the whole prompt
  // (from idle, so nothing overlaps it); the transfer of 1000 tokens' KV at 12.5 GB/s after its
  // latency; the decode instance's first step, which recomputes the last prompt token over the
  // 999 received.
  const RooflineCostModel cost(c.gpu, c.model, c.tp, *c.hardware, *c.engine_params);
  const SeqShape prefill{1000, 0, true, true}, last{1, 999, true, true};
  const double transfer = 0.002 + 1000.0 * double(c.model.kv_bytes_per_token_per_gpu(1)) / 12.5e9;
  const double expected = c.frontend_latency_s + cost.cost(std::span(&prefill, 1)).seconds +
                          transfer + cost.cost(std::span(&last, 1)).seconds;
  CHECK(q.ttft_s() == Approx(expected).epsilon(1e-12));
  CHECK(r.fleet.kv_transfers == 1);
  CHECK(r.fleet.kv_transfer_s == Approx(transfer));
  CHECK(r.fleet.decode_of == std::vector<uint32_t>{1});
  CHECK(r.fleet.routed == std::vector<uint64_t>{1, 1});
  // The decode instance computed 1 prompt token and 4 decode tokens; the prefill instance 1000.
  CHECK(r.fleet.replicas[0].prefill_tokens == 1000);
  CHECK(r.fleet.replicas[1].prefill_tokens == 1);
  CHECK(r.fleet.replicas[1].decode_tokens == 4);
  // The pools: the prefill pool's TTFT is the prompt's, the decode pool's 4 inter-token gaps.
  REQUIRE(r.fleet.pools.size() == 2);
  CHECK(r.fleet.pools[0].name == "prefill h100-sxm");
  CHECK(r.fleet.pools[1].name == "decode h100-sxm");
  CHECK(r.fleet.pools[0].ttft_ms.p50 == Approx(r.fleet.replicas[0].ttft_ms.p50));
  CHECK(r.fleet.pools[0].itl_ms.count == 0);
  CHECK(r.fleet.pools[1].itl_ms.count == 4);
}

TEST_CASE("fleet: a disaggregated fleet ends every request once and moves every prompt's KV",
          "[fleet][disaggregated][invariants]") {
  Workload w = conversations(1200, 25, 800, 120, 5);
  w[3].input_tokens = 200000;  // rejected by the prefill instance
  const SimConfig c = v1_config();
  SimulateOptions opt;
  opt.fleet.router.kind = RouterKind::kLeastRequests;
  opt.fleet.groups = {ReplicaGroup{c, 2, ReplicaRole::kPrefill},
                      ReplicaGroup{c, 3, ReplicaRole::kDecode}};
  const RunResult r = simulate(c, w, nullptr, opt);
  CHECK(r.summary.completed + r.summary.rejected == w.size());
  CHECK(r.summary.rejected == 1);
  CHECK(r.fleet.kv_transfers == w.size() - 1);
  int64_t expected_output = 0;
  for (const RequestSpec& q : w)
    expected_output += q.id == 3 ? 0 : q.output_tokens;
  CHECK(r.summary.output_tokens == expected_output);
  uint64_t decoded = 0;
  for (size_t i = 2; i < 5; ++i)
    decoded += r.fleet.replicas[i].completed;
  CHECK(decoded == r.summary.completed);
  for (size_t id = 0; id < w.size(); ++id) {
    if (id == 3) continue;
    CHECK(r.fleet.replica_of[id] < 2);
    CHECK(r.fleet.decode_of[id] >= 2);
    CHECK(r.requests[id].ttft_s() > 0);
  }
  // Same inputs, same fleet.
  CHECK(summary_json(r, {}).dump() == summary_json(simulate(c, w, nullptr, opt), {}).dump());
}

TEST_CASE("fleet: one API server latency whatever the order of a mixed fleet's groups",
          "[fleet][sim]") {
  // It came from the first group's cost model: the same H100 replica's TTFT changed with the
  // order of --replica-gpus. Two requests far apart, round robin: one per replica, each alone.
  SimConfig h100 = v1_config(), a100 = v1_config();
  a100.gpu = find_gpu("a100-80g");
  a100.hardware.reset();
  a100.engine_params.reset();
  a100 = resolve(a100);
  Workload w = {request(0, 500), request(1, 500)};
  w[1].arrival_s = 10;
  const auto ttft_on_h100 = [&](bool h100_first) {
    SimulateOptions o;
    o.fleet.groups = {ReplicaGroup{h100_first ? h100 : a100, 1, ReplicaRole::kColocated},
                      ReplicaGroup{h100_first ? a100 : h100, 1, ReplicaRole::kColocated}};
    const RunResult r = simulate(h100_first ? h100 : a100, w, nullptr, o);
    REQUIRE(r.summary.completed == 2);
    return r.requests[h100_first ? 0 : 1].ttft_s();
  };
  CHECK(ttft_on_h100(true) == Approx(ttft_on_h100(false)).epsilon(1e-12));
  CHECK(h100.frontend_latency_s == a100.frontend_latency_s);
}

TEST_CASE("fleet: a mixed fleet's KV usage percentiles are of each replica's own cache",
          "[fleet][sim]") {
  // Issue 25: they were "-". One request on the A100 alone (round robin sends the first to the
  // H100 replica, the second to the A100), far apart: the fleet's usage at any step is that
  // replica's own fraction.
  SimConfig h100 = v1_config(), a100 = v1_config();
  a100.gpu = find_gpu("a100-40g");
  a100.hardware.reset();
  a100.engine_params.reset();
  a100.scheduler.max_model_len = 32768;  // its cache holds 129,008 tokens: vLLM refuses 131,072
  a100 = resolve(a100);
  Workload w = {request(0, 4000), request(1, 4000)};
  w[0].output_tokens = w[1].output_tokens = 200;
  w[1].arrival_s = 100;
  SimulateOptions o;
  o.fleet.groups = {ReplicaGroup{h100, 1, ReplicaRole::kColocated},
                    ReplicaGroup{a100, 1, ReplicaRole::kColocated}};
  const RunResult r = simulate(h100, w, nullptr, o);
  REQUIRE(r.summary.completed == 2);
  const double h = r.fleet.replicas[0].kv_usage_max, a = r.fleet.replicas[1].kv_usage_max;
  REQUIRE(a > h);  // the same request fills more of the A100-40GB's smaller cache
  CHECK(std::isfinite(r.summary.kv_usage_p50));
  CHECK(std::isfinite(r.summary.kv_usage_p99));
  CHECK(r.summary.kv_usage_max == Approx(a).epsilon(0.01));
  CHECK(r.summary.kv_usage_p99 <= r.summary.kv_usage_max * 1.05);
  CHECK(r.summary.kv_usage_p99 > h);  // the A100's steps count at the A100's fraction
}

TEST_CASE("fleet: disaggregated KV crosses the network unless the pools share NVLink",
          "[fleet][disaggregated]") {
  const SimConfig c = v1_config();
  Workload w = {request(0, 1000)};
  const auto transfer_s = [&](bool nvlink) {
    SimulateOptions o;
    o.fleet.groups = {ReplicaGroup{c, 1, ReplicaRole::kPrefill},
                      ReplicaGroup{c, 1, ReplicaRole::kDecode}};
    o.fleet.kv_transfer_latency_s = 0;
    o.fleet.kv_transfer_nvlink = nvlink;
    return simulate(c, w, nullptr, o).fleet.kv_transfer_s;
  };
  const double bytes = 1000.0 * double(c.model.kv_bytes_per_token_per_gpu(1));
  // One direction of the H100's NIC (ConnectX-7, 400 Gb/s) or of its NVLink (450 GB/s, half
  // the datasheet's 900 bidirectional).
  CHECK(transfer_s(false) == Approx(bytes / 50e9));
  CHECK(transfer_s(true) == Approx(bytes / 450e9));
}

TEST_CASE("fleet: the pool flags", "[fleet][disaggregated][cli]") {
  const std::vector<std::string> small = {"--num-requests", "40",           "--input-len",
                                          "fixed:300",      "--output-len", "fixed:8"};
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "run");
    args.insert(args.end(), small.begin(), small.end());
    return call_cli(args);
  };
  auto r = run({"--scheduler", "vllm-v1", "--prefill-replicas", "1", "--decode-replicas", "2",
                "--decode-gpu", "a100-80g", "--kv-transfer-gbps", "400"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("prefill h100-sxm"));
  CHECK_THAT(r.out, Catch::Contains("decode a100-80g"));
  CHECK_THAT(r.out, Catch::Contains("KV transfers: 40"));
  r = run({"--replica-gpus", "h100-sxm:2,a100-80g:1"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("3 replicas"));
  CHECK_THAT(r.out, Catch::Contains("a100-80g"));
  const std::pair<std::vector<std::string>, const char*> bad[] = {
      {{"--scheduler", "chunked", "--prefill-replicas", "1", "--decode-replicas", "1"},
       "field 'scheduler'"},
      {{"--scheduler", "vllm-v1", "--prefill-replicas", "1"}, "field 'decode-replicas'"},
      {{"--decode-gpu", "a100-80g"}, "field 'prefill-replicas'"},
      {{"--replica-gpus", "h100-sxm"}, "field 'replica-gpus'"},
      {{"--replica-gpus", "h100-sxm:0"}, "field 'replica-gpus'"},
      {{"--replica-gpus", "h100-sxm:2", "--num-replicas", "3"}, "field 'replica-gpus'"},
      {{"--scheduler", "vllm-v1", "--prefill-replicas", "1", "--decode-replicas", "1",
        "--kv-transfer-gbps", "-4"},
       "field 'kv-transfer-gbps'"},
  };
  for (const auto& [args, field] : bad) {
    const auto e = run(args);
    INFO(field);
    CHECK(e.code == 2);
    CHECK_THAT(e.err, Catch::Contains(field));
  }
}

TEST_CASE("fleet: a sweep of fleets does not depend on --jobs", "[fleet][sweep][cli]") {
  const auto dir = servesim::test::scratch("fleet_jobs");
  auto sweep = [&](const char* jobs) {
    const std::string csv = (dir / (std::string("j") + jobs + ".csv")).string();
    const auto r =
        call_cli({"sweep", "--num-replicas", "3", "--router", "prefix-aware", "--dataset-name",
                  "prefix_repetition", "--num-requests", "120", "--request-rate", "10,40",
                  "--scheduler", "vllm-v1", "--jobs", jobs, "--out",
                  (dir / (std::string("j") + jobs + ".h5")).string(), "--csv", csv});
    INFO(r.err);
    REQUIRE(r.code == 0);
    return servesim::test::slurp(csv);
  };
  const std::string one = sweep("1");
  CHECK(one == sweep("2"));
  CHECK(one.find("vllm-v1") != std::string::npos);
}

TEST_CASE("fleet: one replica of a named GPU runs on that GPU, and no report prints nan",
          "[fleet][cli]") {
  // Item 5: --replica-gpus a100-80g:1 simulated an h100-sxm (the one-replica fleet collapsed to a
  // plain run and dropped the GPU).
  const auto fleet = call_cli({"run", "--num-requests", "30", "--replica-gpus", "a100-80g:1"});
  const auto plain = call_cli({"run", "--num-requests", "30", "--gpu", "a100-80g"});
  INFO(fleet.err);
  REQUIRE(fleet.code == 0);
  REQUIRE(plain.code == 0);
  CHECK_THAT(fleet.out, Catch::Contains("on a100-80g x1"));
  CHECK(fleet.out == plain.out);
  // Item 19: a fleet whose queues stayed empty printed "queue nan" (max/mean of zeros).
  const auto idle = call_cli({"run", "--num-requests", "6", "--request-rate", "0.5",
                              "--num-replicas", "3", "--router", "round-robin"});
  INFO(idle.err);
  REQUIRE(idle.code == 0);
  CHECK_THAT(idle.out, Catch::Contains("fleet: 3 replicas"));
  CHECK_THAT(idle.out, !Catch::Contains("nan"));
}
