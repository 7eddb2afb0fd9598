#include "sim/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>

#include "models/table_model.hpp"
#include "scheduler/policy.hpp"
#include "sim/block_content.hpp"
#include "sim/event_loop.hpp"
#include "sim/host.hpp"
#include "sim/router.hpp"
#include "util/error.hpp"

namespace servesim {

namespace {
// Far above any real deployment; keeps per-step buffers and counters sane.
constexpr int64_t kMaxNumSeqs = int64_t(1) << 20;
}  // namespace

namespace {

// The model's shape against the TP degree, and max_model_len against the model.
void resolve_model(SimConfig& c) {
  if (c.tp < 1) throw Error("tensor-parallel-size", "must be >= 1");
  if (c.model.num_heads % c.tp != 0) {
    // vLLM: "Total number of attention heads (X) must be divisible by tensor parallel size (Y)."
    throw Error("tensor-parallel-size", "must divide " + c.model.name + "'s " +
                                            std::to_string(c.model.num_heads) + " attention heads");
  }
  SchedulerConfig& s = c.scheduler;
  if (s.max_model_len == 0) s.max_model_len = c.model.max_position;
  if (s.max_model_len < 2) throw Error("max-model-len", "must be >= 2");
  if (s.max_model_len > c.model.max_position) {
    // vLLM refuses a max_model_len above the model's max_position_embeddings.
    throw Error("max-model-len", std::to_string(s.max_model_len) + " exceeds " + c.model.name +
                                     "'s max_position_embeddings " +
                                     std::to_string(c.model.max_position));
  }
}

// The token budget's default and the budgets' ranges. vLLM also refuses max_num_batched_tokens
// below max_model_len without chunking, or below max_num_seqs (vllm/config.py SchedulerConfig.
// _verify_args); servesim runs both, for sweeps (README, Schedulers).
void resolve_scheduler(SimConfig& c) {
  SchedulerConfig& s = c.scheduler;
  if (!v1_engine(s.policy)) s.async_scheduling = false;  // a V1 engine feature
  const bool large = v1_large_defaults(c.gpu.hbm_gib, c.gpu.name);
  if (s.max_num_batched_tokens == 0) {
    s.max_num_batched_tokens = default_max_num_batched_tokens(s.policy, s.max_model_len, large);
  }
  if (s.max_num_seqs == 0) s.max_num_seqs = default_max_num_seqs(s.policy, large);
  if (s.max_num_batched_tokens < 1) throw Error("max-num-batched-tokens", "must be >= 1");
  if (s.max_num_seqs < 1 || s.max_num_seqs > kMaxNumSeqs) {
    throw Error("max-num-seqs", "must be in [1, " + std::to_string(kMaxNumSeqs) + "]");
  }
  if (s.block_size < 1 || s.block_size > 1 << 16) {
    throw Error("block-size", "must be in [1, 65536]");
  }
  if (s.long_prefill_token_threshold < 0) {
    throw Error("long-prefill-token-threshold", "must be >= 0");
  }
}

// The roofline's parameters (the GPU's defaults unless given), or a table model's profiles.
void resolve_cost_model(SimConfig& c) {
  if (!c.roofline) {
    c.roofline = default_roofline_params(c.gpu, v1_engine(c.scheduler.policy));
    c.roofline_source = default_roofline_source(c.gpu, v1_engine(c.scheduler.policy));
  } else if (c.roofline_source.empty()) {
    c.roofline_source = "given by the caller";
  }
  if (c.cost_model != "roofline" && c.cost_model != "table") {
    throw Error("cost-model", "expected roofline or table, got '" + c.cost_model + "'");
  }
  if (c.cost_model == "table") {
    if (!c.profiles) throw Error("cost-model", "the table model needs --profiles DIR");
    TableCostModel check(*c.profiles, c.gpu, c.model, c.tp);  // the profiles cover this model
  }
}

// The memory plan's options, checked, with the TP degree and the budgets copied in.
void resolve_memory(SimConfig& c) {
  MemoryPlanOptions& m = c.memory;
  if (!(m.gpu_memory_utilization > 0 && m.gpu_memory_utilization <= 1)) {
    throw Error("gpu-memory-utilization", "must be in (0, 1]");
  }
  if (!std::isnan(m.runtime_reserve_gib) &&
      (!(m.runtime_reserve_gib >= 0) || !std::isfinite(m.runtime_reserve_gib))) {
    throw Error("runtime-reserve-gib", "must be >= 0");
  }
  if (m.num_gpu_blocks_override < 0) throw Error("num-gpu-blocks", "must be >= 1");
  m.tp = c.tp;
  m.block_size = c.scheduler.block_size;
  m.max_num_batched_tokens = c.scheduler.max_num_batched_tokens;
  m.max_num_seqs = c.scheduler.max_num_seqs;
  m.v1_engine = v1_engine(c.scheduler.policy);
  m.runtime_reserve_gib = runtime_reserve_gib(m);
}

}  // namespace

SimConfig resolve(SimConfig c) {
  resolve_model(c);
  resolve_scheduler(c);
  resolve_cost_model(c);
  resolve_memory(c);
  return c;
}

namespace {

// Feeds the workload's arrivals to the replicas one at a time: one pending arrival event,
// whatever the workload's size. With several replicas a Router picks each request's replica when
// the client sends it. With a concurrency limit it is vLLM benchmark_serving.py's client with
// --max-concurrency N: a request whose time has come waits (client side, FIFO) while N are in
// flight, and is sent when one finishes or is rejected; its latencies count from when it is sent,
// as the client measures them. It also reports progress, and shows the router the fleet.
class ArrivalProcess final : public EventLoop::Process,
                             public Host::Listener,
                             public Router::Fleet {
 public:
  // FRONTEND_S: the API server's latency: a request sent at t reaches the engine at t + it.
  // ROUTER: null for one replica.
  // HASHER: the workload's, by workload id (for the prefix-aware router).
  ArrivalProcess(const Workload& w, const SimulateOptions& o, MetricsCollector& metrics,
                 double frontend_s, const RouterOptions* router, int block_size,
                 const BlockHasher* hasher)
      : w_(w),
        options_(o),
        metrics_(metrics),
        frontend_s_(frontend_s),
        block_size_(block_size),
        hasher_(hasher) {
    if (frontend_s_ > 0) sent_s_.resize(w.size());
    if (router != nullptr) {
      router_options_ = *router;
      replica_of_.resize(w.size());
    }
  }
  void start(EventLoop& loop, std::vector<Host*> hosts) {
    hosts_ = std::move(hosts);
    outstanding_.assign(hosts_.size(), 0);
    if (!replica_of_.empty()) router_.emplace(router_options_, *this, w_);
    loop_ = &loop;
    if (!w_.empty()) loop.schedule(w_[0].arrival_s, EventLoop::kArrival, this, kNext);
  }
  void handle(EventLoop& loop, uint32_t tag) override {
    if (tag != kNext) {  // request tag - 1 reaches the engine
      host_of(tag - 1).arrive(w_[tag - 1], sent_s_[tag - 1]);
      return;
    }
    if (limited() && in_flight_ >= size_t(options_.max_concurrency)) {
      held_.push_back(next_);
    } else {
      send(next_);
    }
    size_t waiting = held_.size();
    for (const Host* h : hosts_)
      waiting += h->waiting();
    metrics_.on_offered(loop.now(), waiting);
    if (++next_ < w_.size()) loop.schedule(w_[next_].arrival_s, EventLoop::kArrival, this, kNext);
  }
  void on_request_done(uint32_t id) override {
    if (router_) --outstanding_[replica_of_[id]];
    if (options_.progress && ++done_ % kProgressEvery == 0) options_.progress(done_, w_.size());
    if (!limited()) return;
    --in_flight_;
    if (held_.empty() || in_flight_ >= size_t(options_.max_concurrency)) return;
    const size_t i = held_.front();
    held_.pop_front();
    send(i);
  }

  // Router::Fleet.
  size_t size() const override { return hosts_.size(); }
  ReplicaLoad load(size_t i) const override {
    const Scheduler& s = hosts_[i]->scheduler();
    return {outstanding_[i], int64_t(s.num_waiting()),
            double(s.used_blocks()) / double(std::max<int64_t>(1, s.usable_blocks()))};
  }
  int64_t cached_prompt_blocks(size_t i, const RequestSpec& r) const override {
    const KvCacheManager* kv = hosts_[i]->scheduler().kv_cache_manager();
    return kv != nullptr ? kv->cached_prefix_blocks(*hasher_, r.id, r.input_tokens) : 0;
  }
  int block_size() const override { return block_size_; }

  std::vector<uint32_t> take_replica_of() { return std::move(replica_of_); }

 private:
  static constexpr size_t kProgressEvery = 1 << 14;
  static constexpr uint32_t kNext = 0;  // else 1 + the request reaching the engine
  bool limited() const { return options_.max_concurrency > 0; }
  Host& host_of(size_t i) { return *hosts_[router_ ? replica_of_[i] : 0]; }
  void send(size_t i) {
    if (limited()) ++in_flight_;
    const double now = loop_->now();
    if (router_) {
      const size_t r = router_->route(w_[i], now);
      replica_of_[i] = uint32_t(r);
      ++outstanding_[r];
    }
    if (frontend_s_ <= 0) {
      host_of(i).arrive(w_[i], now);
      return;
    }
    sent_s_[i] = now;
    loop_->schedule(now + frontend_s_, EventLoop::kArrival, this, uint32_t(i + 1));
  }

  const Workload& w_;
  const SimulateOptions& options_;
  MetricsCollector& metrics_;
  double frontend_s_;
  int block_size_;
  const BlockHasher* hasher_;
  std::vector<Host*> hosts_;
  RouterOptions router_options_;
  std::optional<Router> router_;
  std::vector<uint32_t> replica_of_;  // with a router: each request's replica
  std::vector<int64_t> outstanding_;  // per replica: routed, not yet done
  EventLoop* loop_ = nullptr;
  size_t next_ = 0, in_flight_ = 0, done_ = 0;
  std::deque<size_t> held_;
  std::vector<double> sent_s_;  // when each request was sent, with a front-end latency
};

}  // namespace

namespace {

PrefixCacheSummary prefix_cache_summary(const Scheduler& scheduler,
                                        const std::vector<RequestRecord>& requests) {
  PrefixCacheSummary p;
  const KvCacheManager* kv = scheduler.kv_cache_manager();
  if (kv == nullptr || !kv->caching()) return p;
  p.enabled = true;
  const KvCacheManager::Stats& s = kv->stats();
  p.queries = s.queries;
  p.hits = s.hits;
  p.preempted_queries = s.preempted_queries;
  p.preempted_hits = s.preempted_hits;
  p.evictions = s.evictions;
  for (const RequestRecord& r : requests)
    p.cached_prompt_tokens += std::max(r.cached_tokens, 0);
  return p;
}

}  // namespace

namespace {

std::unique_ptr<CostModel> make_cost_model(const SimConfig& c) {
  if (c.cost_model == "table") {
    return std::make_unique<TableCostModel>(*c.profiles, c.gpu, c.model, c.tp);
  }
  return std::make_unique<RooflineCostModel>(c.gpu, c.model, c.tp, *c.roofline,
                                             v1_engine(c.scheduler.policy));
}

MemoryPlan checked_memory_plan(const SimConfig& c) {
  MemoryPlan m = plan_memory(c.gpu, c.model, c.memory);
  if (v1_engine(c.scheduler.policy) && m.num_gpu_blocks < 2) {
    throw Error("num-gpu-blocks", "vllm-v1 needs at least 2 KV blocks (one is vLLM's null block)");
  }
  return m;
}

void keep_histogram(const MetricsCollector& metrics, RunResult& result) {
  metrics.itl_s().for_each_bucket(
      [&](double upper_s, uint64_t n) { result.itl_histogram_ms.emplace_back(upper_s * 1e3, n); });
}

}  // namespace

RunResult simulate(const SimConfig& c, const Workload& w, const CostModel* cost_override,
                   const SimulateOptions& options) {
  if (options.fleet.num_replicas != 1) {
    if (cost_override != nullptr) throw Error("num-replicas", "a fleet takes its own cost model");
    return simulate_fleet(c, w, options);
  }
  RunResult result;
  result.config = c;
  result.memory = checked_memory_plan(c);
  std::unique_ptr<CostModel> own;
  if (cost_override == nullptr) own = make_cost_model(c);
  const CostModel& cost = cost_override ? *cost_override : *own;
  const WorkloadBlockHasher hasher(w, c.scheduler.block_size);
  Scheduler scheduler(c.scheduler, result.memory.num_gpu_blocks, w.size(), &hasher);
  MetricsCollector metrics(w, options.keep_steps, options.metrics);
  EventLoop loop;
  ArrivalProcess arrivals(w, options, metrics, cost.frontend_latency_s(), nullptr,
                          c.scheduler.block_size, &hasher);
  const bool listen = options.max_concurrency > 0 || bool(options.progress);
  Host host(loop, scheduler, cost, metrics, listen ? &arrivals : nullptr);
  arrivals.start(loop, {&host});
  loop.run();

  result.requests = metrics.records(scheduler.seqs());
  result.summary = metrics.summary(result.requests, c.gpu.peak_flops() * c.tp,
                                   c.gpu.hbm_bytes_per_s() * c.tp, scheduler.usable_blocks());
  result.summary.prefix_cache = prefix_cache_summary(scheduler, result.requests);
  result.steps = metrics.take_steps();
  if (options.keep_histogram) keep_histogram(metrics, result);
  result.discarded_tokens = scheduler.discarded_tokens();
  return result;
}

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

 private:
  const BlockHasher& workload_;
  const std::vector<uint32_t>& global_of_;
};

// One replica of a fleet: its scheduler (and KV cache), its own measurements, its engine loop.
// Sized for EXPECTED requests, it grows past them as they come.
struct Replica {
  Replica(const SimConfig& c, const MemoryPlan& m, const Workload& w, size_t expected,
          const BlockHasher& hasher, EventLoop& loop, const CostModel& cost,
          Host::Listener& listener, MetricsCollector& fleet)
      : local_hasher(hasher, global_of),
        scheduler(c.scheduler, m.num_gpu_blocks, 0, &local_hasher),
        metrics(w.empty() ? 0.0 : w.front().arrival_s, expected),
        host(loop, scheduler, cost, metrics, &listener, &fleet, &global_of) {
    global_of.reserve(expected);
    scheduler.reserve(expected);
  }
  std::vector<uint32_t> global_of;  // the workload id of each of its requests
  ReplicaHasher local_hasher;
  Scheduler scheduler;
  MetricsCollector metrics;
  Host host;
};

// The fleet's prefix cache: every replica's counters summed.
void add_prefix_cache(const Scheduler& s, PrefixCacheSummary& p) {
  const KvCacheManager* kv = s.kv_cache_manager();
  if (kv == nullptr || !kv->caching()) return;
  p.enabled = true;
  p.queries += kv->stats().queries;
  p.hits += kv->stats().hits;
  p.preempted_queries += kv->stats().preempted_queries;
  p.preempted_hits += kv->stats().preempted_hits;
  p.evictions += kv->stats().evictions;
}

double max_over_mean(const std::vector<double>& v) {
  double sum = 0, mx = 0;
  for (double x : v) {
    sum += x;
    mx = std::max(mx, x);
  }
  return sum > 0 ? mx / (sum / double(v.size())) : NAN;
}

}  // namespace

RunResult simulate_fleet(const SimConfig& c, const Workload& w, const SimulateOptions& options) {
  const FleetOptions& fleet = options.fleet;
  if (fleet.num_replicas < 1 || fleet.num_replicas > kMaxReplicas) {
    throw Error("num-replicas", "must be in [1, " + std::to_string(kMaxReplicas) + "]");
  }
  if (!(fleet.router.signal_delay_s >= 0) || !std::isfinite(fleet.router.signal_delay_s)) {
    throw Error("router-signal-delay-s", "must be a number >= 0");
  }
  const size_t n = size_t(fleet.num_replicas);
  RunResult result;
  FleetSummary& out = result.fleet;
  out.num_replicas = fleet.num_replicas;
  out.router = router_name(fleet.router.kind);
  result.config = c;
  result.memory = checked_memory_plan(c);
  const std::unique_ptr<CostModel> cost = make_cost_model(c);
  const WorkloadBlockHasher hasher(w, c.scheduler.block_size);
  MetricsCollector metrics(w, options.keep_steps, options.metrics);
  EventLoop loop;
  ArrivalProcess arrivals(w, options, metrics, cost->frontend_latency_s(), &fleet.router,
                          c.scheduler.block_size, &hasher);
  std::vector<std::unique_ptr<Replica>> replicas;
  std::vector<Host*> hosts;
  const size_t expected = w.size() / n + 1;
  for (size_t i = 0; i < n; ++i) {
    replicas.push_back(std::make_unique<Replica>(c, result.memory, w, expected, hasher, loop, *cost,
                                                 arrivals, metrics));
    hosts.push_back(&replicas.back()->host);
  }
  arrivals.start(loop, hosts);
  loop.run();

  out.replica_of = arrivals.take_replica_of();
  // The fleet's records: each request's state on the replica that served it.
  std::vector<uint32_t> local_of(w.size());
  for (const auto& r : replicas) {
    for (size_t local = 0; local < r->global_of.size(); ++local)
      local_of[r->global_of[local]] = uint32_t(local);
  }
  result.requests.reserve(w.size());
  for (size_t id = 0; id < w.size(); ++id) {
    const Replica& r = *replicas[out.replica_of[id]];
    result.requests.push_back(metrics.record(uint32_t(id), r.scheduler.seqs()[local_of[id]]));
  }
  const double peak_flops = c.gpu.peak_flops() * c.tp * double(n);
  const double peak_bytes = c.gpu.hbm_bytes_per_s() * c.tp * double(n);
  // KV usage over one replica's blocks: the fleet's figures are per replica, time-weighted.
  const int64_t blocks = replicas[0]->scheduler.usable_blocks();
  result.summary = metrics.summary(result.requests, peak_flops, peak_bytes, blocks);
  result.summary.step_time_fraction /= double(n);  // busy time summed over the replicas
  std::vector<double> busy(n), queue(n);
  out.routed.assign(n, 0);
  for (uint32_t r : out.replica_of)
    ++out.routed[r];
  for (size_t i = 0; i < n; ++i) {
    const Replica& r = *replicas[i];
    const std::vector<RequestRecord> mine = r.metrics.records(r.scheduler.seqs());
    RunSummary s = r.metrics.summary(mine, c.gpu.peak_flops() * c.tp,
                                     c.gpu.hbm_bytes_per_s() * c.tp, r.scheduler.usable_blocks());
    s.prefix_cache = prefix_cache_summary(r.scheduler, mine);
    add_prefix_cache(r.scheduler, result.summary.prefix_cache);
    result.discarded_tokens += r.scheduler.discarded_tokens();
    busy[i] = s.busy_s;
    queue[i] = s.queue_len.mean;
    out.replicas.push_back(std::move(s));
  }
  for (const RequestRecord& r : result.requests)
    result.summary.prefix_cache.cached_prompt_tokens += std::max(r.cached_tokens, 0);
  out.busy_imbalance = max_over_mean(busy);
  out.queue_imbalance = max_over_mean(queue);
  result.steps = metrics.take_steps();
  if (options.keep_histogram) keep_histogram(metrics, result);
  return result;
}

}  // namespace servesim
