#include "models/spec_decode_cost.hpp"

#include <vector>

namespace servesim {

namespace {

// C += D, part by part (D's seconds counted as the drafter's).
void add_draft(StepCost& c, const StepCost& d) {
  c.draft_s += d.seconds;
  c.seconds += d.seconds;
  c.flops += d.flops;
  c.bf16_flops += d.bf16_flops;
  c.bytes += d.bytes;
}

}  // namespace

StepCost SpeculativeCostModel::cost(std::span<const SeqShape> batch) const {
  StepCost c = target_->cost(batch);
  if (batch.empty()) return c;
  // The first pass: every scheduled token, one logit row per sampling sequence (the drafts the
  // target verified are not scored again).
  thread_local std::vector<SeqShape> pass;
  pass.assign(batch.begin(), batch.end());
  for (SeqShape& s : pass)
    s.draft_tokens = 0;
  add_draft(c, draft_->cost(pass));
  // The chained passes: one token per sequence after its context, new tokens and the drafts so far.
  for (int i = 1; i < k_; ++i) {
    for (size_t j = 0; j < batch.size(); ++j) {
      SeqShape& s = pass[j];
      s.context_tokens = batch[j].context_tokens + batch[j].new_tokens + i - 1;
      s.new_tokens = 1;
      s.prefill = false;
      s.emits_token = true;
    }
    add_draft(c, draft_->cost(pass));
  }
  return c;
}

}  // namespace servesim
