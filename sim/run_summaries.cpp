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

void add_prefix_cache(const PrefixCacheSummary& r, PrefixCacheSummary& p) {
  if (!r.enabled) return;
  p.enabled = true;
  p.queries += r.queries;
  p.hits += r.hits;
  p.preempted_queries += r.preempted_queries;
  p.preempted_hits += r.preempted_hits;
  p.evictions += r.evictions;
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

Stats kv_load_ms(const std::vector<RequestRecord>& requests) {
  std::vector<double> ms;
  for (const RequestRecord& r : requests) {
    if (r.kv_loaded_tokens > 0) ms.push_back(r.kv_load_s * 1e3);
  }
  return summarize(ms);
}

KvOffloadSummary kv_offload_summary(const Scheduler& scheduler, double link_busy_s,
                                    const std::vector<RequestRecord>& requests) {
  KvOffloadSummary k;
  const KvOffloadConnector* c = scheduler.kv_offload();
  if (c == nullptr) return k;
  k.enabled = true;
  const KvOffloadConfig& cfg = c->config();
  k.backend = cfg.backend;
  k.cpu_blocks = c->tier().capacity();
  k.block_tokens = int64_t(scheduler.config().block_size) * cfg.block_size_factor;
  k.counts = c->stats();
  k.evictions = c->tier().evictions();
  k.link_busy_s = link_busy_s;
  k.load_ms = kv_load_ms(requests);
  return k;
}

void add_kv_offload(const KvOffloadSummary& r, KvOffloadSummary& into) {
  if (!r.enabled) return;
  into.enabled = true;
  into.backend = r.backend;
  into.block_tokens = r.block_tokens;
  into.cpu_blocks += r.cpu_blocks;
  into.cpu_bytes += r.cpu_bytes;
  into.counts.add(r.counts);
  into.evictions += r.evictions;
  into.link_busy_s += r.link_busy_s;
}

void count_lora_requests(const std::vector<RequestRecord>& requests, LoraSummary& l) {
  std::vector<uint16_t> seen;
  for (const RequestRecord& r : requests) {
    if (r.lora == 0) continue;
    seen.push_back(r.lora);
  }
  l.requests = int64_t(seen.size());
  std::sort(seen.begin(), seen.end());
  l.adapters = std::unique(seen.begin(), seen.end()) - seen.begin();
}

LoraSummary lora_summary(const SimConfig& c, const Host& host,
                         const std::vector<RequestRecord>& requests) {
  LoraSummary l;
  if (!c.lora.enabled) return l;
  l.enabled = true;
  l.max_loras = c.lora.max_loras;
  l.max_cpu_loras = c.lora.cpu_loras();
  l.rank = c.lora.adapter_rank();
  count_lora_requests(requests, l);
  l.skips = host.scheduler().lora_skips();
  if (const LoraManager* m = host.lora()) {
    l.disk_loads = m->stats().disk_loads;
    l.activations = m->stats().activations;
    l.load_s = m->stats().load_s;
  }
  l.kernel_s = host.lora_kernel_s();
  return l;
}

void add_lora(const LoraSummary& r, LoraSummary& into) {
  if (!r.enabled) return;
  into.enabled = true;
  into.max_loras = r.max_loras;
  into.max_cpu_loras = r.max_cpu_loras;
  into.rank = r.rank;
  into.skips += r.skips;
  into.disk_loads += r.disk_loads;
  into.activations += r.activations;
  into.load_s += r.load_s;
  into.kernel_s += r.kernel_s;
}

void summarize_features(const SimConfig& c, const Scheduler& scheduler, const Host& host,
                        const std::vector<RequestRecord>& requests, RunSummary& s) {
  s.prefix_cache = prefix_cache_summary(scheduler, requests);
  s.spec_decode = spec_decode_summary(scheduler);
  s.kv_offload = kv_offload_summary(scheduler, host.host_link_busy_s(), requests);
  // LMCache's per-rank size is each TP rank's.
  s.kv_offload.cpu_bytes = c.offload.cpu_bytes * (c.offload.per_rank ? c.tp : 1);
  s.lora = lora_summary(c, host, requests);
}

void add_features(const RunSummary& replica, RunSummary& into) {
  add_prefix_cache(replica.prefix_cache, into.prefix_cache);
  add_spec_decode(replica.spec_decode, into.spec_decode);
  add_kv_offload(replica.kv_offload, into.kv_offload);
  add_lora(replica.lora, into.lora);
}

void finish_features(const std::vector<RequestRecord>& requests, RunSummary& into) {
  for (const RequestRecord& r : requests)
    into.prefix_cache.cached_prompt_tokens += std::max(r.cached_tokens, 0);
  if (into.kv_offload.enabled) into.kv_offload.load_ms = kv_load_ms(requests);
  if (into.lora.enabled) count_lora_requests(requests, into.lora);
}

}  // namespace servesim
