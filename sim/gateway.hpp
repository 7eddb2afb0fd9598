// Gateway: the clients and the gateway in front of the replicas, for simulate() and
// simulate_fleet() (internal to sim/). It feeds the workload's arrivals to the replicas one at a
// time (one pending arrival event, whatever the workload's size). With several replicas a Router
// picks each request's replica when the client sends it; with disaggregated prefill, a second
// router picks the decode replica when the prefill is done, and the prompt's KV lands there after
// the transfer. With a concurrency limit it is vLLM benchmark_serving.py's client with
// --max-concurrency N: a request whose time has come waits (client side, FIFO) while N are in
// flight, and is sent when one finishes or is rejected; its latencies count from when it is sent,
// as the client measures them. It also reports progress.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "models/cost_model.hpp"
#include "models/memory_plan.hpp"
#include "scheduler/block_hasher.hpp"
#include "sim/autoscaler.hpp"
#include "sim/event_loop.hpp"
#include "sim/host.hpp"
#include "sim/metrics.hpp"
#include "sim/router.hpp"
#include "sim/simulation.hpp"

namespace servesim {

// A replica as the gateway sees it: its engine, and for a prefill instance how long its KV takes
// to send.
struct ReplicaLink {
  Host* host = nullptr;
  ReplicaRole role = ReplicaRole::kColocated;
  double kv_bytes_per_token = 0;  // per GPU, the prompt's KV a prefill instance sends
  double link_bytes_per_s = 0;    // per GPU
  double link_latency_s = 0;
};

class Gateway final : public EventLoop::Process, public Host::Listener {
 public:
  // FRONTEND_S: the API server's latency: a request sent at t reaches the engine at t + it.
  // ROUTER: null for one replica. HASHER: the workload's, by workload id (for prefix-aware
  // routing).
  Gateway(const Workload& w, const SimulateOptions& o, MetricsCollector& metrics, double frontend_s,
          const RouterOptions* router, int block_size, const BlockHasher* hasher);
  ~Gateway();
  void start(EventLoop& loop, std::vector<ReplicaLink> replicas);
  void handle(EventLoop& loop, uint32_t tag) override;
  void on_request_done(uint32_t id) override;
  void on_prefill_done(uint32_t id) override;
  void on_load_change(uint32_t replica) override;

  // Each request's first replica (colocated or prefill) and its decode replica (kNone when it
  // had none), by id; KV transfers: how many, their bytes and seconds summed.
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> take_replica_of() { return std::move(replica_of_); }
  std::vector<uint32_t> take_decode_of() { return std::move(decode_of_); }
  uint64_t transfers() const { return transfers_; }
  double transfer_bytes() const { return transfer_bytes_; }
  double transfer_s() const { return transfer_s_; }
  std::vector<double> take_kv_sent_s() { return std::move(kv_sent_s_); }
  std::vector<double> take_kv_landed_s() { return std::move(kv_landed_s_); }

  // An autoscaled fleet (colocated): the replicas' loads by fleet index, which of them the router
  // may pick, and the autoscaler told when a replica has no request left.
  ReplicaLoad load(uint32_t replica) const;
  void set_routable(uint32_t replica, bool routable);
  void set_autoscaler(Autoscaler* a) { autoscaler_ = a; }
  size_t arrived() const { return next_; }
  bool finished() const { return done_ == w_.size(); }

 private:
  class Pool;
  static constexpr size_t kProgressEvery = 1 << 14;
  // Event tags: the next arrival; 1 + a request reaching its first engine; kLanded + a request
  // whose KV reached its decode engine.
  static constexpr uint32_t kNext = 0, kLanded = 1u << 31;
  bool limited() const { return options_.max_concurrency > 0; }
  Host& host_of(size_t i) { return *replicas_[replica_of_.empty() ? 0 : replica_of_[i]].host; }
  void send(size_t i);

  const Workload& w_;
  const SimulateOptions& options_;
  MetricsCollector& metrics_;
  double frontend_s_;
  int block_size_;
  const BlockHasher* hasher_;
  std::optional<RouterOptions> router_options_;
  std::vector<ReplicaLink> replicas_;
  std::unique_ptr<Pool> entry_, decode_;  // colocated or prefill replicas; decode replicas
  std::vector<uint32_t> replica_of_;      // with a router: each request's first replica
  std::vector<uint32_t> decode_of_;       // disaggregated: each request's decode replica
  std::vector<int64_t> outstanding_;      // per replica: routed, not yet done there
  // Each replica's waiting() as its last event left it (on_load_change), and their sum.
  std::vector<int64_t> waiting_seen_;
  int64_t waiting_at_replicas_ = 0;
  EventLoop* loop_ = nullptr;
  Autoscaler* autoscaler_ = nullptr;
  size_t next_ = 0, in_flight_ = 0, done_ = 0;
  std::deque<size_t> held_;
  std::vector<double> sent_s_;                   // when each request was sent
  std::vector<double> kv_sent_s_, kv_landed_s_;  // disaggregated: each request's transfer
  uint64_t transfers_ = 0;
  double transfer_bytes_ = 0, transfer_s_ = 0;
};

}  // namespace servesim
