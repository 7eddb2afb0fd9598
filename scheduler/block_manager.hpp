// BlockManager: vLLM V0's paged KV-cache accounting for one replica (vllm/core/block_manager.py,
// SelfAttnBlockSpaceManager, at the V0 revision of scheduler/vllm_revision.hpp), reduced to counts
// because no block is shared without prefix caching. It answers the scheduler's two questions the
// way vLLM does:
//  - can_allocate: blocks for every known token; NEVER if even an empty cache would leave fewer
//    than the watermark free, LATER if the free blocks would drop below the watermark now.
//  - can_append_slots: the blocks an append "touches" (block_table.
//    get_num_blocks_touched_by_append_slots) must not exceed the free blocks; no watermark. As in
//    vLLM, a one-token append touches one block even when the last block still has room.
// Promises: 0 <= free_blocks() <= total_blocks(), and the blocks held by sequences plus the free
// blocks always equal the total.
#pragma once

#include <cstdint>

#include "scheduler/sequence.hpp"

namespace servesim {

enum class AllocStatus { kOk, kLater, kNever };

class BlockManager {
 public:
  // REQUIRES: num_blocks > 0, block_size > 0, 0 <= watermark < 1.
  BlockManager(int64_t num_blocks, int block_size, double watermark = 0.01);

  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  AllocStatus can_allocate(const SeqState& s) const;
  // A block table for every known token.
  // REQUIRES: S holds no blocks and can_allocate(S) != kNever.
  void allocate(SeqState& s);
  bool can_append_slots(const SeqState& s) const;
  // Extends S's table to every known token.
  // REQUIRES: can_append_slots(S).
  void append_slots(SeqState& s);
  void free(SeqState& s);

  int64_t total_blocks() const { return total_; }
  int64_t free_blocks() const { return free_; }
  int64_t used_blocks() const { return total_ - free_; }
  int64_t watermark_blocks() const { return watermark_blocks_; }
  int block_size() const { return block_size_; }

 private:
  int64_t total_;
  int64_t free_;
  int block_size_;
  int64_t watermark_blocks_;
};

}  // namespace servesim
