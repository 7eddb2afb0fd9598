#include "sim/router.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "util/error.hpp"

namespace servesim {

namespace {
struct Named {
  RouterKind kind;
  const char* name;
};
constexpr Named kRouters[] = {
    {RouterKind::kRoundRobin, "round-robin"}, {RouterKind::kLeastRequests, "least-requests"},
    {RouterKind::kLeastKv, "least-kv"},       {RouterKind::kPrefixAware, "prefix-aware"},
    {RouterKind::kSession, "session"},        {RouterKind::kLoraAffinity, "lora-affinity"}};
}  // namespace

const char* router_names() {
  return "round-robin | least-requests | least-kv | prefix-aware | session | lora-affinity";
}

RouterKind parse_router(std::string_view name) {
  for (const Named& r : kRouters) {
    if (name == r.name) return r.kind;
  }
  throw Error(field::kRouter, "'" + std::string(name) + "': expected " + router_names());
}

const char* router_name(RouterKind kind) {
  for (const Named& r : kRouters) {
    if (kind == r.kind) return r.name;
  }
  return "?";
}

void Router::MinTree::assign(size_t n) {
  n_ = n;
  leaves_ = 1;
  while (leaves_ < n)
    leaves_ *= 2;
  t_.assign(2 * leaves_, INFINITY);
}

void Router::MinTree::set(size_t i, double key) {
  size_t k = i + leaves_;
  t_[k] = key;
  for (k /= 2; k >= 1; k /= 2)
    t_[k] = std::min(t_[2 * k], t_[2 * k + 1]);
}

size_t Router::MinTree::find(size_t node, size_t lo, size_t hi, size_t from, double m) const {
  if (hi <= from || lo >= n_ || t_[node] > m) return n_;
  if (hi - lo == 1) return lo;
  const size_t mid = lo + (hi - lo) / 2;
  const size_t left = find(2 * node, lo, mid, from, m);
  return left < n_ ? left : find(2 * node + 1, mid, hi, from, m);
}

size_t Router::MinTree::first_min_from(size_t from, double m) const {
  return find(1, 0, leaves_, from, m);
}

Router::Router(const RouterOptions& options, const Fleet& fleet, const Workload& workload)
    : options_(options), fleet_(fleet), workload_(workload) {
  const size_t n = fleet.size();
  seen_.resize(n);
  scores_.resize(n);
  if (options.kind == RouterKind::kPrefixAware) cached_.resize(n);
  off_.assign(n, 0);
  last_ = n - 1;  // the first pick among equals is replica 0
  pushed_ = fleet.tells_load_changes() && options.signal_delay_s <= 0;
  stale_.assign(n, 0);
  use_tree_ = pushed_ && options.hook == nullptr &&
              (options.kind == RouterKind::kLeastRequests || options.kind == RouterKind::kLeastKv ||
               options.kind == RouterKind::kSession);
  if (use_tree_) tree_.assign(n);
  // Every replica unread.
  for (size_t i = 0; i < n; ++i)
    load_changed(i);
}

double Router::tree_key(size_t i) const {
  if (off_[i]) return INFINITY;
  return options_.kind == RouterKind::kLeastKv ? seen_[i].kv_usage : double(seen_[i].outstanding);
}

size_t Router::least_from_tree() {
  // best_score()'s rule: the lowest key, ties to the first after the last pick, cyclically.
  const double m = tree_.min();
  const size_t start = (last_ + 1) % seen_.size();
  const size_t at = tree_.first_min_from(start, m);
  return at < seen_.size() ? at : tree_.first_min_from(0, m);
}

void Router::set_routable(size_t replica, bool routable) {
  const uint8_t off = routable ? 0 : 1;
  if (off_[replica] == off) return;
  off_[replica] = off;
  num_off_ += off ? 1 : size_t(-1);
  if (use_tree_) tree_.set(replica, tree_key(replica));
}

void Router::refresh(double now) {
  if (pushed_) {
    for (const uint32_t i : stale_list_) {
      seen_[i] = fleet_.load(i);
      stale_[i] = 0;
      if (use_tree_) tree_.set(i, tree_key(i));
    }
    stale_list_.clear();
#ifndef NDEBUG
    for (size_t i = 0; i < seen_.size(); ++i) {
      const ReplicaLoad l = fleet_.load(i);
      assert(l.outstanding == seen_[i].outstanding && l.waiting == seen_[i].waiting &&
             l.kv_usage == seen_[i].kv_usage);  // the fleet told every change
    }
#endif
    return;
  }
  if (options_.signal_delay_s > 0 && now < next_refresh_s_) return;
  for (size_t i = 0; i < seen_.size(); ++i)
    seen_[i] = fleet_.load(i);
  if (options_.signal_delay_s > 0) {
    next_refresh_s_ = (std::floor(now / options_.signal_delay_s) + 1) * options_.signal_delay_s;
  }
}

size_t Router::best_score() {
  const size_t n = scores_.size();
  if (num_off_ > 0) {
    for (size_t i = 0; i < n; ++i)
      if (off_[i]) scores_[i] = -INFINITY;
  }
  size_t best = (last_ + 1) % n;
  for (size_t k = 0; off_[best] && k < n; ++k)
    best = (best + 1) % n;
  // From the one after the last pick, cyclically, the first of the highest: the replicas after
  // BEST, then those before it (two runs instead of a division per replica).
  const double* s = scores_.data();
  for (size_t i = best + 1; i < n; ++i)
    if (s[i] > s[best]) best = i;
  const size_t start = (last_ + 1) % n;
  for (size_t i = 0; i < start; ++i)
    if (s[i] > s[best]) best = i;
  return best;
}

size_t Router::least(double (*key)(const ReplicaLoad&)) {
  if (use_tree_) return least_from_tree();
  for (size_t i = 0; i < seen_.size(); ++i)
    scores_[i] = -key(seen_[i]);
  return best_score();
}

size_t Router::prefix_aware(const RequestSpec& r) {
  int64_t qmin = INT64_MAX, qmax = INT64_MIN;
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (off_[i]) continue;
    qmin = std::min(qmin, seen_[i].waiting);
    qmax = std::max(qmax, seen_[i].waiting);
  }
  const int64_t blocks = r.input_tokens / fleet_.block_size();
  if (blocks > 0) fleet_.cached_prompt_blocks(r, cached_);
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (off_[i]) continue;  // best_score() sets its score
    const double prefix = blocks > 0 ? double(cached_[i]) / double(blocks) : 0.0;
    // llm-d's queue scorer: (max - q) / (max - min), 1 for all when the queues are equal.
    const double queue = qmax > qmin ? double(qmax - seen_[i].waiting) / double(qmax - qmin) : 1.0;
    scores_[i] = options_.prefix_weight * prefix + options_.queue_weight * queue +
                 options_.kv_weight * (1.0 - seen_[i].kv_usage);
  }
  return best_score();
}

size_t Router::lora_affinity(const RequestSpec& r) {
  int64_t qmin = INT64_MAX, qmax = INT64_MIN;
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (off_[i]) continue;
    qmin = std::min(qmin, seen_[i].waiting);
    qmax = std::max(qmax, seen_[i].waiting);
  }
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (off_[i]) continue;
    const double queue = qmax > qmin ? double(qmax - seen_[i].waiting) / double(qmax - qmin) : 1.0;
    const double lora = r.lora > 0 ? fleet_.lora_affinity(i, r) : 0.0;
    scores_[i] = options_.lora_weight * lora + options_.queue_weight * queue +
                 options_.kv_weight * (1.0 - seen_[i].kv_usage);
  }
  return best_score();
}

size_t Router::session(const RequestSpec& r) {
  auto fewest = [](const ReplicaLoad& l) { return double(l.outstanding); };
  if (r.num_spans == 0 || !r.output_continues) return least(fewest);
  const uint64_t key = workload_.spans[r.first_span + r.num_spans - 1].stream;
  const auto it = sessions_.find(key);
  if (it != sessions_.end() && !off_[it->second]) return it->second;
  const size_t chosen = least(fewest);
  sessions_[key] = uint32_t(chosen);  // a new conversation, or one whose replica went away
  return chosen;
}

size_t Router::route(const RequestSpec& r, double now) {
  const size_t n = seen_.size();
  size_t chosen = 0;
  if (options_.kind == RouterKind::kRoundRobin && options_.hook == nullptr) {
    chosen = (last_ + 1) % n;
    for (size_t k = 0; num_off_ > 0 && off_[chosen] && k < n; ++k)
      chosen = (chosen + 1) % n;
  } else if (options_.hook != nullptr) {
    refresh(now);
    options_.hook->score(r, seen_, scores_);
    chosen = best_score();
  } else {
    refresh(now);
    switch (options_.kind) {
      case RouterKind::kLeastRequests:
        chosen = least([](const ReplicaLoad& l) { return double(l.outstanding); });
        break;
      case RouterKind::kLeastKv:
        chosen = least([](const ReplicaLoad& l) { return l.kv_usage; });
        break;
      case RouterKind::kPrefixAware:
        chosen = prefix_aware(r);
        break;
      case RouterKind::kLoraAffinity:
        chosen = lora_affinity(r);
        break;
      default:
        chosen = session(r);
        break;
    }
  }
  last_ = chosen;
  return chosen;
}

}  // namespace servesim
