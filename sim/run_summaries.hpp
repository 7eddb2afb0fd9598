// Parts of a run's summary read off its collector and scheduler, for simulate() and
// simulate_fleet() (internal to sim/).
#pragma once

#include <vector>

#include "scheduler/scheduler.hpp"
#include "sim/host.hpp"
#include "sim/metrics.hpp"
#include "sim/simulation.hpp"

namespace servesim {

// The inter-token gaps' histogram into RESULT (bucket upper bounds in ms).
void keep_histogram(const MetricsCollector& metrics, RunResult& result);

// The engine features' sections of one replica's summary S (prefix cache, speculative decoding,
// KV offload with its CPU tier's size, LoRA), from its configuration C, SCHEDULER, HOST and the
// REQUESTS it served: the one place simulate() and simulate_fleet() take them from.
void summarize_features(const SimConfig& c, const Scheduler& scheduler, const Host& host,
                        const std::vector<RequestRecord>& requests, RunSummary& s);
// A fleet's: replica summary REPLICA's feature sections summed into the fleet's INTO; then
// finish_features counts what is the fleet's own over its REQUESTS (cached prompt tokens, KV load
// times, requests with an adapter).
void add_features(const RunSummary& replica, RunSummary& into);
void finish_features(const std::vector<RequestRecord>& requests, RunSummary& into);

// SCHEDULER's prefix-cache counters, with the prompt tokens REQUESTS found cached; disabled when
// the scheduler has no prefix cache.
PrefixCacheSummary prefix_cache_summary(const Scheduler& scheduler,
                                        const std::vector<RequestRecord>& requests);

// SCHEDULER's CPU KV tier (disabled without one), its host links' busy time LINK_BUSY_S and the
// load times of REQUESTS.
KvOffloadSummary kv_offload_summary(const Scheduler& scheduler, double link_busy_s,
                                    const std::vector<RequestRecord>& requests);
// A fleet's: every replica's counters summed into INTO (the load times are the fleet's records').
// The requests' KV load times, ms, over those that loaded.
Stats kv_load_ms(const std::vector<RequestRecord>& requests);
void add_kv_offload(const KvOffloadSummary& replica, KvOffloadSummary& into);

// The LoRA adapters of REQUESTS served by HOST (disabled without --enable-lora in C).
LoraSummary lora_summary(const SimConfig& c, const Host& host,
                         const std::vector<RequestRecord>& requests);
// The requests of REQUESTS with an adapter, and their distinct adapters, into L.
void count_lora_requests(const std::vector<RequestRecord>& requests, LoraSummary& l);
// A fleet's: every replica's counters summed into INTO (the requests' counts are the fleet's).
void add_lora(const LoraSummary& replica, LoraSummary& into);

// A fleet's: every replica's counters summed into INTO (cached_prompt_tokens is counted over the
// fleet's records).
void add_prefix_cache(const PrefixCacheSummary& replica, PrefixCacheSummary& into);

// SCHEDULER's speculative-decoding counters (disabled without them).
SpecDecodeSummary spec_decode_summary(const Scheduler& scheduler);
// A fleet's: every replica's counters summed into INTO.
void add_spec_decode(const SpecDecodeSummary& replica, SpecDecodeSummary& into);

}  // namespace servesim
