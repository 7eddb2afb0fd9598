// Speculative decoding as vLLM V1's scheduler sees it (--speculative-config; vllm/config/
// speculative.py SpeculativeConfig and vllm/v1/core/sched/scheduler.py at the revision of
// scheduler/vllm_revision.hpp): after a step that samples, the drafter proposes k tokens
// (request.spec_token_ids); the next step schedules them with the request's token (1 + k
// tokens, budget counted), the target verifies all k + 1 in one forward pass, and the
// rejection sampler keeps the longest accepted prefix of the drafts plus one token (1 .. k + 1
// tokens); the rejected drafts' computed tokens are rolled back (num_computed_tokens -=
// num_rejected) and their KV slots stay with the request, to be overwritten.
// servesim has no token ids: how many drafts the sampler accepts is drawn, per verification, from
// unconditional per-position rates r_1 >= ... >= r_k (vLLM's synthetic rejection sampler,
// rejection_sample_method "synthetic" with synthetic_acceptance_rates, and the per-position
// acceptance rates vLLM's SpecDecodingLogging reports): P(at least i accepted) = r_i.
// Promises: the draws depend only on (seed, request, tokens generated before the verification),
// not on the batch or the clock: a policy comparison sees the same acceptance for each request.
#pragma once

#include <array>
#include <cstdint>

#include "models/drafter.hpp"
#include "util/hash.hpp"

namespace servesim {

// The most drafts per step servesim takes (vLLM sets no bound; EAGLE trees and suffix decoding
// stay far below it).
inline constexpr int kMaxSpecTokens = 16;

struct SpecDecodeConfig {
  SpecMethod method = SpecMethod::kNone;
  int num_speculative_tokens = 0;  // k
  // Unconditional acceptance rate of draft position i (0-based), non-increasing, in [0, 1].
  std::array<double, kMaxSpecTokens> acceptance_rates{};
  uint64_t seed = 0;

  bool enabled() const { return method != SpecMethod::kNone && num_speculative_tokens > 0; }
  // vLLM's num_lookahead_tokens: KV slots allocated past the scheduled tokens for the drafter's
  // own proposals: k for the EAGLE family (use_eagle(): eagle, eagle3, mtp) and for a draft
  // model; 0 for n-gram, which proposes on the CPU from the request's tokens.
  int lookahead() const {
    return method == SpecMethod::kNgram || method == SpecMethod::kNone ? 0 : num_speculative_tokens;
  }
  // The drafts a verification of DRAFTS tokens accepts, drawn as described above for request ID
  // whose GENERATED tokens precede it.
  int accepted(uint32_t id, int32_t generated, int drafts) const {
    const uint64_t h = hash_combine(hash_combine(seed, id), uint64_t(uint32_t(generated)));
    const double u = double(h >> 11) * 0x1.0p-53;  // uniform in [0, 1)
    int a = 0;
    while (a < drafts && u < acceptance_rates[size_t(a)])
      ++a;
    return a;
  }
};

// vLLM's SpecDecodingStats (vllm/v1/spec_decode/metrics.py), summed over a run: verifications
// (num_drafts: requests that had drafts scheduled and produced output), drafts verified,
// drafts accepted, and accepted drafts per position.
struct SpecDecodeStats {
  int64_t num_drafts = 0, num_draft_tokens = 0, num_accepted_tokens = 0;
  std::array<int64_t, kMaxSpecTokens> accepted_per_pos{};

  void add(const SpecDecodeStats& o) {
    num_drafts += o.num_drafts;
    num_draft_tokens += o.num_draft_tokens;
    num_accepted_tokens += o.num_accepted_tokens;
    for (size_t i = 0; i < accepted_per_pos.size(); ++i)
      accepted_per_pos[i] += o.accepted_per_pos[i];
  }
};

}  // namespace servesim
