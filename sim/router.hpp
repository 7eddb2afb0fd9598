// Router: picks the replica of a fleet that serves each request, from what it sees of the
// replicas' live state, as a serving gateway does (llm-d's endpoint picker, Vidur's global
// scheduler, BLIS's routing policies):
//  - round-robin: replicas in turn;
//  - least-requests: the fewest outstanding requests (routed there and not yet finished);
//  - least-kv: the lowest KV cache usage;
//  - prefix-aware: llm-d's scorers, weighted and summed: the share of the prompt's full blocks
//    the replica's prefix cache holds (precise prefix-cache scorer), the queue scorer (1 for the
//    shortest waiting queue, 0 for the longest, linear between) and the KV-utilisation scorer
//    (1 - usage), with llm-d's inference-scheduling weights 3, 2 and 2 by default;
//  - lora-affinity: the Gateway API inference extension's LoRA-affinity scorer (1 when the
//    request's adapter is among the replica's running or waiting requests' adapters, vLLM's
//    lora_requests_info; 0.8 when the replica has fewer adapters than max_loras and so room for
//    one more; 0 otherwise) with the queue and KV-utilisation scorers, weighted 2:2:2 (requests
//    without an adapter: queue and KV only);
//  - session: sticky by session: a turn of a conversation (a request whose answer continues its
//    prompt's last stream: multi_turn, or a trace's session ids) goes where the conversation's
//    first turn went; that first turn, and any request of no session (a Mooncake row names
//    blocks, not sessions), goes to the replica with the fewest outstanding requests.
// Load signals (outstanding, waiting, KV usage) can be stale: with a signal delay d > 0 the router
// sees a snapshot taken at the first decision at or after each multiple of d, deterministically.
// The prefix cache is asked live (KV events arrive within a step). Ties go to the first replica
// after the one chosen last, so an idle fleet is filled evenly and every run repeats exactly.
// Replicas an autoscaler has taken out (set_routable) are skipped by every policy.
// Cost per decision: O(1) for round-robin and a known session; O(replicas) for the others, plus
// for prefix-aware one index probe per prompt block some replica holds (or, asking each replica,
// O(replicas x cached blocks of the prompt)).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "traces/request.hpp"

namespace servesim {

enum class RouterKind {
  kRoundRobin,
  kLeastRequests,
  kLeastKv,
  kPrefixAware,
  kSession,
  kLoraAffinity
};

// Throws Error naming --router and the routers when NAME is none of them.
RouterKind parse_router(std::string_view name);
const char* router_name(RouterKind kind);
const char* router_names();  // "round-robin | least-requests | ..."

class RouterHook;

struct RouterOptions {
  RouterKind kind = RouterKind::kRoundRobin;
  double signal_delay_s = 0;  // staleness of the load signals, seconds
  // prefix-aware's scorer weights (llm-d inference-scheduling defaults); lora-affinity's.
  double prefix_weight = 3, queue_weight = 2, kv_weight = 2, lora_weight = 2;
  // prefix-aware: how it learns what each replica caches (the same answers either way). By
  // asking every replica's cache for the prompt's blocks, each block's hash computed once (the
  // default), or from an index of block hash -> replicas fed by their KV events (llm-d's precise
  // prefix-cache scorer and its kvblock index): one probe a block instead of one a replica and
  // block, but every cached block of shared content updates the index, which at 64 and 256
  // replicas cost more than the probes it saved (issue 27's figures).
  bool prefix_kv_index = false;
  // A scoring function chosen outside (null: the kind's); it outlives the router.
  RouterHook* hook = nullptr;
};

// What a replica's gateway-visible state is.
struct ReplicaLoad {
  int64_t outstanding = 0;  // routed and not yet finished or rejected
  int64_t waiting = 0;      // waiting to start at the replica
  double kv_usage = 0;      // KV blocks in use over usable blocks
};

// A router's scoring function chosen outside (servesim's Python module: a router written in
// Python): it scores every replica for a request from their loads as the router sees them
// (stale with a signal delay); the router picks the highest score, ties to the first after its
// last pick, replicas an autoscaler took out never.
class RouterHook {
 public:
  // SCORES[i]: replica i's score for request R, whose loads are LOADS.
  virtual void score(const RequestSpec& r, std::span<const ReplicaLoad> loads,
                     std::span<double> scores) = 0;

 protected:
  ~RouterHook() = default;
};

class Router {
 public:
  // The fleet as the router may query it.
  class Fleet {
   public:
    virtual size_t size() const = 0;
    virtual ReplicaLoad load(size_t replica) const = 0;
    // For every replica i, the leading full blocks of request R's prompt that its prefix cache
    // holds now, in OUT[i].
    virtual void cached_prompt_blocks(const RequestSpec& r, std::span<int64_t> out) const = 0;
    virtual int block_size() const = 0;
    // Request R's LoRA adapter on a replica: 1 when its running or waiting requests use it, 0.8
    // when it has room for one more adapter, 0 otherwise.
    virtual double lora_affinity(size_t /*replica*/, const RequestSpec& /*r*/) const { return 0; }
    // True when the fleet calls Router::load_changed(i) whenever replica i's load may have
    // changed: a live router then re-reads only those, and least-requests, least-kv and session
    // pick in O(log replicas). False (the default): every decision reads every replica's load.
    virtual bool tells_load_changes() const { return false; }

   protected:
    ~Fleet() = default;
  };

  // FLEET and WORKLOAD (for session keys) outlive the router.
  Router(const RouterOptions& options, const Fleet& fleet, const Workload& workload);
  // The replica for R, sent at NOW (non-decreasing across calls).
  size_t route(const RequestSpec& r, double now);
  const RouterOptions& options() const { return options_; }
  // An autoscaled fleet: a replica that is starting, draining or stopped gets no request (a
  // session pinned to it moves). REQUIRES: at least one replica stays routable.
  void set_routable(size_t replica, bool routable);
  // REPLICA's load may have changed (a fleet that tells_load_changes()).
  void load_changed(size_t replica) {
    if (pushed_ && !stale_[replica]) {
      stale_[replica] = 1;
      stale_list_.push_back(uint32_t(replica));
    }
  }

 private:
  void refresh(double now);
  size_t least(double (*key)(const ReplicaLoad&));
  size_t prefix_aware(const RequestSpec& r);
  size_t lora_affinity(const RequestSpec& r);
  size_t session(const RequestSpec& r);
  // The best of SCORES_ (highest), ties to the first after the last pick.
  size_t best_score();

  // The minimum of one key per replica and where it is, in O(log replicas) per change and query
  // (a segment tree: leaves padded with +inf).
  class MinTree {
   public:
    void assign(size_t n);
    void set(size_t i, double key);
    double min() const { return t_[1]; }
    // The first replica at or after FROM whose key is the minimum M; size() when none.
    size_t first_min_from(size_t from, double m) const;

   private:
    size_t find(size_t node, size_t lo, size_t hi, size_t from, double m) const;
    size_t n_ = 0, leaves_ = 1;
    std::vector<double> t_;
  };
  // The key a tree-backed router minimises for replica I (+inf when it is not routable).
  double tree_key(size_t i) const;
  // least-requests, least-kv and session's fewest-requests pick from the tree.
  size_t least_from_tree();

  RouterOptions options_;
  const Fleet& fleet_;
  const Workload& workload_;
  std::vector<ReplicaLoad> seen_;
  std::vector<double> scores_;
  std::vector<int64_t> cached_;  // prefix-aware: each replica's cached leading blocks
  double next_refresh_s_ = -1;
  size_t last_ = 0;
  std::vector<uint8_t> off_;  // per replica: 1 when not routable
  // A fleet that tells_load_changes(), live: the replicas whose seen_ may be out of date.
  bool pushed_ = false;
  std::vector<uint8_t> stale_;
  std::vector<uint32_t> stale_list_;
  bool use_tree_ = false;  // pushed_ and least-requests, least-kv or session, no hook
  MinTree tree_;
  size_t num_off_ = 0;
  std::unordered_map<uint64_t, uint32_t> sessions_;
};

}  // namespace servesim
