#include "sim/workload_block_hasher.hpp"

#include <algorithm>

#include "util/hash.hpp"

namespace servesim {

WorkloadBlockHasher::Run WorkloadBlockHasher::run_at(const RequestSpec& r, int64_t pos,
                                                     int64_t end) const {
  const TokenSpan* first = w_.spans.data() + r.first_span;
  const TokenSpan* last = first + r.num_spans;
  const uint64_t own = stream_id(StreamKind::kRequest, r.id);
  if (pos < r.input_tokens) {
    // The span holding POS: the last whose prompt_pos <= POS.
    const TokenSpan* after = std::upper_bound(
        first, last, pos, [](int64_t p, const TokenSpan& t) { return p < t.prompt_pos; });
    if (after != first) {
      const TokenSpan& s = *(after - 1);
      const int64_t span_end = int64_t(s.prompt_pos) + s.tokens;
      if (pos < span_end)
        return {s.stream, s.stream_pos + (pos - s.prompt_pos), std::min(end, span_end) - pos};
    }
    return {own, pos, std::min<int64_t>(end, r.input_tokens) - pos};  // the prompt's own tail
  }
  if (r.output_continues && r.num_spans > 0) {
    const TokenSpan& t = *(last - 1);
    return {t.stream, t.stream_pos + (pos - t.prompt_pos), end - pos};
  }
  return {own, pos, end - pos};
}

int64_t WorkloadBlockHasher::shared_blocks(uint32_t id) const {
  const RequestSpec& r = w_[id];
  if (r.num_spans == 0) return 0;
  const TokenSpan& last = w_.spans[r.first_span + r.num_spans - 1];
  const int64_t named = int64_t(last.prompt_pos) + last.tokens;  // spans cover [0, named)
  if (named >= r.input_tokens && r.output_continues) return INT64_MAX;
  return std::min<int64_t>(named, r.input_tokens) / block_size_;
}

uint64_t WorkloadBlockHasher::block_hash(uint32_t id, int64_t index, uint64_t parent) const {
  const RequestSpec& r = w_[id];
  const int64_t end = (index + 1) * block_size_;
  uint64_t h = hash_combine(parent, uint64_t(block_size_));
  // The adapter is an extra key of every block (_gen_lora_extra_hash_keys): the same tokens under
  // another adapter are other KV. Without one the hashes are as before.
  if (r.lora != 0) h = hash_combine(h, 0x4c6f524100000000ULL | r.lora);
  Run cur{0, 0, 0};
  for (int64_t pos = index * block_size_; pos < end;) {
    const Run next = run_at(r, pos, end);
    if (cur.tokens > 0 && next.stream == cur.stream &&
        next.stream_pos == cur.stream_pos + cur.tokens) {
      cur.tokens += next.tokens;  // the same stream, contiguous: one run
    } else {
      if (cur.tokens > 0) {
        h = hash_combine(hash_combine(hash_combine(h, cur.stream), uint64_t(cur.stream_pos)),
                         uint64_t(cur.tokens));
      }
      cur = next;
    }
    pos += next.tokens;
  }
  h = hash_combine(hash_combine(hash_combine(h, cur.stream), uint64_t(cur.stream_pos)),
                   uint64_t(cur.tokens));
  return h == 0 ? 1 : h;
}

}  // namespace servesim
