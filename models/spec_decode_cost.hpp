// SpeculativeCostModel: a step of a target model with a speculative drafter on the GPU (vLLM V1,
// models/drafter.hpp). The target's step verifies the drafts in its own forward pass (a decode of
// k + 1 query tokens reads its KV once; the LM head scores k + 1 positions: the target cost
// model reads both off the shape). The drafter then runs as SpecDecodeBaseProposer.propose
// does (vllm/v1/spec_decode/llm_base_proposer.py): a first pass over every token the step
// scheduled (the target's hidden states of the prompt chunks too, whose KV the head keeps),
// scoring one position per sampling sequence, then k - 1 passes of one token per sequence, each
// attending to the sequence's context and the drafts before it. Its passes cost what the
// drafter's network costs on the same roofline, without the engine's per-step CPU and GPU work
// (the target's step already pays it; they replay as CUDA graphs). Deterministic like its parts.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "models/cost_model.hpp"

namespace servesim {

class SpeculativeCostModel final : public CostModel {
 public:
  // TARGET: the target's cost model; DRAFT: the drafter's passes' (their engine costs zero);
  // NUM_SPECULATIVE_TOKENS: k >= 1.
  SpeculativeCostModel(std::unique_ptr<CostModel> target, std::unique_ptr<CostModel> draft,
                       int num_speculative_tokens)
      : target_(std::move(target)), draft_(std::move(draft)), k_(num_speculative_tokens) {}
  StepCost cost(std::span<const SeqShape> batch) const override;
  std::string name() const override { return target_->name(); }

 private:
  std::unique_ptr<CostModel> target_, draft_;
  int k_;
};

}  // namespace servesim
