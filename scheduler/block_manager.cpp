#include "scheduler/block_manager.hpp"

#include <cassert>

namespace servesim {

BlockManager::BlockManager(int64_t num_blocks, int block_size, double watermark)
    : total_(num_blocks),
      free_(num_blocks),
      block_size_(block_size),
      // vLLM: self.watermark_blocks = int(watermark * num_gpu_blocks)
      watermark_blocks_(static_cast<int64_t>(watermark * static_cast<double>(num_blocks))) {
  assert(num_blocks > 0 && block_size > 0);
}

AllocStatus BlockManager::can_allocate(const SeqState& s) const {
  const int64_t required = blocks_for(s.num_tokens());
  if (total_ - required < watermark_blocks_) return AllocStatus::kNever;
  if (free_ - required >= watermark_blocks_) return AllocStatus::kOk;
  return AllocStatus::kLater;
}

void BlockManager::allocate(SeqState& s) {
  assert(s.blocks == 0);
  s.table_tokens = s.num_tokens();
  s.blocks = static_cast<int32_t>(blocks_for(s.table_tokens));
  free_ -= s.blocks;
  assert(free_ >= 0);
}

bool BlockManager::can_append_slots(const SeqState& s) const {
  const int64_t unseen = s.num_tokens() - s.table_tokens;
  // A decode appends one token: the room left in the last block is 1..block_size, so the formula
  // below gives 1 + ceil((1 - room) / block_size) = 1 block whatever the room.
  if (unseen == 1) return free_ >= 1;
  // get_num_blocks_touched_by_append_slots: 1 + ceil((unseen - first_chunk_size) / block_size),
  // where first_chunk_size is the room left in the last block (a full block counts as room for a
  // whole new block). Integer ceil of a possibly negative numerator.
  const int64_t first_chunk = block_size_ - (s.table_tokens % block_size_);
  const int64_t num = unseen - first_chunk;
  const int64_t ceil_div =
      num >= 0 ? (num + block_size_ - 1) / block_size_ : -((-num) / block_size_);
  return 1 + ceil_div <= free_;
}

void BlockManager::append_slots(SeqState& s) {
  s.table_tokens = s.num_tokens();
  if (s.table_tokens <= int64_t(s.blocks) * block_size_) return;  // room in the last block
  const int64_t need = blocks_for(s.table_tokens) - s.blocks;
  if (need > 0) {
    s.blocks += static_cast<int32_t>(need);
    free_ -= need;
  }
  assert(free_ >= 0);
}

void BlockManager::free(SeqState& s) {
  free_ += s.blocks;
  s.blocks = 0;
  s.table_tokens = 0;
  assert(free_ <= total_);
}

}  // namespace servesim
