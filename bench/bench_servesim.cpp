// Google Benchmark suite: one benchmark per question.
//  - BM_EventLoop: what one event costs (schedule + pop + dispatch).
//  - BM_PolicyStep: what one scheduling decision + completion costs with 256 running decodes
//    (vllm-v0, chunked, vllm-v1 with its prefix cache), and the heap allocations per step.
//  - BM_W1: a whole run of workload W1 (Llama-3.1-8B, h100-sxm, TP1, 10,000 requests, Poisson
//    20 req/s, input and output normal:512:256:2:7000, budget 2048, max_num_seqs 256, seed 42)
//    under chunked (Arg 0) or vllm-v1 with prefix caching and async scheduling (Arg 1), with
//    simulated output tokens per wall second as a counter.
//  - BM_SweepPoint: one point of a sweep end to end (its RunSpec resolved, 1,000 W1-shaped
//    requests generated and simulated): points per second, what bounds `servesim sweep`.
//  - BM_ResultsFile: writing W1's HDF5 results file (requests, steps, 5-minute windows, ITL
//    histogram).
//  - BM_Router: one routing decision, per router and replica count (8, 64, 512), the fleet
//    telling the router which replicas' loads changed (two a decision), as a simulation's does.
//  - BM_PrefixFleet: a prefix-aware fleet end to end (prefix_repetition, 4,000 requests, vllm-v1)
//    by replica count, the router asking each replica's cache (Arg 0) or the KV-event index (1).
//  - BM_Capacity: the capacity search of the default scenario under ttft_ms_p99=2000, with its
//    probes and the probes stopped at their last arrival as counters.
//  - BM_KvBlockPool: V1's block pool alone, one request's 64 blocks allocated and freed, over 1
//    or 64 pools of 28,000 blocks taken in turn (a fleet's pools outgrowing the caches).
//  - BM_Fleet: W1-shaped requests over 8 or 64 replicas (round-robin, 11 req/s and 150 requests
//    a replica), chunked (Arg 0) or vllm-v1 (Arg 1); simulated output tokens as items.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "analysis/capacity.hpp"
#include "analysis/results.hpp"
#include "analysis/run_spec.hpp"
#include "bench/alloc_counter.hpp"
#include "bench/azure2024_csv.hpp"
#include "scheduler/kv_cache_manager.hpp"
#include "scheduler/scheduler.hpp"
#include "sim/event_loop.hpp"
#include "sim/router.hpp"
#include "sim/simulation.hpp"
#include "sim/workload_block_hasher.hpp"
#include "traces/import.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace_store.hpp"

using namespace servesim;

namespace {

class Counter final : public EventLoop::Process {
 public:
  explicit Counter(uint64_t limit) : limit_(limit) {}
  void handle(EventLoop& loop, uint32_t) override {
    if (++n_ < limit_)
      loop.schedule(loop.now() + 0.001 * double(n_ % 7), EventLoop::kStepDone, this, 0);
  }
  uint64_t n_ = 0;

 private:
  uint64_t limit_;
};

void BM_EventLoop(benchmark::State& state) {
  const uint64_t events = 1 << 16;
  for (auto _ : state) {
    EventLoop loop;
    std::vector<Counter> chains(64, Counter(events / 64));
    for (auto& c : chains)
      loop.schedule(0, EventLoop::kArrival, &c, 0);
    loop.run();
    benchmark::DoNotOptimize(loop.processed());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(events));
}
BENCHMARK(BM_EventLoop);

void BM_PolicyStep(benchmark::State& state) {
  SchedulerConfig c;
  const Policy policies[] = {Policy::kVllmV0, Policy::kChunked, Policy::kVllmV1};
  c.policy = policies[state.range(0)];
  // Outputs long enough never to finish; vllm-v0's budget must cover such a request's recompute.
  c.max_num_batched_tokens = c.policy == Policy::kVllmV0 ? int64_t(1) << 30 : 2048;
  c.max_num_seqs = 256;
  c.max_model_len = 1 << 30;
  c.enable_prefix_caching = c.policy == Policy::kVllmV1;
  const size_t n = 256;
  Workload w(n);
  for (uint32_t id = 0; id < n; ++id)
    w[id].id = id;
  const WorkloadBlockHasher hasher(w, c.block_size);
  // V1 keeps a record per block: 2^20 blocks of 16 tokens hold every request's decodes for the
  // benchmark's fixed 50,000 steps (V0 counts blocks only).
  const std::unique_ptr<Scheduler> scheduler = make_scheduler(
      c, c.policy == Policy::kVllmV1 ? int64_t(1) << 20 : int64_t(1) << 30, n, &hasher);
  Scheduler& s = *scheduler;
  for (uint32_t id = 0; id < n; ++id) {
    // V1's outputs must fit its 2^20 blocks (servesim rejects what never could).
    const int32_t output = c.policy == Policy::kVllmV1 ? 1 << 23 : 1 << 29;
    if (s.add_request(id, 512, output) != RejectReason::kNone) {
      state.SkipWithError("request rejected");
      return;
    }
  }
  auto step = [&s] {
    const size_t n = s.schedule().size();
    s.update_from_output([](uint32_t, int32_t, bool, bool) {});
    return n;
  };
  while (s.seq(n - 1).generated == 0)
    step();  // prefill everything first
  int64_t seqs = 0;
  const uint64_t allocations = heap_allocations();
  for (auto _ : state)
    seqs += int64_t(step());
  state.counters["allocs_per_step"] =
      double(heap_allocations() - allocations) / double(state.iterations());
  state.SetItemsProcessed(seqs);  // sequences scheduled per second
  state.SetLabel(policy_name(c.policy));
}
BENCHMARK(BM_PolicyStep)->Arg(0)->Arg(1)->Arg(2)->Iterations(50000);

SimConfig w1_config(Policy policy = Policy::kChunked) {
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.tp = 1;
  c.scheduler.policy = policy;
  c.scheduler.enable_prefix_caching = policy == Policy::kVllmV1;
  c.scheduler.max_num_batched_tokens = 2048;
  c.scheduler.max_num_seqs = 256;
  return resolve(c);
}

Workload w1_workload() {
  SyntheticOptions o;
  o.num_requests = 10000;
  o.request_rate = 20;
  o.input_len = LengthDist::parse("normal:512:256:2:7000", "input-len");
  o.output_len = LengthDist::parse("normal:512:256:2:7000", "output-len");
  o.seed = 42;
  return generate_synthetic(o);
}

void BM_W1(benchmark::State& state) {
  const SimConfig c = w1_config(state.range(0) == 0 ? Policy::kChunked : Policy::kVllmV1);
  const Workload w = w1_workload();
  double tokens = 0, steps = 0;
  for (auto _ : state) {
    const RunResult r = simulate(c, w);
    tokens += double(r.summary.output_tokens_per_s * r.summary.makespan_s);
    steps += double(r.summary.steps);
  }
  state.counters["sim_output_tokens_per_s"] =
      benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["sim_steps_per_s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
  state.SetLabel(policy_name(c.scheduler.policy));
}
BENCHMARK(BM_W1)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_SweepPoint(benchmark::State& state) {
  // A point as a sweep holds it: typed values, parsed once.
  RunSpec spec;
  spec.model = "llama-3.1-8b";
  spec.gpu = "h100-sxm";
  spec.num_requests = 1000;
  spec.request_rate = 20;
  spec.input_len = LengthDist::parse("normal:512:256:2:7000", "input-len");
  spec.output_len = LengthDist::parse("normal:512:256:2:7000", "output-len");
  spec.scheduler = "chunked:2048";
  spec.max_num_seqs = 256;
  spec.seed = 42;
  Inputs inputs;
  for (auto _ : state) {
    const PointRun p = run_point(spec, inputs);
    benchmark::DoNotOptimize(p.run.summary.ttft_ms.p50);
  }
  state.SetItemsProcessed(int64_t(state.iterations()));
  state.SetLabel("points");
}
BENCHMARK(BM_SweepPoint)->Unit(benchmark::kMillisecond);

void BM_ResultsFile(benchmark::State& state) {
  const SimConfig c = w1_config();
  const Workload w = w1_workload();
  SimulateOptions keep;
  keep.keep_steps = keep.keep_histogram = true;
  const RunResult r = simulate(c, w, nullptr, keep);
  const std::string path =
      (std::filesystem::temp_directory_path() / "servesim_bench_results.h5").string();
  for (auto _ : state)
    write_results_h5(path, {{"w1", &r}}, nlohmann::ordered_json::object(), ResultsOptions{});
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(r.requests.size()));
  state.SetLabel("requests");
}
BENCHMARK(BM_ResultsFile)->Unit(benchmark::kMillisecond);

// Importing an Azure 2024-style CSV of 1M rows (generated once into the temp directory), with
// and without writing the HDF5 trace; rows per second as items.
void BM_ImportAzure2024(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string csv = (dir / "servesim_bench_azure2024_1m.csv").string();
  const long long rows = 1'000'000;
  if (!std::filesystem::exists(csv) && !bench::write_azure2024_csv(csv, rows)) {
    state.SkipWithError("cannot write the CSV");
    return;
  }
  const bool write = state.range(0) == 1;
  for (auto _ : state) {
    const Trace t = import_trace(csv, {});
    if (write) write_trace_h5((dir / "servesim_bench_azure2024_1m.h5").string(), t);
    benchmark::DoNotOptimize(t.arrival_s.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * rows);
  state.SetLabel(write ? "import + HDF5" : "import");
}
BENCHMARK(BM_ImportAzure2024)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// One routing decision over N replicas of changing load, per router (Args: RouterKind, N); the
// prefix-aware router's fleet answers that no replica holds the prompt.
class BenchFleet final : public Router::Fleet {
 public:
  explicit BenchFleet(size_t n) : loads(n) {}
  size_t size() const override { return loads.size(); }
  ReplicaLoad load(size_t i) const override { return loads[i]; }
  void cached_prompt_blocks(const RequestSpec&, std::span<int64_t> out) const override {
    std::fill(out.begin(), out.end(), 0);
  }
  int block_size() const override { return 16; }
  bool tells_load_changes() const override { return true; }
  std::vector<ReplicaLoad> loads;
};

void BM_Router(benchmark::State& state) {
  const size_t replicas = size_t(state.range(1));
  BenchFleet fleet(replicas);
  const Workload w;
  RouterOptions o;
  o.kind = RouterKind(state.range(0));
  Router router(o, fleet, w);
  RequestSpec r;
  r.input_tokens = 1024;
  double now = 0;
  uint64_t n = 0;
  for (auto _ : state) {
    const size_t chosen = router.route(r, now += 1e-3);
    ReplicaLoad& l = fleet.loads[chosen];
    ++l.outstanding;
    l.kv_usage = double(++n % 97) / 97;
    router.load_changed(chosen);
    fleet.loads[n % replicas].outstanding /= 2;  // others finish
    router.load_changed(n % replicas);
    benchmark::DoNotOptimize(chosen);
  }
  state.SetLabel(router_name(o.kind));
}
BENCHMARK(BM_Router)->ArgsProduct({{0, 1, 2, 3, 4}, {8, 64, 512}});

void BM_PrefixFleet(benchmark::State& state) {
  RunSpec spec;
  spec.num_requests = 4000;
  spec.request_rate = 40.0 * double(state.range(1));
  spec.dataset_name = "prefix_repetition";
  spec.scheduler = "vllm-v1:2048";
  spec.num_replicas = int(state.range(1));
  spec.router = "prefix-aware";
  spec.prefix_index = state.range(0) == 0 ? "per-replica" : "kv-events";
  Inputs inputs;
  for (auto _ : state) {
    const PointRun p = run_point(spec, inputs);
    benchmark::DoNotOptimize(p.run.summary.prefix_cache.hits);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * spec.num_requests);
  state.SetLabel(*spec.prefix_index + " requests");
}
BENCHMARK(BM_PrefixFleet)->ArgsProduct({{0, 1}, {8, 64}})->Unit(benchmark::kMillisecond);

void BM_Capacity(benchmark::State& state) {
  CapacitySpec spec;
  spec.bounds = parse_slo("ttft_ms_p99=2000");
  const RunSpec base;  // the default scenario
  Inputs inputs;
  CapacityResult r;
  for (auto _ : state) {
    r = search(base, spec, inputs);
    benchmark::DoNotOptimize(r.capacity);
  }
  state.counters["capacity_req_s"] = r.capacity;
  state.counters["probes"] = r.iterations;
  state.counters["probes_stopped"] = r.probes_stopped;
  state.SetLabel("searches");
}
BENCHMARK(BM_Capacity)->Unit(benchmark::kMillisecond);

void BM_KvBlockPool(benchmark::State& state) {
  const size_t pools = size_t(state.range(0));
  const int64_t blocks = 28000, block_size = 16, tokens = 64 * block_size;
  std::vector<std::unique_ptr<KvCacheManager>> kv;
  for (size_t i = 0; i < pools; ++i)
    kv.push_back(
        std::make_unique<KvCacheManager>(blocks, int(block_size), false, 1 << 20, nullptr, 1));
  SeqState s;
  s.input_tokens = int32_t(tokens);
  s.output_tokens = 1;
  size_t i = 0;
  for (auto _ : state) {
    KvCacheManager& k = *kv[i];
    i = i + 1 == pools ? 0 : i + 1;
    s.num_computed_tokens = 0;
    if (!k.allocate_slots(0, s, tokens, 0, false)) state.SkipWithError("no room");
    k.free(0, s);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * 64);
  state.SetLabel("blocks");
}
BENCHMARK(BM_KvBlockPool)->Arg(1)->Arg(64);

void BM_Fleet(benchmark::State& state) {
  RunSpec spec;
  spec.model = "llama-3.1-8b";
  spec.gpu = "h100-sxm";
  const int replicas = int(state.range(1));
  spec.num_replicas = replicas;
  spec.num_requests = 150 * replicas;
  spec.request_rate = 11.0 * replicas;
  spec.input_len = LengthDist::parse("normal:512:256:2:7000", "input-len");
  spec.output_len = LengthDist::parse("normal:512:256:2:7000", "output-len");
  spec.scheduler = state.range(0) == 0 ? "chunked:2048" : "vllm-v1:2048";
  spec.max_num_seqs = 256;
  spec.router = "round-robin";
  spec.seed = 42;
  Inputs inputs;
  double tokens = 0;
  for (auto _ : state) {
    const PointRun p = run_point(spec, inputs);
    tokens += p.run.summary.output_tokens_per_s * p.run.summary.makespan_s;
  }
  state.SetItemsProcessed(int64_t(tokens));
  state.SetLabel(spec.scheduler + " output tokens");
}
BENCHMARK(BM_Fleet)->ArgsProduct({{0, 1}, {8, 64}})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
