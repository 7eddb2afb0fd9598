// BlockHasher: names the content of a request's full KV blocks for the prefix cache, the way
// vLLM V1 hashes a block (vllm/v1/core/kv_cache_utils.py hash_block_tokens): a hash of the
// parent block's hash and the block's tokens, so that equal hashes mean equal content from the
// start of the sequence. servesim has no token ids; the simulator implements this from the
// workload's token names (sim/workload_block_hasher.hpp).
#pragma once

#include <cstdint>

namespace servesim {

class BlockHasher {
 public:
  // The hash of request ID's block INDEX (tokens [INDEX * block_size, (INDEX + 1) * block_size)),
  // whose parent block hashes to PARENT (0 for the first block). Never 0.
  virtual uint64_t block_hash(uint32_t id, int64_t index, uint64_t parent) const = 0;
  // How many of request ID's leading blocks another request may also hold; the blocks after
  // them hold a token only ID has (so no other request's block ever hashes the same). All of
  // them unless a hasher knows better.
  virtual int64_t shared_blocks(uint32_t /*id*/) const { return INT64_MAX; }

 protected:
  ~BlockHasher() = default;
};

}  // namespace servesim
