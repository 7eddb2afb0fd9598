// The vLLM engine features a RunSpec switches on by their vLLM flags, parsed from the text users
// write (vLLM's own JSON for --speculative-config), before anything is looked up:
//  - speculative decoding: --speculative-config '{"method": "eagle3", "num_speculative_tokens": 3,
//    ...}' (vllm/config/speculative.py SpeculativeConfig), the acceptance from vLLM's synthetic
//    rejection sampler keys or servesim's --spec-acceptance-rate;
//  - KV offload to CPU memory: --kv-offloading-size GIB and --kv-offloading-backend
//    (vllm/config/cache.py), or the connector spelled out, --kv-transfer-config '{"kv_connector":
//    "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config":
//    {"cpu_bytes_to_use": ...}}' (vllm/config/kv_transfer.py KVTransferConfig), as
//    VllmConfig._post_init_kv_transfer_config expands the short form.
// Promises: every parser throws Error naming the flag and the key (e.g.
// "speculative-config.num_speculative_tokens") on bad input, and never anything else.
#pragma once

#include <string>
#include <vector>

#include "models/drafter.hpp"
#include "sim/simulation.hpp"

namespace servesim {

struct SpeculativeOptions {
  SpecMethod method = SpecMethod::kNone;
  int num_speculative_tokens = 0;
  std::string model;  // the draft model (draft_model) as given, "" for the others
  int draft_tp = 0;   // draft_tensor_parallel_size (0: not given; the caller checks it)
  // Unconditional acceptance rate of each draft position (size k, non-increasing, in [0, 1]).
  std::vector<double> acceptance_rates;
  bool enabled() const { return method != SpecMethod::kNone; }
};

// vLLM's --speculative-config JSON TEXT ("" = off) and servesim's --spec-acceptance-rate
// ACCEPTANCE ("" = none: the JSON's synthetic_acceptance_rates or synthetic_acceptance_length
// must say it): one rate A in [0, 1] accepts each draft with probability A given the ones before
// it (position i's unconditional rate is A^i); a comma-separated list is the per-position rates
// vLLM logs ("Per-position acceptance rate"), one per draft.
// The keys taken: method, num_speculative_tokens, model, draft_tensor_parallel_size (1, or the
// target's TP, checked by the caller), rejection_sample_method ("synthetic" with one of
// synthetic_acceptance_rates or synthetic_acceptance_length: vLLM's _acceptance_length_to_rates,
// positions accepted in full up to L - 1, one fractional position, then none), and the keys that
// change nothing servesim models (prompt_lookup_min, prompt_lookup_max, draft_sample_method,
// disable_padded_drafter_batch, quantization, revision, max_model_len, enforce_eager,
// attention_backend); any other key is an error, as vLLM's config would refuse it.
SpeculativeOptions parse_speculative_config(const std::string& text, const std::string& acceptance);

// The CPU tier the flags ask for: --kv-offloading-size SIZE_GIB (0: not given) with
// --kv-offloading-backend BACKEND ("" = native; lmcache), or --kv-transfer-config JSON
// (OffloadingConnector: cpu_bytes_to_use, block_size, eviction_policy lru, store_threshold 0 or
// 1; LMCacheConnectorV1: lmcache.max_local_cpu_size GiB per rank (5), lmcache.chunk_size (256),
// lmcache.local_cpu true). Off when none is given. The link's flags are the caller's.
KvOffloadOptions parse_kv_offload(double size_gib, const std::string& backend,
                                  const std::string& transfer_config);

}  // namespace servesim
