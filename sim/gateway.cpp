#include "sim/gateway.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "scheduler/kv_cache_manager.hpp"
#include "scheduler/policy.hpp"
#include "sim/prefix_index.hpp"
#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim {

// The replicas of one role, as its router sees them.
class Gateway::Pool final : public Router::Fleet {
 public:
  Pool(Gateway& a, std::vector<uint32_t> members) : a_(a), members_(std::move(members)) {
    member_of_.assign(a_.replicas_.size(), -1);
    for (size_t i = 0; i < members_.size(); ++i)
      member_of_[members_[i]] = int32_t(i);
  }
  // Replica REPLICA's (fleet index) load may have changed: its router re-reads it.
  void load_changed(uint32_t replica) {
    if (router_ && member_of_[replica] >= 0) router_->load_changed(size_t(member_of_[replica]));
  }
  bool tells_load_changes() const override { return true; }
  void make_router(const RouterOptions& o) {
    router_.emplace(o, *this, a_.w_);
    if (o.kind != RouterKind::kPrefixAware || !o.prefix_kv_index || a_.hasher_ == nullptr) return;
    // The members' KV events feed one index (a member without a prefix cache reports nothing).
    index_.emplace(members_.size());
    for (size_t i = 0; i < members_.size(); ++i)
      a_.replicas_[members_[i]].host->scheduler().set_kv_event_sink(index_->sink(i));
  }
  // The replica (fleet index) for request I at NOW.
  uint32_t route(size_t i, double now) {
    return members_[router_ ? router_->route(a_.w_[i], now) : 0];
  }
  bool empty() const { return members_.empty(); }
  // Colocated pools only (members are the fleet's indices in order).
  void set_routable(uint32_t replica, bool routable) {
    if (router_) router_->set_routable(replica, routable);
  }

  size_t size() const override { return members_.size(); }
  ReplicaLoad load(size_t i) const override { return a_.load(members_[i]); }
  void cached_prompt_blocks(const RequestSpec& r, std::span<int64_t> out) const override {
    // R is routed before any replica of the pool has seen it, so only the blocks other requests
    // may hold can be cached (a block holding a token of R's own hashes as nobody else's).
    const BlockHasher& hasher = *a_.hasher_;
    const int64_t max_blocks =
        std::min<int64_t>(r.input_tokens / a_.block_size_, hasher.shared_blocks(r.id));
    if (index_) {
      index_->leading_blocks(hasher, r.id, max_blocks, out);
      return;
    }
    // Every replica asked, each block's hash computed once, as far as some replica holds it.
    hashes_.clear();
    for (size_t i = 0; i < members_.size(); ++i) {
      const KvCacheManager* kv = a_.replicas_[members_[i]].host->scheduler().kv_cache_manager();
      int64_t k = 0;
      for (; kv != nullptr && k < max_blocks; ++k) {
        if (size_t(k) == hashes_.size())
          hashes_.push_back(hasher.block_hash(r.id, k, k > 0 ? hashes_.back() : 0));
        if (!kv->holds(hashes_[size_t(k)])) break;
      }
      out[i] = k;
    }
  }
  int block_size() const override { return a_.block_size_; }
  double lora_affinity(size_t i, const RequestSpec& r) const override {
    const Scheduler& s = a_.replicas_[members_[i]].host->scheduler();
    if (s.has_lora(r.lora)) return 1.0;
    return s.num_loras() < s.config().max_loras ? 0.8 : 0.0;
  }

 private:
  Gateway& a_;
  std::vector<uint32_t> members_;
  std::vector<int32_t> member_of_;  // by fleet index: its index in members_, -1 when not one
  std::optional<Router> router_;
  std::optional<PrefixIndex> index_;      // prefix-aware's, unless it asks each replica
  mutable std::vector<uint64_t> hashes_;  // asking each replica: the prompt's block hashes
};

Gateway::Gateway(const Workload& w, const SimulateOptions& o, MetricsCollector& metrics,
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

Gateway::~Gateway() = default;

ReplicaLoad Gateway::load(uint32_t r) const {
  const Scheduler& s = replicas_[r].host->scheduler();
  return {outstanding_[r], int64_t(s.num_waiting()),
          double(s.used_blocks()) / double(std::max<int64_t>(1, s.usable_blocks()))};
}

void Gateway::set_routable(uint32_t replica, bool routable) {
  entry_->set_routable(replica, routable);
}

void Gateway::start(EventLoop& loop, std::vector<ReplicaLink> replicas) {
  replicas_ = std::move(replicas);
  outstanding_.assign(replicas_.size(), 0);
  waiting_at_replicas_ = 0;
  waiting_seen_.assign(replicas_.size(), 0);
  std::vector<uint32_t> entry, decode;
  for (uint32_t i = 0; i < replicas_.size(); ++i)
    (replicas_[i].role == ReplicaRole::kDecode ? decode : entry).push_back(i);
  entry_ = std::make_unique<Pool>(*this, std::move(entry));
  decode_ = std::make_unique<Pool>(*this, std::move(decode));
  if (router_options_) {
    entry_->make_router(*router_options_);
    decode_->make_router(*router_options_);
  }
  if (!decode_->empty()) {
    decode_of_.assign(w_.size(), kNone);
    kv_sent_s_.assign(w_.size(), NAN);
    kv_landed_s_.assign(w_.size(), NAN);
  }
  loop_ = &loop;
  if (!w_.empty()) loop.schedule(w_[0].arrival_s, EventLoop::kArrival, this, kNext);
}

void Gateway::handle(EventLoop& loop, uint32_t tag) {
  if (tag >= kLanded) {  // a prompt's KV reached its decode replica
    const size_t i = tag - kLanded;
    replicas_[decode_of_[i]].host->arrive(w_[i], loop.now());
    return;
  }
  if (tag != kNext) {  // request tag - 1 reaches its first engine
    host_of(tag - 1).arrive(w_[tag - 1], sent_s_[tag - 1]);
    return;
  }
  if (limited() && in_flight_ >= size_t(options_.max_concurrency)) {
    held_.push_back(next_);
  } else {
    send(next_);
  }
  const size_t waiting = held_.size() + size_t(waiting_at_replicas_);
#ifndef NDEBUG
  size_t scanned = 0;
  for (const ReplicaLink& r : replicas_)
    scanned += r.host->waiting();
  assert(scanned == size_t(waiting_at_replicas_));
#endif
  metrics_.on_offered(loop.now(), waiting, next_ + 1 - done_);
  if (++next_ < w_.size()) {
    loop.schedule(w_[next_].arrival_s, EventLoop::kArrival, this, kNext);
  } else if (options_.stop_when_overloaded && metrics_.overload_certain(w_.size())) {
    loop.stop();  // the verdict is known: the tails of the queued requests would not change it
  }
}

void Gateway::on_prefill_done(uint32_t id) {
  --outstanding_[replica_of_[id]];
  on_load_change(replica_of_[id]);
  const double now = loop_->now();
  const uint32_t d = decode_->route(id, now);
  decode_of_[id] = d;
  ++outstanding_[d];
  on_load_change(d);
  // Every GPU of the prefill instance sends its shard of the prompt's KV over its own link.
  const ReplicaLink& p = replicas_[replica_of_[id]];
  const double bytes = p.kv_bytes_per_token * w_[id].input_tokens;
  const double seconds = p.link_latency_s + bytes / p.link_bytes_per_s;
  ++transfers_;
  transfer_bytes_ += bytes;
  transfer_s_ += seconds;
  kv_sent_s_[id] = now;
  kv_landed_s_[id] = now + seconds;
  loop_->schedule(now + seconds, EventLoop::kArrival, this, kLanded + id);
}

void Gateway::on_request_done(uint32_t id) {
  if (!replica_of_.empty()) {
    const bool decoded = !decode_of_.empty() && decode_of_[id] != kNone;
    const uint32_t r = decoded ? decode_of_[id] : replica_of_[id];
    on_load_change(r);
    if (--outstanding_[r] == 0 && autoscaler_ != nullptr) autoscaler_->on_idle(r, loop_->now());
  }
  ++done_;
  if (options_.progress && done_ % kProgressEvery == 0) options_.progress(done_, w_.size());
  if (!limited()) return;
  --in_flight_;
  if (held_.empty() || in_flight_ >= size_t(options_.max_concurrency)) return;
  const size_t i = held_.front();
  held_.pop_front();
  send(i);
}

void Gateway::on_load_change(uint32_t replica) {
  // The requests waiting at the replicas, summed without asking each at every arrival.
  const int64_t w = int64_t(replicas_[replica].host->waiting());
  waiting_at_replicas_ += w - waiting_seen_[replica];
  waiting_seen_[replica] = w;
  entry_->load_changed(replica);
  decode_->load_changed(replica);
}

void Gateway::send(size_t i) {
  if (limited()) ++in_flight_;
  const double now = loop_->now();
  if (!replica_of_.empty()) {
    const uint32_t r = entry_->route(i, now);
    replica_of_[i] = r;
    ++outstanding_[r];
    entry_->load_changed(r);
  }
  if (frontend_s_ <= 0) {
    host_of(i).arrive(w_[i], now);
    return;
  }
  sent_s_[i] = now;
  loop_->schedule(now + frontend_s_, EventLoop::kArrival, this, uint32_t(i + 1));
}

}  // namespace servesim
