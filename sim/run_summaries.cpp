#include "sim/run_summaries.hpp"

#include <algorithm>

#include "scheduler/kv_cache_manager.hpp"

namespace servesim {

void keep_histogram(const MetricsCollector& metrics, RunResult& result) {
  metrics.itl_s().for_each_bucket(
      [&](double upper_s, uint64_t n) { result.itl_histogram_ms.emplace_back(upper_s * 1e3, n); });
}

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

SpecDecodeSummary spec_decode_summary(const Scheduler& scheduler) {
  SpecDecodeSummary d;
  const SpecDecodeStats* stats = scheduler.spec_decode_stats();
  if (stats == nullptr) return d;
  d.enabled = true;
  d.method = scheduler.config().spec.method;
  d.num_speculative_tokens = scheduler.config().spec.num_speculative_tokens;
  d.counts = *stats;
  return d;
}

void add_spec_decode(const SpecDecodeSummary& replica, SpecDecodeSummary& into) {
  if (!replica.enabled) return;
  into.enabled = true;
  into.method = replica.method;
  into.num_speculative_tokens = replica.num_speculative_tokens;
  into.counts.add(replica.counts);
}

}  // namespace servesim
