// A capacity command's configurations and their searches (capacity_configs.hpp), and a result as
// the bytes an MPI rank sends rank 0 (capacity.hpp: capacity_result_bytes).
#include "analysis/capacity_configs.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/sweep.hpp"
#include "sim/replica_config.hpp"
#include "util/distributed.hpp"
#include "util/error.hpp"
#include "util/field_path.hpp"
#include "util/parallel.hpp"

namespace servesim {

namespace {

// The run flags that may be lists: one configuration per combination.
const std::set<std::string> kCapacityListFlags = {"scheduler",
                                                  "max-num-batched-tokens",
                                                  "gpu",
                                                  "gpu-file",
                                                  "model",
                                                  "model-file",
                                                  "tp",
                                                  "tensor-parallel-size",
                                                  "pp",
                                                  "pipeline-parallel-size",
                                                  "data-parallel-size"};

// The flags of a replica's parallel layout and their fields: when one is a list, a layout vLLM
// would refuse at start-up (the model does not fit, the heads or layers do not divide) is left
// out and named, not an error.
const char* layout_field(const std::string& flag) {
  if (flag == "tp") return field::kTp;
  if (flag == "tensor-parallel-size") return field::kTensorParallelSize;
  if (flag == "pp") return field::kPp;
  if (flag == "pipeline-parallel-size") return field::kPipelineParallelSize;
  if (flag == "data-parallel-size") return field::kDataParallelSize;
  return nullptr;
}

// The flags of RUN: shared ones in the first configuration, and each list flag's values (in
// command-line order) in AXES.
std::vector<CapacityConfiguration> shared_configuration(
    const RunFlags& run, const RunFlagReading& read,
    std::vector<std::pair<std::string, std::vector<std::string>>>& axes) {
  CapacityConfiguration shared;
  size_t count = 1;
  for (const auto& [flag, value] : run) {
    if (flag == "request-rate") {
      throw Error(
          field::kRequestRate,
          "is what capacity searches; see {{capacity.rate_start}} and {{capacity.rate_max}}");
    }
    if (flag == "time-scale") {  // the search's rate rescales the arrivals after it (issue 25)
      throw Error(field::kTimeScale,
                  "has no effect on capacity: each probe rescales the arrivals to its own rate "
                  "(the trace's shape is kept)");
    }
    if (!capacity_list_flag(flag) || value.empty()) {
      shared.flags.emplace_back(flag, value);
      continue;
    }
    axes.emplace_back(flag, read.values(flag, value));
    count *= std::min(axes.back().second.size(), kMaxCapacityConfigurations + 1);
    if (count > kMaxCapacityConfigurations) {
      throw Error(flag, "the lists make more than " + std::to_string(kMaxCapacityConfigurations) +
                            " configurations: split the search");
    }
  }
  return {shared};
}

// The progress line of the searches: probes simulated, configurations done, time spent.
struct SearchProgress {
  std::atomic<size_t> probes{0}, done{0};
  size_t total = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  std::string text() const {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char buf[128];
    std::snprintf(buf, sizeof buf, "capacity: %zu/%zu configurations, %zu probes, %.0f s",
                  done.load(), total, probes.load(), s);
    return buf;
  }
};

// Searches every configuration on JOBS threads, in configuration order.
std::vector<CapacityResult> search_all(const std::vector<CapacityConfiguration>& configs,
                                       const CapacitySpec& spec, int jobs, Inputs& inputs) {
  std::vector<CapacityResult> results(configs.size());
  SearchProgress progress;
  progress.total = configs.size();
  const ProbeHook count = [&](const Probe&) { ++progress.probes; };
  parallel_for(
      configs.size(), jobs, "capacity",
      [&](size_t i) {
        results[i] = search_configuration(configs[i], spec, inputs, count);
        ++progress.done;
      },
      [](size_t) {}, [&] { return progress.text(); });
  return results;
}

}  // namespace

bool capacity_list_flag(const std::string& flag) {
  return kCapacityListFlags.count(flag) > 0;
}

std::vector<CapacityConfiguration> capacity_configurations(const RunFlags& run,
                                                           const RunFlagReading& read,
                                                           Inputs& inputs,
                                                           std::vector<std::string>* refused) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  std::vector<CapacityConfiguration> out = shared_configuration(run, read, axes);
  for (const auto& [flag, values] : axes) {
    std::vector<CapacityConfiguration> next;
    for (const CapacityConfiguration& c : out) {
      for (const std::string& v : values) {
        next.push_back(c);
        next.back().flags.emplace_back(flag, v);
      }
    }
    out = std::move(next);
  }
  const auto listed = std::find_if(axes.begin(), axes.end(), [](const auto& axis) {
    return layout_field(axis.first) != nullptr;
  });
  const bool layouts = listed != axes.end();
  std::vector<CapacityConfiguration> kept;
  std::string first_refusal;
  for (CapacityConfiguration& c : out) {
    c.text = read.text(c.flags);
    c.spec = read.spec(c.flags);
    // Checked as a probe runs it, at a rate: a length-only trace (ShareGPT, Vidur's arXiv CSV)
    // has no arrivals of its own, and each probe gives it Gamma arrivals at the probe's rate
    // (issue 25: it was refused for lacking the --request-rate that capacity itself refuses).
    // Under expert parallelism a probe runs the data-parallel ranks sharing the experts
    // (--data-parallel-size, else --num-replicas: one group), and its capacity is the group's.
    RunSpec probe = one_replica(c.spec);
    probe.request_rate = 1;
    try {
      check_point(probe, inputs);
      if (layouts) {
        // vLLM's start-up memory check, which a probe would otherwise meet mid-search.
        checked_memory_plan(
            policy_config(base_config(probe, inputs), probe, scheduler_choice(probe)));
      }
    } catch (const Error& e) {
      const bool start_up = (e.path() == field::kModel &&
                             e.reason().find(" does not fit on ") != std::string::npos) ||
                            e.path() == field::kMaxModelLen || e.path() == field::kNumGpuBlocks ||
                            e.path() == field::kTensorParallelSize ||
                            e.path() == field::kPipelineParallelSize;
      if (!layouts || refused == nullptr || !start_up) throw;
      refused->push_back(c.text + ": " + e.reason());
      if (first_refusal.empty()) first_refusal = refused->back();
      continue;
    }
    kept.push_back(std::move(c));
  }
  if (kept.empty() && !first_refusal.empty()) {
    throw Error(layout_field(listed->first),
                "no parallel layout listed can run; the first: " + first_refusal);
  }
  return kept;
}

void check_capacity_configurations(const CapacitySpec& spec,
                                   const std::vector<CapacityConfiguration>& configs,
                                   Inputs& inputs) {
  // Every GPU that --gpu-hour-cost prices by name is a GPU of CONFIGS.
  std::set<std::string> gpus;
  for (const CapacityConfiguration& c : configs) {
    gpus.insert(inputs.gpu(c.spec.gpu, c.spec.gpu_file).name);
    // The pools' GPUs: a mixed fleet's groups, the prefill and decode pools (issue 25).
    for (const GpuCount& g : c.spec.replica_gpus)
      gpus.insert(inputs.gpu(g.gpu, "").name);
    for (const std::string& pool : {c.spec.prefill_gpu, c.spec.decode_gpu}) {
      if (!pool.empty()) gpus.insert(inputs.gpu(pool, "").name);
    }
  }
  std::string known;
  for (const std::string& g : gpus)
    known.append(known.empty() ? "" : ", ").append(g);
  for (const auto& [gpu, price] : spec.cost.by_gpu) {
    if (!gpus.count(gpu)) {
      throw Error(field::kGpuHourCost,
                  "'" + gpu + "' is not a GPU of the configurations (" + known + ")");
    }
  }
  for (const CapacityConfiguration& c : configs) {
    if (!spec.size_group.empty() && c.spec.replica_gpus.empty()) {
      throw Error(field::kSizeGroup,
                  "sizes one group of a mixed fleet: give {{fleet.replica_gpus}}");
    }
  }
}

CapacityResult search_configuration(const CapacityConfiguration& config, const CapacitySpec& spec,
                                    Inputs& inputs, const ProbeHook& on_probe) {
  try {
    return search(config.spec, spec, inputs, on_probe);
  } catch (const Error& e) {
    throw Error(e.file(), e.line(), e.path(), "configuration '" + config.text + "': " + e.reason());
  }
}

CapacitySearchOutcome search_configurations(const std::vector<CapacityConfiguration>& configs,
                                            const CapacitySpec& spec, double target, int jobs,
                                            Inputs& inputs) {
  CapacitySearchOutcome out;
  std::vector<CapacityResult>& results = out.results;
  if (mpi::world().distributed()) {
    // Under mpirun: rank 0 hands the configurations out, the other ranks search (and size) them
    // on their threads and send each result back whole; only rank 0 prints and writes.
    results.resize(configs.size());
    mpi::Batch all(configs.size());
    for (size_t i = 0; i < all.size(); ++i)
      all[i] = i;
    const auto compute = [&](uint64_t i) {
      CapacityResult r = search_configuration(configs[i], spec, inputs);
      if (target > 0) size_fleet(configs[i].spec, spec, target, r, inputs);
      return capacity_result_bytes(r);
    };
    mpi::work_queue(all, jobs, compute, [&](uint64_t i, const std::string& bytes) {
      results[size_t(i)] = capacity_result_from_bytes(bytes);
    });
    if (mpi::world().rank != 0) {
      out.results.clear();
      out.worker = true;
    }
    return out;
  }
  results = search_all(configs, spec, jobs, inputs);
  if (target > 0) {
    parallel_for(
        configs.size(), jobs, "capacity",
        [&](size_t i) { size_fleet(configs[i].spec, spec, target, results[i], inputs); },
        [](size_t) {}, [] { return std::string("sizing the fleets"); });
  }
  return out;
}

// JSON of the results' types, field by field (ADL finds these in namespace servesim). A double
// NaN stays NaN through CBOR, where JSON text would make it null.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Stats, mean, p50, p90, p95, p99, max, count, extra)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Overload, overloaded, arrival_rate_req_s, completion_rate_req_s,
                                   waiting_at_median_arrival, waiting_at_last_arrival,
                                   in_system_at_median_arrival, in_system_at_last_arrival,
                                   late_arrivals, late_departures, growth_threshold, judgeable,
                                   drain_s, stopped_at_last_arrival, unfinished)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PrefixCacheSummary, enabled, queries, hits, preempted_queries,
                                   preempted_hits, evictions, cached_prompt_tokens)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(EnergySummary, energy_j, idle_power_w, mean_power_w,
                                   peak_power_w, j_per_output_token, j_per_request)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunSummary, total, completed, rejected, rejected_by_reason,
                                   input_tokens, output_tokens, ttft_ms, itl_ms, tpot_ms, e2e_ms,
                                   queue_ms, otps, otps_p50_ratio, requests_per_s,
                                   output_tokens_per_s, total_tokens_per_s, goodput_req_s,
                                   step_time_fraction, mfu, mbu, kv_usage_mean, kv_usage_max,
                                   kv_usage_p50, kv_usage_p99, queue_len, overload, preemptions,
                                   prefix_cache, steps, prefill_only_steps, decode_only_steps,
                                   mixed_steps, prefill_tokens, decode_tokens, makespan_s, busy_s,
                                   flops, bytes, energy)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuPool, gpu, role, quantization, replicas, tp, file_cost)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Probe, ok, failed, rate, attained, summary, label, policy, gpu,
                                   model, cost_source, tp, budget, gpu_file_cost, pools,
                                   router_warnings, stopped, requests, lengthened, extrapolated)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CapacityResult, label, policy, gpu, model, cost_source, tp,
                                   budget, capacity, above_max, below_min, refused, rejected,
                                   requests, iterations, probes_stopped, requests_unfinished,
                                   probes_lengthened, probes_too_short, most_probe_requests,
                                   binding, gpu_hour_cost, pools, fleet, quantization, gpus,
                                   usd_per_h, at, fleet_replicas, router, fleet_split,
                                   router_warnings, fleet_gpus, fleet_usd_per_h, confidence,
                                   point_capacity, point_binding, energy_usd_per_kwh, pue)

std::string capacity_result_bytes(const CapacityResult& r) {
  const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(nlohmann::json(r));
  return std::string(cbor.begin(), cbor.end());
}

CapacityResult capacity_result_from_bytes(const std::string& bytes) {
  return nlohmann::json::from_cbor(bytes).get<CapacityResult>();
}

}  // namespace servesim
