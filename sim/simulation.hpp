// simulate(): one workload under one configuration, end to end, on one replica or on a fleet of
// them (FleetOptions, sim/fleet.cpp). It resolves the configuration the way vLLM does
// (max_model_len from the model, the policy's default token budget, the KV cache from the memory
// plan), replays the arrivals through an EventLoop into a Host, and returns the per-request records
// and the run summary. Promises: deterministic (same inputs, same result, bit for bit); every
// request of the workload ends finished or rejected with a reason.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/calibration.hpp"
#include "models/drafter.hpp"
#include "models/engine.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"
#include "models/memory_plan.hpp"
#include "models/model.hpp"
#include "models/profiles.hpp"
#include "models/roofline.hpp"
#include "scheduler/scheduler.hpp"
#include "sim/autoscaler.hpp"
#include "sim/host.hpp"
#include "sim/metrics.hpp"
#include "sim/router.hpp"
#include "traces/request.hpp"

namespace servesim {

// KV offload to CPU memory (scheduler/kv_offload.hpp) as the flags ask for it: the CPU tier's
// size in blocks comes from the memory plan's bytes per block (replica_config.cpp).
struct KvOffloadOptions {
  OffloadBackend backend = OffloadBackend::kNone;
  // Host memory for the tier: vLLM's --kv-offloading-size (cpu_bytes_to_use), the total over the
  // TP group's ranks; LMCache's max_local_cpu_size is each rank's (PER_RANK).
  double cpu_bytes = 0;
  bool per_rank = false;
  int block_size = 0;  // tokens per offloaded block (0: the GPU's; LMCache: its chunk_size)
  // The host link per GPU and direction (0: the GPU's, at host DMA efficiency), and a copy's
  // fixed latency (launching the batched DMA and polling its event).
  double link_gb_per_s = 0;
  double link_latency_s = 10e-6;
  bool enabled() const { return backend != OffloadBackend::kNone; }
};

// LoRA adapters (vLLM --enable-lora; models/lora.hpp, sim/lora_manager.hpp), as the flags ask.
struct LoraOptions {
  bool enabled = false;
  int max_loras = 1;             // adapters one step may hold, and GPU slots
  int max_lora_rank = 16;        // the slots' rank (sizes the GPU buffers)
  int max_cpu_loras = 0;         // adapters kept in host memory (0: max_loras)
  int rank = 0;                  // the adapters' own rank (0: max_lora_rank)
  double load_gb_per_s = 2;      // reading an adapter from disk
  double load_latency_s = 0.01;  // per adapter read
  int cpu_loras() const { return max_cpu_loras > 0 ? max_cpu_loras : max_loras; }
  int adapter_rank() const { return rank > 0 ? rank : max_lora_rank; }
};

struct SimConfig {
  GpuSpec gpu;
  ModelSpec model;
  int tp = 1;
  // Pipeline stages (vLLM --pipeline-parallel-size; models/parallel.hpp), each TP GPUs.
  int pp = 1;
  int gpus() const { return tp * pp; }  // a replica's GPUs
  // vLLM --enable-expert-parallel: this replica is one of DP data-parallel ranks whose GPUs hold
  // the routed experts between them (EP = TP x DP; models/parallel.hpp).
  bool expert_parallel = false;
  // With expert parallelism: the routing's Zipf skew over the experts (0: uniform routing;
  // models/parallel.hpp ep_busiest_share).
  double expert_skew = 0;
  int dp = 1;
  int ep() const { return expert_parallel ? tp * dp : 1; }
  SchedulerConfig scheduler;  // max_num_batched_tokens / max_model_len 0 = vLLM's defaults
  // Speculative decoding's drafter (scheduler.spec says how many drafts and their acceptance).
  Drafter drafter;
  KvOffloadOptions offload;  // CPU KV offload (scheduler.offload is derived from it per replica)
  LoraOptions lora;          // LoRA adapters (scheduler.max_loras is lora.max_loras when on)
  // The engine runtime the policy runs on: the policy's own (default_engine) unless ENGINE_GIVEN.
  Engine engine = Engine::kV0;
  bool engine_given = false;
  MemoryPlanOptions memory;  // the memory flags (the plan reads tp, budgets and engine above)
  std::string cost_model = "roofline";  // roofline | table
  // For the roofline: the hardware's parameters (the GPU architecture's fit) and the engine's;
  // resolve() fills in the defaults and overlays CALIBRATIONS, the *_source strings saying where
  // the values came from. A calibration file whose hardware keys are another GPU's is an error.
  std::optional<HardwareParams> hardware;
  std::optional<EngineParams> engine_params;
  std::string hardware_source, engine_source;
  std::vector<std::shared_ptr<const CalibrationFile>> calibrations;
  // The API server's latency (sim/frontend.hpp), seconds; NaN: the default, or a calibration
  // file's frontend_latency_s.
  double frontend_latency_s = NAN;
  std::shared_ptr<const ProfileSet> profiles;  // for the table model
};

// Fills in vLLM's defaults and checks the configuration; throws Error naming the flag.
SimConfig resolve(SimConfig c);

// The range checks resolve() makes on the scheduler's and the memory plan's values (0 = vLLM's
// default, for the token budget and max_num_seqs), for commands that check their flags before
// any work: Error naming the flag.
void check_scheduler_values(const SchedulerConfig& s);
void check_memory_values(const MemoryPlanOptions& m);

// The replicas of one pool of a fleet (the prefill or decode pool, or one GPU of a mixed fleet):
// their requests, TTFT and ITL pooled over their requests (a prefill replica's TTFT runs until
// its prompt is computed, a decode replica's from the KV's arrival), and their mean step share.
struct PoolSummary {
  std::string name;
  int replicas = 0;
  uint64_t requests = 0;
  Stats ttft_ms, itl_ms;
  double step_time_fraction = 0;
};

// A fleet run's replicas (simulate_fleet).
struct FleetSummary {
  int num_replicas = 1;
  std::string router;                // its name
  std::vector<RunSummary> replicas;  // each replica's own requests and steps
  std::vector<uint32_t> replica_of;  // each request's (first) replica, by id
  std::vector<uint32_t> decode_of;   // disaggregated: each request's decode replica (or UINT32_MAX)
  std::vector<uint64_t> routed;      // requests routed to each replica (prefill and decode)
  std::vector<std::string> pool;     // each replica's pool: "", or "prefill" / "decode", and GPU
  std::vector<PoolSummary> pools;    // with more than one pool
  uint64_t kv_transfers = 0;         // disaggregated: prompts' KV sent, bytes per GPU, seconds
  double kv_transfer_bytes = 0, kv_transfer_s = 0;
  std::vector<double> kv_sent_s, kv_landed_s;  // disaggregated: each request's transfer, by id
  // Load imbalance: the most loaded replica over the mean, of busy time (steps in flight) and of
  // the time-weighted mean waiting queue; 1 = perfectly even, NaN when all are zero.
  double busy_imbalance = NAN, queue_imbalance = NAN;
  // A router with nothing to act on (issue 25): prefix-aware without prompt content or without a
  // prefix cache, session without sessions. Printed as warnings, in the JSON and the tables.
  std::vector<std::string> router_warnings;
  AutoscaleSummary autoscale;  // an autoscaled run: the fleet's size over time, replica-hours
};

struct SimulateOptions;

struct RunResult {
  SimConfig config;  // resolved
  MemoryPlan memory;
  RunSummary summary;
  std::vector<RequestRecord> requests;
  std::vector<StepRecord> steps;  // empty unless simulate() was asked to keep them
  std::vector<std::pair<double, uint64_t>> itl_histogram_ms;  // (bucket upper bound, count)
  int64_t discarded_tokens = 0;  // computed, then thrown away by preemption
  FleetSummary fleet;            // empty for one replica
  // The options it ran under, as simulate() received them (without the progress callback): the
  // results record what they set (issue 42: every flag's value recorded).
  std::shared_ptr<const SimulateOptions> options;
};

// A fleet: NUM_REPLICAS copies of one configuration (vLLM's data parallelism, or as many servers
// behind a gateway), each a Host with its own scheduler and KV cache, driven by one event loop; a
// Router picks each request's replica when the client sends it.
inline constexpr int kMaxReplicas = 4096;

// Replicas of one configuration and role (sim/host.hpp's ReplicaRole: colocated, prefill,
// decode), for mixed and disaggregated fleets.
struct ReplicaGroup {
  SimConfig config;  // resolved
  int count = 1;
  ReplicaRole role = ReplicaRole::kColocated;
};

struct FleetOptions {
  int num_replicas = 1;  // replicas of the run's configuration (when GROUPS is empty)
  RouterOptions router;  // one router per pool: the colocated or prefill replicas; the decode ones
  // A fleet of these groups instead: colocated replicas of several GPUs (mixed pools), or prefill
  // and decode pools (disaggregated prefill, vllm-v1 only: vLLM's KV connectors are V1's).
  std::vector<ReplicaGroup> groups;
  // The link a prefill instance sends a prompt's KV over, per GPU of its TP group (each sends its
  // shard), in one direction: bandwidth in GB/s (0: the slower NIC of the two GPUs, or with
  // KV_TRANSFER_NVLINK their GPU-to-GPU link, both from the catalogue) and a latency per
  // transfer. vLLM's KV connectors (NIXL over RDMA) move MB-sized blocks near line rate.
  double kv_transfer_gb_per_s = 0;
  bool kv_transfer_nvlink = false;  // the pools share an NVLink domain (one node)
  double kv_transfer_latency_s = 1e-3;
  // Replicas added and removed during the run (sim/autoscaler.hpp): colocated fleets of one
  // configuration; NUM_REPLICAS is the count at the start.
  AutoscaleOptions autoscale;
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
  FleetOptions fleet;  // more than one replica: simulate() runs simulate_fleet()
  // End the run at its last arrival when it is then certain to be judged overloaded (its queue
  // grew for as long as requests arrived): a capacity probe's answer is known there. The
  // summary says so (Overload::stopped_at_last_arrival) and counts the requests left unfinished;
  // their records are as the run left them.
  bool stop_when_overloaded = false;
};

// OPTIONS as a run records them (RunResult::options): a copy without the progress callback.
std::shared_ptr<const SimulateOptions> recorded_options(const SimulateOptions& options);

// Error naming --enable-lora when W's requests ask for LoRA adapters and C serves none.
void check_loras(const SimConfig& c, const Workload& w);

// Runs a resolved configuration over W (sorted by arrival, ids 0..N-1) with its cost model
// (config.cost_model), or with COST when given (one replica only).
RunResult simulate(const SimConfig& resolved, const Workload& w, const CostModel* cost = nullptr,
                   const SimulateOptions& options = {});

// Promises what simulate() does, for the fleet: deterministic; every request ends finished or
// rejected, once, on one replica.
// The fleet's RunResult is the fleet as one run: every request on the replica that served it,
// throughput and MFU over all GPUs, the step share, KV usage and queue length per replica
// (time-weighted means over the replicas), the prefix cache summed; `fleet` holds each replica's
// own summary, the routing and the imbalance.
RunResult simulate_fleet(const SimConfig& resolved, const Workload& w,
                         const SimulateOptions& options);

}  // namespace servesim
