// simulate_fleet(): replicas of one or several configurations, colocated or disaggregated into
// prefill and decode pools, behind routers, under one event loop.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>

#include "scheduler/capabilities.hpp"
#include "scheduler/policy.hpp"
#include "sim/gateway.hpp"
#include "sim/replica_config.hpp"
#include "sim/run_summaries.hpp"
#include "sim/simulation.hpp"
#include "sim/workload_block_hasher.hpp"
#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {

// A replica's view of the workload's block hasher: the replica numbers its requests as they
// come, the workload by its ids.
class ReplicaHasher final : public BlockHasher {
 public:
  ReplicaHasher(const BlockHasher& workload, const std::vector<uint32_t>& global_of)
      : workload_(workload), global_of_(global_of) {}
  uint64_t block_hash(uint32_t id, int64_t index, uint64_t parent) const override {
    return workload_.block_hash(global_of_[id], index, parent);
  }
  int64_t shared_blocks(uint32_t id) const override {
    return workload_.shared_blocks(global_of_[id]);
  }

 private:
  const BlockHasher& workload_;
  const std::vector<uint32_t>& global_of_;
};

// The parts one group's replicas share: configuration, memory plan, cost model.
struct GroupParts {
  const ReplicaGroup* group;
  MemoryPlan memory;
  std::unique_ptr<CostModel> cost;
};

// One replica of a fleet: its scheduler (and KV cache), its own measurements, its engine loop.
// Sized for EXPECTED requests, it grows past them as they come.
struct Replica {
  Replica(const GroupParts& g, const Workload& w, size_t expected, const BlockHasher& hasher,
          EventLoop& loop, Host::Listener& listener, MetricsCollector& fleet, uint32_t index)
      : parts(g),
        local_hasher(hasher, global_of),
        scheduler(make_scheduler(replica_scheduler_config(g.group->config, g.memory),
                                 g.memory.num_gpu_blocks, 0, &local_hasher)),
        metrics(w.empty() ? 0.0 : w.front().arrival_s, expected),
        host(loop, *scheduler, *g.cost, metrics, &listener, &fleet, &global_of, g.group->role,
             index) {
    global_of.reserve(expected);
    scheduler->reserve(expected);
    set_host_link(host, g.group->config);
    metrics.set_power({make_power_model(g.group->config)});
  }
  const GroupParts& parts;
  std::vector<uint32_t> global_of;  // the workload id of each of its requests
  ReplicaHasher local_hasher;
  std::unique_ptr<Scheduler> scheduler;
  MetricsCollector metrics;
  Host host;
};

double max_over_mean(const std::vector<double>& v) {
  double sum = 0, mx = 0;
  for (double x : v) {
    sum += x;
    mx = std::max(mx, x);
  }
  return sum > 0 ? mx / (sum / double(v.size())) : NAN;
}

// The groups of OPTIONS, or NUM_REPLICAS colocated copies of C; checked.
std::vector<ReplicaGroup> fleet_groups(const SimConfig& c, const FleetOptions& o) {
  if (!(o.router.signal_delay_s >= 0) || !std::isfinite(o.router.signal_delay_s)) {
    throw Error(field::kRouterSignalDelayS, "must be a number >= 0");
  }
  if (o.groups.empty()) {
    if (o.num_replicas < 1 || o.num_replicas > kMaxReplicas) {
      throw Error(field::kNumReplicas, "must be in [1, " + std::to_string(kMaxReplicas) + "]");
    }
    return {ReplicaGroup{c, o.num_replicas, ReplicaRole::kColocated}};
  }
  int total = 0, prefill = 0, decode = 0, colocated = 0;
  for (const ReplicaGroup& g : o.groups) {
    if (g.count < 1) throw Error(field::kNumReplicas, "every pool needs at least one replica");
    total += g.count;
    (g.role == ReplicaRole::kPrefill  ? prefill
     : g.role == ReplicaRole::kDecode ? decode
                                      : colocated) += g.count;
    if (g.role != ReplicaRole::kColocated && g.config.offload.enabled()) {
      throw Error(field::kKvOffloadingSize,
                  "CPU KV offload with disaggregated prefill is not modelled (vLLM would chain "
                  "two connectors: MultiConnector)");
    }
    if (g.role != ReplicaRole::kColocated) {
      require(g.config.scheduler.policy, Feature::kDisaggregatedPrefill);
    }
    if (g.config.scheduler.block_size != o.groups[0].config.scheduler.block_size) {
      const SimConfig& first = o.groups[0].config;
      throw Error(field::kBlockSize,
                  first.model.hybrid() || g.config.model.hybrid()
                      ? "every replica of a fleet must use the same block size: vLLM raises a "
                        "hybrid model's to hold its linear-attention state, " +
                            std::to_string(first.scheduler.block_size) + " and " +
                            std::to_string(g.config.scheduler.block_size) +
                            " tokens here (give the groups one TP degree)"
                      : "every replica of a fleet must use the same block size");
    }
  }
  if (total > kMaxReplicas) {
    throw Error(field::kNumReplicas,
                "at most " + std::to_string(kMaxReplicas) + " replicas in all");
  }
  if ((prefill > 0) != (decode > 0) || (prefill > 0 && colocated > 0)) {
    throw Error(field::kPrefillReplicas,
                "a disaggregated fleet has prefill and decode replicas, and no colocated ones");
  }
  // 0 is the catalogue's link; any other figure a physical one, from 1 Mb/s to 1 Pb/s (a
  // subnormal 5e-324 read as 0 ran as the default link).
  const double gb_per_s = o.kv_transfer_gb_per_s;
  if (!(gb_per_s == 0 || (gb_per_s >= 1.25e-4 && gb_per_s <= 1.25e5))) {
    throw Error(field::kKvTransferGbps, "must be 0 (the catalogue's link) or in [0.001, 1e6] Gb/s");
  }
  if (!(o.kv_transfer_latency_s >= 0 && o.kv_transfer_latency_s <= 3600)) {
    throw Error(field::kKvTransferLatencyS, "must be in [0, 3600] seconds");
  }
  return o.groups;
}

// Each pool's requests, TTFT and ITL over its replicas, in the order the pools first appear.
// RECORDS: each replica's own requests (MetricsCollector::records).
std::vector<PoolSummary> pool_summaries(const std::vector<std::unique_ptr<Replica>>& replicas,
                                        const std::vector<std::vector<RequestRecord>>& records,
                                        const FleetSummary& f) {
  std::vector<PoolSummary> pools;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (std::none_of(pools.begin(), pools.end(),
                     [&](const PoolSummary& p) { return p.name == f.pool[i]; })) {
      PoolSummary p;
      p.name = f.pool[i];
      pools.push_back(p);
    }
  }
  for (PoolSummary& p : pools) {
    std::vector<double> ttft;
    LogHistogram itl;
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (f.pool[i] != p.name) continue;
      const Replica& r = *replicas[i];
      ++p.replicas;
      p.requests += f.routed[i];
      p.step_time_fraction += f.replicas[i].step_time_fraction;
      itl.merge(r.metrics.itl_s());
      for (const RequestRecord& q : records[i]) {
        if (q.finished()) ttft.push_back(q.ttft_s() * 1e3);
      }
    }
    p.step_time_fraction /= double(p.replicas);
    p.ttft_ms = summarize(ttft);
    p.itl_ms = scaled(summarize(itl), 1e3);
  }
  return pools;
}

// The KV link's bandwidth out of a GPU, one direction, GB/s: the flag's, else the slowest NIC (or
// NVLink) among the pools' GPUs, which bounds the transfer at either end.
double kv_link_gb_per_s(const FleetOptions& f, const GpuSpec& gpu,
                        const std::vector<ReplicaGroup>& groups) {
  if (f.kv_transfer_gb_per_s > 0) return f.kv_transfer_gb_per_s;
  double gb = f.kv_transfer_nvlink ? gpu.interconnect_gb_per_s : gpu.network_gb_per_s;
  for (const ReplicaGroup& g : groups) {
    gb = std::min(gb, f.kv_transfer_nvlink ? g.config.gpu.interconnect_gb_per_s
                                           : g.config.gpu.network_gb_per_s);
  }
  return gb;
}

// The autoscaler's view of the fleet: the gateway's loads and routing, the replicas' caches.
class ScaledFleet final : public Autoscaler::Fleet {
 public:
  ScaledFleet(Gateway& a, const std::vector<std::unique_ptr<Replica>>& r) : a_(a), replicas_(r) {}
  size_t size() const override { return replicas_.size(); }
  ReplicaLoad load(size_t i) const override { return a_.load(uint32_t(i)); }
  void set_routable(size_t i, bool on) override { a_.set_routable(uint32_t(i), on); }
  void restart(size_t i) override { replicas_[i]->scheduler->reset_prefix_cache(); }
  uint64_t sent() const override { return a_.arrived(); }
  bool finished() const override { return a_.finished(); }

 private:
  Gateway& a_;
  const std::vector<std::unique_ptr<Replica>>& replicas_;
};

// Seconds from an autoscaler's decision to a new replica serving: the flag's, else the engine's
// start-up plus the weights (every GPU's shard, over one node's storage link).
double provision_seconds(const AutoscaleOptions& o, const SimConfig& c) {
  if (!std::isnan(o.provision_s)) return o.provision_s;
  const double load_s = double(c.model.weight_bytes()) / (o.load_gb_per_s * 1e9);
  // The same year that bounds --provision-s and --engine-startup-s (check_autoscale): 1e-300
  // GB/s gave "inf s" or a 300-digit provisioning time, and a run that never scaled.
  if (!(o.startup_s + load_s <= 86400 * 365)) {
    throw Error(
        field::kModelLoadGbPerS,
        format("loading %s's %.3g GB at %g GB/s takes %.3g s, more than a year: give a "
               "storage bandwidth (a local NVMe reads 2-7 GB/s) or {{autoscale.provision_s}}",
               c.model.name.c_str(), double(c.model.weight_bytes()) / 1e9, o.load_gb_per_s,
               load_s));
  }
  return o.startup_s + load_s;
}

const char* role_name(ReplicaRole r) {
  return r == ReplicaRole::kPrefill ? "prefill" : r == ReplicaRole::kDecode ? "decode" : "";
}

}  // namespace

namespace {

// What KIND cannot act on in this fleet and workload (FleetSummary::router_warnings).
std::vector<std::string> router_warnings(RouterKind kind, const std::vector<ReplicaGroup>& groups,
                                         const Workload& w) {
  std::vector<std::string> out;
  if (kind == RouterKind::kPrefixAware) {
    if (!w.has_content()) {
      out.push_back(
          "prefix-aware has no prompt content to score: the workload names no shared tokens (no "
          "hash ids, shared prefixes or sessions), so it routes by load alone, as least-kv "
          "would");
    }
    for (const ReplicaGroup& g : groups) {
      const SchedulerConfig& s = g.config.scheduler;
      if (!supports(s.policy, Feature::kPrefixCache) || !s.enable_prefix_caching) {
        out.push_back(std::string("prefix-aware scores cached prefixes, but ") +
                      policy_name(s.policy) +
                      " keeps no prefix cache here (a V0 policy, or prefix caching off): it "
                      "routes by load alone");
        break;
      }
    }
  }
  if (kind == RouterKind::kLoraAffinity &&
      std::none_of(w.begin(), w.end(), [](const RequestSpec& r) { return r.lora != 0; })) {
    out.push_back(
        "lora-affinity has no adapter to route by: no request asks for a LoRA adapter, so it "
        "routes by queue and KV usage alone");
  }
  if (kind == RouterKind::kSession && !w.has_content()) {
    out.push_back(
        "session has no sessions to keep together: the workload has no conversations (no "
        "session ids or multi-turn content), so it routes as least-requests would");
  }
  return out;
}

// The fleet's records into RESULT.requests: each request's state on the replica that finished it
// (its decode replica, when it reached one); also RESULT.fleet.routed. Returns the last event's
// time (the last token, or the last arrival).
double collect_records(const Workload& w, const std::vector<std::unique_ptr<Replica>>& replicas,
                       const MetricsCollector& metrics, RunResult& result) {
  FleetSummary& out = result.fleet;
  const size_t n = replicas.size();
  std::vector<uint32_t> local_of(w.size());
  auto finisher = [&](size_t id) {
    const bool decoded = !out.decode_of.empty() && out.decode_of[id] != Gateway::kNone;
    return decoded ? out.decode_of[id] : out.replica_of[id];
  };
  out.routed.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const std::vector<uint32_t>& g = replicas[i]->global_of;
    out.routed[i] = g.size();
    for (size_t local = 0; local < g.size(); ++local) {
      if (finisher(g[local]) == i) local_of[g[local]] = uint32_t(local);
    }
  }
  result.requests.reserve(w.size());
  double end_s = w.empty() ? 0.0 : w.back().arrival_s;
  for (size_t id = 0; id < w.size(); ++id) {
    const Replica& r = *replicas[finisher(id)];
    const SeqState& seq = r.scheduler->seqs()[local_of[id]];
    RequestRecord rec = metrics.record(uint32_t(id), seq);
    // A colocated replica told the fleet's collector only its tokens' gaps (Host::finish_step).
    if (r.host.role() == ReplicaRole::kColocated) {
      MetricsCollector::with_token_times(rec, r.metrics.record(local_of[id], seq));
    }
    end_s = std::max(end_s, rec.last_token_s);
    result.requests.push_back(rec);
  }
  return end_s;
}

// Each replica's summary into RESULT.fleet.replicas (and per pool unless UNIFORM), the prefix
// caches and discarded tokens summed into RESULT, and the load imbalance: over the slots that
// served when AUTOSCALED (the others never existed for the router).
void summarize_replicas(const std::vector<std::unique_ptr<Replica>>& replicas, bool uniform,
                        bool autoscaled, RunResult& result) {
  FleetSummary& out = result.fleet;
  const size_t n = replicas.size();
  std::vector<double> busy(n), queue(n);
  std::vector<std::vector<RequestRecord>> records(n);
  for (size_t i = 0; i < n; ++i) {
    const Replica& r = *replicas[i];
    const SimConfig& rc = r.parts.group->config;
    records[i] = r.metrics.records(r.scheduler->seqs());
    const std::vector<RequestRecord>& mine = records[i];
    RunSummary s =
        r.metrics.summary(mine, rc.gpu.peak_flops() * rc.gpus(),
                          rc.gpu.hbm_bytes_per_s() * rc.gpus(), r.scheduler->usable_blocks());
    summarize_features(rc, *r.scheduler, r.host, mine, s);
    // A replica's GPUs draw until the fleet's run ends. An autoscaled slot's span (from its start
    // to its stop) is not kept: its energy is left unknown, the fleet's counts its replica-hours.
    if (autoscaled) {
      s.energy = EnergySummary{};
    } else {
      idle_until(s, result.summary.makespan_s);
    }
    add_features(s, result.summary);
    result.discarded_tokens += r.scheduler->discarded_tokens();
    busy[i] = s.busy_s;
    queue[i] = s.queue_len.mean;
    out.replicas.push_back(std::move(s));
  }
  if (!uniform) out.pools = pool_summaries(replicas, records, out);
  finish_features(result.requests, result.summary);
  if (autoscaled) {
    std::vector<double> b, q;
    for (size_t i = 0; i < n; ++i) {
      if (out.routed[i] == 0) continue;
      b.push_back(busy[i]);
      q.push_back(queue[i]);
    }
    busy = std::move(b);
    queue = std::move(q);
  }
  out.busy_imbalance = max_over_mean(busy);
  out.queue_imbalance = max_over_mean(queue);
}

}  // namespace

RunResult simulate_fleet(const SimConfig& c, const Workload& w, const SimulateOptions& options) {
  const FleetOptions& fleet = options.fleet;
  const AutoscaleOptions& scale = fleet.autoscale;
  std::vector<ReplicaGroup> groups = fleet_groups(c, fleet);
  if (scale.enabled) {
    check_autoscale(scale);
    if (groups.size() != 1 || groups[0].role != ReplicaRole::kColocated) {
      throw Error(
          field::kAutoscale,
          "scales a fleet of one configuration (not {{fleet.replica_gpus}} or prefill/decode "
          "pools)");
    }
    groups[0].count = std::min(autoscale_slots(scale), kMaxReplicas);
  }
  std::vector<GroupParts> parts;
  for (const ReplicaGroup& g : groups)
    parts.push_back({&g, checked_memory_plan(g.config), make_cost_model(g.config)});
  size_t n = 0;
  for (const ReplicaGroup& g : groups)
    n += size_t(g.count);

  RunResult result;
  result.options = recorded_options(options);
  FleetSummary& out = result.fleet;
  out.num_replicas = int(n);
  out.router = fleet.router.hook != nullptr ? "custom" : router_name(fleet.router.kind);
  out.router_warnings = router_warnings(fleet.router.kind, groups, w);
  result.config = groups[0].config;
  result.memory = parts[0].memory;
  const int block_size = groups[0].config.scheduler.block_size;
  const WorkloadBlockHasher hasher(w, block_size);
  MetricsCollector metrics(w, options.keep_steps, options.metrics);
  EventLoop loop;
  // One API server latency for every request, whichever replica or pool serves it.
  Gateway arrivals(w, options, metrics, c.frontend_latency_s, &fleet.router, block_size, &hasher);
  std::vector<std::unique_ptr<Replica>> replicas;
  std::vector<ReplicaLink> links;
  const size_t expected = w.size() / n + 1;
  double peak_flops = 0, peak_bytes = 0;
  for (const GroupParts& g : parts) {
    const SimConfig& gc = g.group->config;
    for (int k = 0; k < g.group->count; ++k) {
      replicas.push_back(std::make_unique<Replica>(g, w, expected, hasher, loop, arrivals, metrics,
                                                   uint32_t(replicas.size())));
      ReplicaLink link{&replicas.back()->host, g.group->role};
      link.kv_bytes_per_token = double(gc.model.kv_bytes_per_token_per_gpu(gc.tp));
      link.link_bytes_per_s = kv_link_gb_per_s(fleet, gc.gpu, groups) * 1e9;
      link.link_latency_s = fleet.kv_transfer_latency_s;
      links.push_back(link);
      peak_flops += gc.gpu.peak_flops() * gc.gpus();
      peak_bytes += gc.gpu.hbm_bytes_per_s() * gc.gpus();
      out.pool.push_back(std::string(role_name(g.group->role)) +
                         (*role_name(g.group->role) ? " " : "") + gc.gpu.name);
    }
  }
  std::vector<PowerModel> power;
  for (const auto& r : replicas)
    power.push_back(make_power_model(r->parts.group->config));
  metrics.set_power(std::move(power));
  if (groups.size() > 1) {
    // KV caches of different sizes: each replica's usage as a fraction of its own cache, in the
    // first replica's blocks (MetricsCollector::set_kv_scale).
    std::vector<double> scale;
    const double ref = double(replicas[0]->scheduler->usable_blocks());
    for (const auto& r : replicas)
      scale.push_back(ref / double(std::max<int64_t>(1, r->scheduler->usable_blocks())));
    metrics.set_kv_scale(std::move(scale));
  }
  arrivals.start(loop, links);
  ScaledFleet scaled(arrivals, replicas);
  std::optional<Autoscaler> autoscaler;
  if (scale.enabled) {
    autoscaler.emplace(scale, provision_seconds(scale, groups[0].config), scaled,
                       fleet.num_replicas);
    arrivals.set_autoscaler(&*autoscaler);
    autoscaler->start(loop, w.empty() ? 0.0 : w.front().arrival_s);
  }
  loop.run();

  out.replica_of = arrivals.take_replica_of();
  out.decode_of = arrivals.take_decode_of();
  out.kv_transfers = arrivals.transfers();
  out.kv_transfer_bytes = arrivals.transfer_bytes();
  out.kv_transfer_s = arrivals.transfer_s();
  out.kv_sent_s = arrivals.take_kv_sent_s();
  out.kv_landed_s = arrivals.take_kv_landed_s();
  const double end_s = collect_records(w, replicas, metrics, result);
  double fleet_size = double(n);  // replicas on average (autoscaled: billed time over the span)
  if (autoscaler) {
    // Throughput and MFU over the GPUs the fleet had on average, not over every slot.
    out.autoscale = autoscaler->summary(end_s);
    const double span_s = end_s - (w.empty() ? 0.0 : w.front().arrival_s);
    const double mean_replicas =
        span_s > 0 ? out.autoscale.replica_hours * 3600 / span_s : double(autoscaler->initial());
    peak_flops *= mean_replicas / double(n);
    peak_bytes *= mean_replicas / double(n);
    fleet_size = mean_replicas;
  }
  // KV usage over one replica's blocks: with one configuration the fleet's figures are per
  // replica, time-weighted.
  result.summary = metrics.summary(result.requests, peak_flops, peak_bytes,
                                   replicas[0]->scheduler->usable_blocks());
  result.summary.step_time_fraction /= fleet_size;  // busy time summed over the replicas
  if (autoscaler) {
    // Idle power is drawn by the replicas that exist: on average fleet_size of the n slots, at
    // the peak the most there were (which bounds the peak window's from above).
    scale_idle(result.summary, fleet_size / double(n),
               double(out.autoscale.peak_replicas) / double(n));
  }
  if (loop.stopped()) mark_stopped_at_last_arrival(result.summary);
  summarize_replicas(replicas, groups.size() == 1, autoscaler.has_value(), result);
  result.steps = metrics.take_steps();
  if (options.keep_histogram) keep_histogram(metrics, result);
  return result;
}

}  // namespace servesim
