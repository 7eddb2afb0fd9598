#include "sim/simulation.hpp"

#include <cmath>
#include <deque>

#include "models/table_model.hpp"
#include "scheduler/policy.hpp"
#include "sim/block_content.hpp"
#include "sim/event_loop.hpp"
#include "sim/host.hpp"
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

// Feeds the workload's arrivals to the host one at a time: one pending arrival event, whatever
// the workload's size. With a concurrency limit it is vLLM benchmark_serving.py's client with
// --max-concurrency N: a request whose time has come waits (client side, FIFO) while N are in
// flight, and is sent when one finishes or is rejected; its latencies count from when it is sent,
// as the client measures them. It also reports progress.
class ArrivalProcess final : public EventLoop::Process, public Host::Listener {
 public:
  // FRONTEND_S: the API server's latency: a request sent at t reaches the engine at t + it.
  ArrivalProcess(const Workload& w, const SimulateOptions& o, MetricsCollector& metrics,
                 double frontend_s)
      : w_(w), options_(o), metrics_(metrics), frontend_s_(frontend_s) {
    if (frontend_s_ > 0) sent_s_.resize(w.size());
  }
  void start(EventLoop& loop, Host& host) {
    host_ = &host;
    loop_ = &loop;
    if (!w_.empty()) loop.schedule(w_[0].arrival_s, EventLoop::kArrival, this, kNext);
  }
  void handle(EventLoop& loop, uint32_t tag) override {
    if (tag != kNext) {  // request tag - 1 reaches the engine
      host_->arrive(w_[tag - 1], sent_s_[tag - 1]);
      return;
    }
    if (limited() && in_flight_ >= size_t(options_.max_concurrency)) {
      held_.push_back(next_);
    } else {
      send(next_);
    }
    metrics_.on_offered(loop.now(), host_->waiting() + held_.size());
    if (++next_ < w_.size()) loop.schedule(w_[next_].arrival_s, EventLoop::kArrival, this, kNext);
  }
  void on_request_done(uint32_t) override {
    if (options_.progress && ++done_ % kProgressEvery == 0) options_.progress(done_, w_.size());
    if (!limited()) return;
    --in_flight_;
    if (held_.empty() || in_flight_ >= size_t(options_.max_concurrency)) return;
    const size_t i = held_.front();
    held_.pop_front();
    send(i);
  }

 private:
  static constexpr size_t kProgressEvery = 1 << 14;
  static constexpr uint32_t kNext = 0;  // else 1 + the request reaching the engine
  bool limited() const { return options_.max_concurrency > 0; }
  void send(size_t i) {
    if (limited()) ++in_flight_;
    const double now = loop_->now();
    if (frontend_s_ <= 0) {
      host_->arrive(w_[i], now);
      return;
    }
    sent_s_[i] = now;
    loop_->schedule(now + frontend_s_, EventLoop::kArrival, this, uint32_t(i + 1));
  }

  const Workload& w_;
  const SimulateOptions& options_;
  MetricsCollector& metrics_;
  double frontend_s_;
  Host* host_ = nullptr;
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

RunResult simulate(const SimConfig& c, const Workload& w, const CostModel* cost_override,
                   const SimulateOptions& options) {
  RunResult result;
  result.config = c;
  result.memory = plan_memory(c.gpu, c.model, c.memory);
  std::unique_ptr<CostModel> own;
  if (cost_override == nullptr) {
    if (c.cost_model == "table") {
      own = std::make_unique<TableCostModel>(*c.profiles, c.gpu, c.model, c.tp);
    } else {
      own = std::make_unique<RooflineCostModel>(c.gpu, c.model, c.tp, *c.roofline,
                                                v1_engine(c.scheduler.policy));
    }
  }
  const CostModel& cost = cost_override ? *cost_override : *own;
  if (v1_engine(c.scheduler.policy) && result.memory.num_gpu_blocks < 2) {
    throw Error("num-gpu-blocks", "vllm-v1 needs at least 2 KV blocks (one is vLLM's null block)");
  }
  const WorkloadBlockHasher hasher(w, c.scheduler.block_size);
  Scheduler scheduler(c.scheduler, result.memory.num_gpu_blocks, w.size(), &hasher);
  MetricsCollector metrics(w, options.keep_steps, options.metrics);
  EventLoop loop;
  ArrivalProcess arrivals(w, options, metrics, cost.frontend_latency_s());
  const bool listen = options.max_concurrency > 0 || bool(options.progress);
  Host host(loop, scheduler, cost, metrics, listen ? &arrivals : nullptr);
  arrivals.start(loop, host);
  loop.run();

  result.requests = metrics.records(scheduler.seqs());
  result.summary = metrics.summary(result.requests, c.gpu.peak_flops() * c.tp,
                                   c.gpu.hbm_bytes_per_s() * c.tp, scheduler.usable_blocks());
  result.summary.prefix_cache = prefix_cache_summary(scheduler, result.requests);
  result.steps = metrics.take_steps();
  if (options.keep_histogram) {
    metrics.itl_s().for_each_bucket([&](double upper_s, uint64_t n) {
      result.itl_histogram_ms.emplace_back(upper_s * 1e3, n);
    });
  }
  result.discarded_tokens = scheduler.discarded_tokens();
  return result;
}

}  // namespace servesim
