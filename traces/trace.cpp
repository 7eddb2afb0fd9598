#include "traces/trace.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>

#include "util/hash.hpp"

namespace servesim {

uint64_t stream_id(StreamKind kind, uint64_t n) {
  return hash_combine(static_cast<uint64_t>(kind), n);
}

namespace {

// Mooncake's hash ids are chained by construction (an id names its block and every token before
// it), so one span per id, its stream named by the id, says exactly what the trace knows: two
// requests hold the same tokens at a prompt position when their ids for that trace block are
// equal. The prefix cache hashes KV blocks of any size from these names, chained from position 0:
// a KV block inside one trace block is shared when that trace block is; a KV block straddling two
// trace blocks is shared only when both are (the later id implies the earlier one). A partial last
// trace block is shared only with requests whose id for it is the same (Mooncake hashes the
// partial block's own tokens), so requests agreeing on part of it share nothing of it.
void hash_id_spans(const Trace& t, size_t i, std::vector<TokenSpan>& out) {
  const int64_t bs = t.hash_block_size, input = t.input_tokens[i];
  for (uint64_t k = t.hash_offsets[i]; k < t.hash_offsets[i + 1]; ++k) {
    const int64_t pos = int64_t(k - t.hash_offsets[i]) * bs;
    if (pos >= input) break;
    out.push_back({stream_id(StreamKind::kTraceBlock, t.hash_ids[k]), 0, int32_t(pos),
                   int32_t(std::min(bs, input - pos))});
  }
}

// Request I's spans (appended to OUT) and whether its output continues the last one's stream.
bool row_content(const Trace& t, size_t i, std::vector<TokenSpan>& out) {
  if (t.has_spans()) {
    out.insert(out.end(), t.spans.begin() + std::ptrdiff_t(t.span_offsets[i]),
               t.spans.begin() + std::ptrdiff_t(t.span_offsets[i + 1]));
    return t.output_continues[i] != 0;
  }
  if (t.has_hash_ids()) {
    hash_id_spans(t, i, out);
    return false;
  }
  // A turn of a session: its prompt is the conversation so far, and its answer carries it on
  // (the next turn's prompt holds it).
  if (t.has_sessions() && t.session_id[i] >= 0) {
    out.push_back(
        {stream_id(StreamKind::kSession, uint64_t(t.session_id[i])), 0, 0, t.input_tokens[i]});
    return true;
  }
  return false;
}

}  // namespace

Workload to_workload(const Trace& t) {
  assert(t.timed);
  Workload w(t.size());
  if (t.has_spans()) w.spans.reserve(t.spans.size());
  if (t.has_hash_ids()) w.spans.reserve(t.hash_ids.size());
  for (size_t i = 0; i < t.size(); ++i) {
    RequestSpec& r = w[i];
    r.id = static_cast<uint32_t>(i);
    r.arrival_s = t.arrival_s[i];
    r.input_tokens = t.input_tokens[i];
    r.output_tokens = t.output_tokens[i];
    if (!t.priority.empty()) r.priority = t.priority[i];
    if (!t.lora.empty()) r.lora = uint16_t(t.lora[i]);
    r.first_span = static_cast<uint32_t>(w.spans.size());
    r.output_continues = row_content(t, i, w.spans);
    r.num_spans = static_cast<uint32_t>(w.spans.size() - r.first_span);
  }
  return w;
}

Trace from_workload(const Workload& w) {
  Trace t;
  t.reserve(w.size());
  const bool priorities =
      std::any_of(w.begin(), w.end(), [](const RequestSpec& r) { return r.priority != 0; });
  const bool loras =
      std::any_of(w.begin(), w.end(), [](const RequestSpec& r) { return r.lora != 0; });
  if (w.has_content()) {
    t.span_offsets.reserve(w.size() + 1);
    t.span_offsets.push_back(0);
    t.spans.reserve(w.spans.size());
    t.output_continues.reserve(w.size());
  }
  for (const RequestSpec& r : w) {
    t.push(r.arrival_s, r.input_tokens, r.output_tokens);
    if (priorities) t.priority.push_back(r.priority);
    if (loras) t.lora.push_back(r.lora);
    if (!w.has_content()) continue;
    const auto first = w.spans.begin() + std::ptrdiff_t(r.first_span);
    t.spans.insert(t.spans.end(), first, first + std::ptrdiff_t(r.num_spans));
    t.span_offsets.push_back(t.spans.size());
    t.output_continues.push_back(r.output_continues);
  }
  t.counts.rows_read = int64_t(w.size());
  return t;
}

void content_as_spans(Trace& t) {
  if (t.has_spans() || !(t.has_hash_ids() || t.has_sessions())) return;
  std::vector<uint64_t> offsets{0};
  offsets.reserve(t.size() + 1);
  std::vector<TokenSpan> spans;
  std::vector<uint8_t> continues(t.size(), 0);
  for (size_t i = 0; i < t.size(); ++i) {
    continues[i] = row_content(t, i, spans);
    offsets.push_back(spans.size());
  }
  t.span_offsets.swap(offsets);
  t.spans.swap(spans);
  t.output_continues.swap(continues);
  t.hash_offsets.clear();
  t.hash_ids.clear();
}

namespace {

// Why row I's spans break their promise; "" when they keep it.
std::string row_span_problem(const Trace& t, size_t i) {
  int64_t end = 0;
  for (uint64_t k = t.span_offsets[i]; k < t.span_offsets[i + 1]; ++k) {
    const TokenSpan& s = t.spans[k];
    if (s.prompt_pos != end || s.tokens < 1 || s.stream_pos < 0) {
      return "must cover the prompt from position 0, consecutive, each of >= 1 token";
    }
    end += s.tokens;
  }
  if (end > t.input_tokens[i]) return "cover more tokens than the prompt has";
  if (t.output_continues[i] > 1) return "output_continues must be 0 or 1";
  if (t.output_continues[i] && end == 0) return "an output continues no span";
  return "";
}

}  // namespace

std::pair<std::string, std::string> content_problem(const Trace& t) {
  const size_t n = t.size();
  if (!t.priority.empty() && t.priority.size() != n) return {"priority", "has a different length"};
  if (!t.lora.empty() && t.lora.size() != n) return {"lora", "has a different length"};
  for (const int32_t l : t.lora) {
    if (l < 0 || l > kMaxLoras) return {"lora", "adapter ids must be in [0, 65535]"};
  }
  if (!t.has_spans()) {
    if (!t.spans.empty() || !t.output_continues.empty()) return {"spans", "without span_offsets"};
    return {"", ""};
  }
  if (t.span_offsets.size() != n + 1 || t.span_offsets.front() != 0 ||
      t.span_offsets.back() != t.spans.size() ||
      !std::is_sorted(t.span_offsets.begin(), t.span_offsets.end())) {
    return {"span_offsets", "inconsistent with the spans"};
  }
  if (t.output_continues.size() != n) return {"output_continues", "has a different length"};
  for (size_t i = 0; i < n; ++i) {
    std::string reason = row_span_problem(t, i);
    if (!reason.empty())
      return {"spans", reason.append(" (row ").append(std::to_string(i)).append(")")};
  }
  return {"", ""};
}

}  // namespace servesim
