// Shared test fixtures: small scheduler configurations, a constant-time cost model, and a helper
// that completes a scheduled batch as the host would.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/cost_model.hpp"
#include "scheduler/block_hasher.hpp"
#include "scheduler/v0_scheduler.hpp"
#include "scheduler/v1_scheduler.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"

namespace servesim::test {

// The field of the Error F throws; "" when it throws none.
template <class F>
std::string error_field(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.field();
  }
  return "";
}

inline SchedulerConfig config(const std::string& policy, int64_t budget, int64_t max_num_seqs = 8,
                              int64_t max_model_len = 1000, int block_size = 16) {
  SchedulerConfig c;
  c.policy = parse_policy(policy);
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_num_seqs;
  c.max_model_len = max_model_len;
  c.block_size = block_size;
  return c;
}

// Applies the scheduler's current batch as the host does, once its step has run.
inline void complete_step(Scheduler& s) {
  s.update_from_output([](uint32_t, int32_t, bool, bool) {});
}

// (id, new tokens) pairs of the current batch, in batch order.
inline std::vector<std::pair<uint32_t, int32_t>> entries(const Batch& b) {
  std::vector<std::pair<uint32_t, int32_t>> e;
  for (size_t i = 0; i < b.size(); ++i)
    e.emplace_back(b.ids()[i], b.shapes()[i].new_tokens);
  return e;
}

inline std::vector<uint32_t> queue_ids(const RequestQueue& q) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < q.size(); ++i)
    ids.push_back(q[i]);
  return ids;
}

// Every step costs the same: makes timings hand-computable.
class ConstantCost final : public CostModel {
 public:
  explicit ConstantCost(double seconds) : seconds_(seconds) {}
  StepCost cost(std::span<const SeqShape>) const override {
    StepCost c;
    c.seconds = seconds_;
    return c;
  }
  std::string name() const override { return "constant"; }

 private:
  double seconds_;
};

// Block contents for prefix-cache tests: request ID's first shared[ID].second blocks are those of
// group shared[ID].first (any request of the group has them); every other block is its own.
class GroupHasher final : public BlockHasher {
 public:
  std::map<uint32_t, std::pair<uint64_t, int64_t>> shared;
  uint64_t block_hash(uint32_t id, int64_t index, uint64_t parent) const override {
    const auto it = shared.find(id);
    const bool in_group = it != shared.end() && index < it->second.second;
    const uint64_t who = in_group ? it->second.first : 1000000 + id;
    const uint64_t h = hash_combine(hash_combine(parent, who), uint64_t(index));
    return h == 0 ? 1 : h;
  }
  int64_t shared_blocks(uint32_t id) const override {
    const auto it = shared.find(id);
    return it != shared.end() ? it->second.second : 0;
  }
};

// A new request's state: INPUT prompt tokens, OUTPUT to generate, nothing computed.
inline SeqState prompt(int32_t input, int32_t output = 4) {
  SeqState s;
  s.input_tokens = input;
  s.output_tokens = output;
  return s;
}

using Entries = std::vector<std::pair<uint32_t, int32_t>>;
using Ids = std::vector<uint32_t>;

}  // namespace servesim::test
