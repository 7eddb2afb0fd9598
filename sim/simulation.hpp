// simulate(): one replica serving one workload under one configuration, end to end. It resolves
// the configuration the way vLLM does (max_model_len from the model, the policy's default token
// budget, the KV cache from the memory plan), replays the arrivals through an EventLoop into a
// Host, and returns the per-request records and the run summary.
// Promises: deterministic (same inputs, same result, bit for bit); every request of the workload
// ends finished or rejected with a reason.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/gpu.hpp"
#include "models/memory_plan.hpp"
#include "models/model.hpp"
#include "models/profiles.hpp"
#include "models/roofline.hpp"
#include "scheduler/scheduler.hpp"
#include "sim/metrics.hpp"
#include "traces/request.hpp"

namespace servesim {

struct SimConfig {
  GpuSpec gpu;
  ModelSpec model;
  int tp = 1;
  SchedulerConfig scheduler;  // max_num_batched_tokens / max_model_len 0 = vLLM's defaults
  MemoryPlanOptions memory;   // tp, token budget, max_num_seqs and block size are copied in
  std::string cost_model = "roofline";  // roofline | table
  // For the roofline: the GPU's defaults (default_roofline_params) when empty; resolve() fills
  // it in, with roofline_source saying where the parameters came from.
  std::optional<RooflineParams> roofline;
  std::string roofline_source;
  std::shared_ptr<const ProfileSet> profiles;  // for the table model
};

// Fills in vLLM's defaults and checks the configuration; throws Error naming the flag.
SimConfig resolve(SimConfig c);

struct RunResult {
  SimConfig config;  // resolved
  MemoryPlan memory;
  RunSummary summary;
  std::vector<RequestRecord> requests;
  std::vector<StepRecord> steps;  // empty unless simulate() was asked to keep them
  std::vector<std::pair<double, uint64_t>> itl_histogram_ms;  // (bucket upper bound, count)
  int64_t discarded_tokens = 0;  // computed, then thrown away by preemption
};

struct SimulateOptions {
  bool keep_steps = false;      // RunResult::steps
  bool keep_histogram = false;  // RunResult::itl_histogram_ms
  MetricOptions metrics;        // extra percentiles, goodput SLOs
  // vLLM benchmark_serving.py --max-concurrency: at most this many requests in flight, the rest
  // wait client side and are sent as others finish (0 = open loop, every request at its time).
  int64_t max_concurrency = 0;
  // Called every 16,384 requests finished or rejected with (done, total), from the simulating
  // thread: for progress lines.
  std::function<void(size_t, size_t)> progress;
};

// Runs a resolved configuration over W (sorted by arrival, ids 0..N-1) with its cost model
// (config.cost_model), or with COST when given.
RunResult simulate(const SimConfig& resolved, const Workload& w, const CostModel* cost = nullptr,
                   const SimulateOptions& options = {});

}  // namespace servesim
