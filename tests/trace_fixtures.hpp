// Helpers for trace tests: write a fixture (bytes exactly as given, CRLF and missing final
// newlines included) to a fresh temporary file; check two traces hold the same data.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "traces/trace.hpp"

namespace servesim::test {

inline std::string fixture(const std::string& name, const std::string& bytes) {
  const auto dir = std::filesystem::temp_directory_path() / "servesim_trace_fixtures";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  return path.string();
}

// Spans as tuples, for comparisons and messages.
inline std::vector<std::tuple<uint64_t, int32_t, int32_t, int32_t>> span_tuples(
    const std::vector<TokenSpan>& spans) {
  std::vector<std::tuple<uint64_t, int32_t, int32_t, int32_t>> v;
  for (const TokenSpan& s : spans)
    v.emplace_back(s.stream, s.stream_pos, s.prompt_pos, s.tokens);
  return v;
}

inline void require_same(const Trace& a, const Trace& b) {
  CHECK(a.arrival_s == b.arrival_s);
  CHECK(a.input_tokens == b.input_tokens);
  CHECK(a.output_tokens == b.output_tokens);
  CHECK(a.hash_offsets == b.hash_offsets);
  CHECK(a.hash_ids == b.hash_ids);
  CHECK(a.hash_block_size == b.hash_block_size);
  CHECK(a.session_id == b.session_id);
  CHECK(a.span_offsets == b.span_offsets);
  CHECK(span_tuples(a.spans) == span_tuples(b.spans));
  CHECK(a.output_continues == b.output_continues);
  CHECK(a.priority == b.priority);
  CHECK(a.request_class == b.request_class);
  CHECK(a.class_names == b.class_names);
  CHECK(a.timed == b.timed);
  CHECK(a.format == b.format);
  CHECK(a.source == b.source);
  CHECK(a.options == b.options);
  CHECK(a.counts.rows_read == b.counts.rows_read);
  CHECK(a.counts.skipped_bad == b.counts.skipped_bad);
  CHECK(a.counts.skipped_failed == b.counts.skipped_failed);
  CHECK(a.counts.filtered == b.counts.filtered);
  CHECK(a.counts.outside_window == b.counts.outside_window);
  CHECK(a.counts.beyond_max == b.counts.beyond_max);
  CHECK(a.counts.kept_failed == b.counts.kept_failed);
  CHECK(a.counts.clipped_input == b.counts.clipped_input);
  CHECK(a.counts.clipped_output == b.counts.clipped_output);
  CHECK(a.first_errors == b.first_errors);
}

}  // namespace servesim::test
