// LoRA adapters (vLLM --enable-lora): the V1 scheduler's max_loras rule by hand, the workers'
// adapter residency and load times, the kernels' cost by rank and the GPU buffers, the adapters
// drawn for a workload or read from a trace column, the prefix cache per adapter, the
// LoRA-affinity router, and the flags' checks.
#include <catch2/catch.hpp>
#include <map>

#include "analysis/run_spec.hpp"
#include "cli/run_flags.hpp"
#include "cost_fixtures.hpp"
#include "helpers.hpp"
#include "models/lora.hpp"
#include "sim/lora_manager.hpp"
#include "sim/simulation.hpp"
#include "trace_fixtures.hpp"
#include "traces/datasets.hpp"
#include "traces/import.hpp"
#include "traces/synthetic.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

SchedulerConfig lora_config(int max_loras, int64_t budget = 64) {
  SchedulerConfig c = config("vllm-v1", budget, 8, 1000, 4);
  c.reserve_full_isl = false;
  c.async_scheduling = false;
  c.max_loras = max_loras;
  return c;
}

}  // namespace

TEST_CASE("lora: a batch refuses a fifth adapter at max_loras 4, and goes on past it",
          "[lora][vllm-v1]") {
  V1Scheduler s(lora_config(4), 100, 7);
  // Requests 0-4 ask for adapters 1-5; 5 for adapter 2; 6 for the base model.
  for (uint32_t id = 0; id < 5; ++id)
    s.add_request(id, 4, 3, 0, -1, 0, uint16_t(id + 1));
  s.add_request(5, 4, 3, 0, -1, 0, 2);
  s.add_request(6, 4, 3, 0, -1, 0, 0);
  // Four adapters fill the step; 4's fifth is skipped, not waited for (vLLM: `continue`, not
  // `break`): 5 (adapter 2, already in the step) and 6 (none) are admitted behind it.
  CHECK(entries(s.schedule()) == Entries{{0, 4}, {1, 4}, {2, 4}, {3, 4}, {5, 4}, {6, 4}});
  CHECK(s.lora_skips() == 1);
  CHECK(queue_ids(s.waiting()).empty());
  CHECK(s.skipped_waiting().size() == 1);
  CHECK(s.num_loras() == 5);
  CHECK(s.has_lora(5));
  complete_step(s);
  // The running requests hold adapters 1-4: 4 is skipped again.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {5, 1}, {6, 1}});
  CHECK(s.lora_skips() == 2);
  complete_step(s);
  // Their last tokens: all finish, freeing the adapters.
  CHECK(entries(s.schedule()) == Entries{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {5, 1}, {6, 1}});
  complete_step(s);
  CHECK(s.num_loras() == 1);
  CHECK(entries(s.schedule()) == Entries{{4, 4}});
  CHECK(s.lora_skips() == 3);
}

TEST_CASE("lora: adapters are read from disk and copied to a GPU slot, least recently used out",
          "[lora]") {
  LoraManagerOptions o;
  o.max_loras = 2;
  o.max_cpu_loras = 3;
  o.adapter_bytes = 1e8;
  o.disk_bytes_per_s = 1e9;
  o.disk_latency_s = 0.01;
  o.h2d_bytes_per_s = 1e10;
  LoraManager m(o);
  const double disk = 0.01 + 0.1, copy = 0.01;
  const std::vector<uint16_t> a{1, 2}, b{3}, c{1}, d{2};
  CHECK(m.activate(a) == Approx(2 * (disk + copy)));
  CHECK(m.activate(a) == 0);  // both active
  // 3: read and copied; the slot of 1 (least recently used) goes.
  CHECK(m.activate(b) == Approx(disk + copy));
  CHECK_FALSE(m.active(1));
  CHECK(m.active(2));
  // 1 is still in host memory: a copy only.
  CHECK(m.activate(c) == Approx(copy));
  // 2 lost its slot to 1 but is still in host memory (3 adapters fit there): a copy only.
  CHECK(m.activate(d) == Approx(copy));
  CHECK(m.stats().disk_loads == 3);
  CHECK(m.stats().activations == 5);
  // A fourth adapter evicts the least recently used of host memory (3).
  const std::vector<uint16_t> e{4};
  CHECK(m.activate(e) == Approx(disk + copy));
  const std::vector<uint16_t> f{3};
  CHECK(m.activate(f) == Approx(disk + copy));
}

TEST_CASE("lora: the kernels' work by rank, and the GPU buffers vLLM reserves", "[lora][cost]") {
  const ModelSpec m = tiny_model();  // 2 layers, hidden 8, q 8, kv 4, MLP 16
  const LoraWidths w = lora_widths(m);
  // qkv 8 -> 16, gate_up 8 -> 32 (column-parallel); o 8 -> 8, down 16 -> 8 (row-parallel).
  CHECK(w.col_in == 16);
  CHECK(w.col_out == 48);
  CHECK(w.row_in == 24);
  CHECK(w.row_out == 16);
  CHECK(lora_adapter_bytes(m, 4) == 4.0 * (40 + 64) * 2 * 2);
  // TP2: A of qkv and gate_up whole, their B halved; o and down the reverse.
  CHECK(lora_buffer_bytes_per_gpu(m, 2, 3, 8) == 3.0 * 8 * (16 + 24 + 12 + 16) * 2 * 2);
  const RooflineParams p = ideal_params();
  const LoraKernels r8(slow_gpu(), m, 1, p.hw, p.engine, 8),
      r16(slow_gpu(), m, 1, p.hw, p.engine, 16);
  const StepCost a = r8.cost(10, 2), b = r16.cost(10, 2);
  CHECK(a.flops == Approx(2.0 * 8 * (40 + 64) * 2 * 10));  // 2 r (in + out) a token a layer
  CHECK(b.flops == Approx(2 * a.flops));
  // Activations once per token, each adapter's weights once.
  CHECK(a.bytes == Approx(2 * lora_adapter_bytes(m, 8) + 10.0 * (40 + 2 * 64) * 2 * 2));
  CHECK(a.seconds > 0);
  CHECK(a.lora_s == a.seconds);
  CHECK(r8.cost(0, 0).seconds == 0);  // no adapter in the batch: no kernel
}

TEST_CASE("lora: adapters drawn by Zipf's law, a conversation keeping its own",
          "[lora][workload]") {
  SyntheticOptions o;
  o.num_requests = 40000;
  Workload w = generate_synthetic(o);
  draw_loras(w, 4, 1.0, 7);
  std::map<int, int> n;
  for (const RequestSpec& r : w)
    ++n[r.lora];
  const double h = 1 + 1 / 2.0 + 1 / 3.0 + 1 / 4.0;
  for (int k = 1; k <= 4; ++k)
    CHECK(double(n[k]) / 40000 == Approx(1.0 / k / h).margin(0.01));
  CHECK(n[0] == 0);
  Workload u = generate_synthetic(o);
  draw_loras(u, 4, 0.0, 7);
  for (const RequestSpec& r : u)
    ++n[10 + r.lora];
  for (int k = 1; k <= 4; ++k)
    CHECK(double(n[10 + k]) / 40000 == Approx(0.25).margin(0.01));
  // The same seed draws the same; a conversation's turns share an adapter.
  Workload again = generate_synthetic(o);
  draw_loras(again, 4, 1.0, 7);
  for (size_t i = 0; i < w.size(); ++i)
    REQUIRE(w[i].lora == again[i].lora);
  MultiTurnOptions mt;
  mt.base.num_requests = 400;
  mt.num_turns = 5;
  Workload conv = generate_multi_turn(mt);
  draw_loras(conv, 50, 0.0, 1);
  std::map<uint64_t, uint16_t> of_session;
  for (const RequestSpec& r : conv) {
    const uint64_t key = conv.spans[r.first_span + r.num_spans - 1].stream;
    const auto [it, fresh] = of_session.emplace(key, r.lora);
    CHECK(it->second == r.lora);
  }
  CHECK(of_session.size() < conv.size());
  CHECK(error_field([&] { draw_loras(w, 70000, 1, 0); }) == "lora-adapters");
  CHECK(error_field([&] { draw_loras(w, 4, -1, 0); }) == "lora-zipf");
}

TEST_CASE("lora: a csv trace's --col-lora names each request's adapter", "[lora][trace]") {
  const std::string path = fixture("lora.csv",
                                   "t,in,out,adapter\n0,10,5,sql-lora\n1,20,5,\n2,30,5,chat\n"
                                   "3,40,5,sql-lora\n4,50,5,base\n");
  ImportOptions o;
  o.format = "csv";
  o.col_arrival = "t";
  o.col_input = "in";
  o.col_output = "out";
  o.col_lora = "adapter";
  const Trace t = import_trace(path, o);
  CHECK(t.lora == std::vector<int32_t>{1, 0, 2, 1, 0});
  CHECK(t.lora_names == std::vector<std::string>{"sql-lora", "chat"});
  const Workload w = to_workload(t);
  CHECK(w[3].lora == 1);
  CHECK(w[4].lora == 0);
}

TEST_CASE("lora: the prefix cache keeps each adapter's KV apart", "[lora][vllm-v1]") {
  // Three requests with the same 64-token prompt: the second under the same adapter hits the
  // first's blocks, the third under another adapter hits nothing.
  Workload w(3);
  for (uint32_t i = 0; i < 3; ++i) {
    w[i].id = i;
    w[i].arrival_s = i;
    w[i].input_tokens = 64;
    w[i].output_tokens = 2;
    w[i].num_spans = 1;
    w[i].lora = i < 2 ? 1 : 2;
  }
  w.spans.push_back({stream_id(StreamKind::kPrefix, 9), 0, 0, 64});
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.scheduler.policy = Policy::kVllmV1;
  c.scheduler.enable_prefix_caching = true;
  c.lora.enabled = true;
  c.lora.max_loras = 2;
  const RunResult r = simulate(resolve(c), w);
  CHECK(r.requests[1].cached_tokens == 48);  // 64 - a block (the last token is computed)
  CHECK(r.requests[2].cached_tokens == 0);
  CHECK(r.summary.lora.enabled);
  CHECK(r.summary.lora.adapters == 2);
  CHECK(r.summary.lora.disk_loads == 2);
  // The same workload on a server without adapters is refused, naming the flag.
  c.lora.enabled = false;
  CHECK(error_field([&] { simulate(resolve(c), w); }) == "enable-lora");
}

TEST_CASE("lora: the flags are vLLM's, checked as vLLM's LoRAConfig checks them", "[lora][cli]") {
  auto field = [](const std::vector<std::pair<std::string, std::string>>& flags) {
    return error_field([&] {
      RunSpec s;
      s.scheduler = "vllm-v1";
      for (const auto& [name, value] : flags)
        cli::parse_run_flag(name, value)(s);
      Inputs inputs;
      run_point(s, inputs);
    });
  };
  CHECK(field({{"max-loras", "4"}}) == "max-loras");  // needs --enable-lora
  CHECK(field({{"enable-lora", ""}, {"max-lora-rank", "7"}}) == "max-lora-rank");
  CHECK(field({{"enable-lora", ""}, {"max-loras", "4"}, {"max-cpu-loras", "2"}}) ==
        "max-cpu-loras");
  CHECK(field({{"enable-lora", ""}, {"lora-rank", "32"}}) == "lora-rank");  // > max 16
  CHECK(field({{"lora-adapters", "4"}, {"num-requests", "5"}}) == "enable-lora");
  CHECK(field({{"lora-zipf", "2"}}) == "lora-zipf");
  RunSpec v0;
  v0.scheduler = "chunked";
  v0.enable_lora = true;
  Inputs inputs;
  CHECK(error_field([&] { run_point(v0, inputs); }) == "enable-lora");
  // A valid run reports its adapters.
  RunSpec ok;
  ok.scheduler = "vllm-v1";
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"enable-lora", ""},
                                                        {"max-loras", "2"},
                                                        {"lora-adapters", "3"},
                                                        {"num-requests", "60"},
                                                        {"max-lora-rank", "8"}})
    cli::parse_run_flag(name, value)(ok);
  const PointRun p = run_point(ok, inputs);
  CHECK(p.run.summary.completed == 60);
  CHECK(p.run.summary.lora.adapters == 3);
  CHECK(p.run.summary.lora.rank == 8);
  CHECK(p.run.memory.lora_bytes > 0);
}

TEST_CASE("lora: lora-affinity routes a request to a replica already serving its adapter",
          "[lora][fleet]") {
  SyntheticOptions o;
  o.num_requests = 1500;
  o.request_rate = 24;
  o.input_len = LengthDist::parse("uniform:200:800", "input-len");
  o.output_len = LengthDist::parse("uniform:50:300", "output-len");
  Workload w = generate_synthetic(o);
  draw_loras(w, 16, 1.0, 3);
  SimConfig c;
  c.model = find_model("llama-3.1-8b");
  c.gpu = find_gpu("h100-sxm");
  c.scheduler.policy = Policy::kVllmV1;
  c.lora.enabled = true;
  c.lora.max_loras = 4;
  c.lora.max_cpu_loras = 16;
  const SimConfig r = resolve(c);
  auto run = [&](RouterKind kind) {
    SimulateOptions so;
    so.fleet.num_replicas = 4;
    so.fleet.router.kind = kind;
    return simulate(r, w, nullptr, so);
  };
  const RunResult rr = run(RouterKind::kRoundRobin), la = run(RouterKind::kLoraAffinity);
  CHECK(la.summary.completed == 1500);
  // Each replica sees fewer adapters, so fewer admissions wait for a slot and fewer adapters
  // are copied in.
  CHECK(la.summary.lora.skips < rr.summary.lora.skips / 2);
  CHECK(la.summary.lora.activations < rr.summary.lora.activations);
  CHECK(la.summary.ttft_ms.p50 < rr.summary.ttft_ms.p50);
  CHECK(la.fleet.router_warnings.empty());
}
