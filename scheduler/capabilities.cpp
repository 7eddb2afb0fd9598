#include "scheduler/capabilities.hpp"

#include <cassert>

#include "util/error.hpp"
#include "util/field_path.hpp"

namespace servesim {

namespace {

constexpr uint8_t bit(Policy p) {
  return uint8_t(1u << unsigned(p));
}
constexpr uint8_t kV1Only = bit(Policy::kVllmV1);

std::string replace_policy(std::string text, Policy p) {
  const std::string key = "{policy}";
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
    text.replace(at, key.size(), policy_name(p));
  }
  return text;
}

}  // namespace

const std::vector<Capability>& capabilities() {
  static const std::vector<Capability> rows = {
      {Feature::kPrefixCache, "prefix caching", field::kEnablePrefixCaching, kV1Only,
       "the prefix cache is modelled for vllm-v1 only, not {policy}"},
      {Feature::kSpeculativeDecoding, "speculative decoding", field::kSpeculativeConfig, kV1Only,
       "is modelled for vllm-v1 (vLLM V1's scheduler), not {policy}"},
      {Feature::kKvConnector, "CPU KV offload", field::kKvOffloadingSize, kV1Only,
       "vLLM's KV connectors are V1's: use {{scheduler.policy}} vllm-v1, not {policy}"},
      {Feature::kDisaggregatedPrefill, "disaggregated prefill", field::kScheduler, kV1Only,
       "disaggregated prefill is modelled for vllm-v1 (vLLM's KV connectors are V1's)"},
      {Feature::kLora, "LoRA", field::kEnableLora, kV1Only,
       "LoRA is modelled for vllm-v1, not {policy}"},
      {Feature::kSchedulingHooks, "scheduling hooks", field::kScheduler, kV1Only,
       "policies written outside servesim hook vllm-v1's scheduler, not {policy}"},
      {Feature::kV1SchedulerOptions, "V1 scheduler options", field::kSchedulingPolicy, kV1Only,
       "is a vLLM V1 scheduler option; {policy} is a V0 policy (use {{scheduler.policy}} "
       "vllm-v1)"},
      {Feature::kPipelineParallel, "pipeline parallelism", field::kPipelineParallelSize, kV1Only,
       "is modelled for vllm-v1 (V1's batch queue of one batch a stage), not {policy}: vLLM V0 "
       "ran a scheduler per stage (virtual engines)"},
      {Feature::kExpertParallel, "expert parallelism", field::kEnableExpertParallel, kV1Only,
       "is modelled for vllm-v1 on the v1 engine, not {policy}: vLLM's data-parallel ranks are "
       "V1 engine cores"},
      {Feature::kSlidingWindow, "sliding-window attention", field::kModel, kV1Only,
       "has sliding-window layers, whose KV blocks V1's hybrid KV cache manager frees as the "
       "window moves: modelled for vllm-v1 on the v1 engine, not {policy}"},
      {Feature::kLinearAttention, "linear attention", field::kModel, kV1Only,
       "has linear-attention layers, whose constant state V1's hybrid KV cache manager keeps in "
       "blocks of its own groups: modelled for vllm-v1 on the v1 engine, not {policy}"},
  };
  return rows;
}

const Capability& capability(Feature f) {
  const Capability& c = capabilities()[size_t(f)];
  assert(c.feature == f);
  return c;
}

bool supports(Policy p, Feature f) {
  return (capability(f).policies & bit(p)) != 0;
}

std::string refusal(Policy p, Feature f) {
  return replace_policy(capability(f).refusal, p);
}

void require(Policy p, Feature f, const char* field_path) {
  if (supports(p, f)) return;
  throw Error(field_path != nullptr ? field_path : capability(f).field_path, refusal(p, f));
}

int64_t min_num_gpu_blocks(Policy p) {
  return p == Policy::kVllmV1 ? 2 : 1;
}

}  // namespace servesim
