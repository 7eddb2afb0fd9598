// Capabilities: which scheduling policy supports which engine feature, in one table (issue 45).
// Every "modelled for vllm-v1 only" rule outside the schedulers consults it here, so a feature
// that a policy gains changes one row, not a branch in sim/ and one in analysis/.
//
// Each row is what vLLM itself runs it on (vLLM 0.15.1): the prefix cache, speculative decoding,
// the KV connectors (CPU offload, disaggregated prefill), LoRA's per-step adapter slots and V1's
// scheduler options are vllm/v1/core/sched/scheduler.py's and its KV cache manager's; V0's
// policies are transcribed without them (vLLM V0's prefix caching and speculative decoding were
// not carried over, scheduler/vllm_revision.hpp).
// The engine's own rules (async scheduling, CUDA graphs, its memory profile) are the engine's:
// models/engine.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/policy.hpp"

namespace servesim {

enum class Feature : uint8_t {
  kPrefixCache,           // automatic prefix caching
  kSpeculativeDecoding,   // a drafter's tokens verified in the step
  kKvConnector,           // CPU KV offload through a KV connector
  kDisaggregatedPrefill,  // a prefill pool handing KV to a decode pool
  kLora,                  // LoRA adapters in per-step slots
  kSchedulingHooks,       // policies written outside servesim (Python hooks)
  kV1SchedulerOptions,    // waiting order, long-prefill threshold, full-ISL reservation
  kPipelineParallel,      // several batches in flight through pipeline stages (V1's batch queue)
  kExpertParallel,        // data-parallel ranks sharing a MoE model's experts
  kSlidingWindow,         // a sliding-window group of KV blocks beside the full-attention one
  kLinearAttention,       // a hybrid model's state blocks beside the full-attention group
};

struct Capability {
  Feature feature;
  const char* name;        // "speculative decoding"
  const char* field_path;  // the setting that asks for it (util/field_path.hpp)
  uint8_t policies;        // bit (1 << Policy) set where the policy supports it
  // The refusal's text: "{policy}" stands for the policy's name; {{path}} refers to a setting.
  const char* refusal;
};

// Every row, in Feature's order.
const std::vector<Capability>& capabilities();
const Capability& capability(Feature f);

bool supports(Policy p, Feature f);
// F's refusal for P (the row's text, the policy named).
std::string refusal(Policy p, Feature f);
// Error naming FIELD_PATH (F's own setting when null) unless P supports F.
void require(Policy p, Feature f, const char* field_path = nullptr);

// The fewest KV blocks a policy's KV cache manager can run with: V1's block pool keeps block 0
// as its null block (vllm/v1/core/block_pool.py, BlockPool.__init__), so it needs 2.
int64_t min_num_gpu_blocks(Policy p);

}  // namespace servesim
