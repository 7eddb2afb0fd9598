// WorkloadBlockHasher: the prefix cache's block hashes from a workload's token names
// (traces/request.hpp): block k of a request hashes its parent's hash and the (stream, position)
// names of its tokens, as maximal runs of consecutive positions of one stream, so that the same
// tokens give the same hash however the requests' spans cut them; a request's LoRA adapter is an
// extra key of each of its blocks, as vLLM's (kv_cache_utils._gen_lora_extra_hash_keys).
// Promises: equal hashes for blocks whose tokens, and all tokens before them, have equal names
// (up to 64-bit collisions); no allocation.
#pragma once

#include <cstdint>

#include "scheduler/block_hasher.hpp"
#include "traces/request.hpp"

namespace servesim {

class WorkloadBlockHasher final : public BlockHasher {
 public:
  // W outlives this.
  WorkloadBlockHasher(const Workload& w, int block_size) : w_(w), block_size_(block_size) {}
  uint64_t block_hash(uint32_t id, int64_t index, uint64_t parent) const override;
  // The full blocks of the tokens its spans name: the prompt they cover, and with
  // output_continues the output too (traces/request.hpp: every other token is its own).
  int64_t shared_blocks(uint32_t id) const override;

 private:
  // The name of request R's token at POS: its stream and position there, and how many tokens
  // from POS on (up to END) continue the same stream contiguously.
  struct Run {
    uint64_t stream;
    int64_t stream_pos, tokens;
  };
  Run run_at(const RequestSpec& r, int64_t pos, int64_t end) const;

  const Workload& w_;
  int block_size_;
};

}  // namespace servesim
