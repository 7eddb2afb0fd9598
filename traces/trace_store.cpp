#include "traces/trace_store.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <type_traits>

#include "util/error.hpp"
#include "util/h5_columns.hpp"

namespace servesim {

namespace {

constexpr int kVersion = 1;
constexpr const char* kMagic = "servesim-trace";
// Far beyond any trace; keeps a crafted header from asking for terabytes.
constexpr hsize_t kMaxRows = hsize_t(1) << 31;
constexpr hsize_t kMaxHashIds = hsize_t(1) << 34;

using h5::column_length;
using h5::join_lines;
using h5::read_column;
using h5::read_int_attr;
using h5::read_string_attr;
using h5::write_attr;
using h5::write_column;

struct CountField {
  const char* name;
  int64_t TraceCounts::*member;
};
constexpr CountField kCounts[] = {
    {"rows_read", &TraceCounts::rows_read},
    {"skipped_bad", &TraceCounts::skipped_bad},
    {"skipped_failed", &TraceCounts::skipped_failed},
    {"filtered", &TraceCounts::filtered},
    {"outside_window", &TraceCounts::outside_window},
    {"beyond_max", &TraceCounts::beyond_max},
    {"kept_failed", &TraceCounts::kept_failed},
    {"clipped_input", &TraceCounts::clipped_input},
    {"clipped_output", &TraceCounts::clipped_output},
};

// Checks what the Trace promises, so a hand-edited or foreign file cannot break the simulator.
void check(const Trace& t, const std::string& path) {
  const size_t n = t.size();
  if (t.input_tokens.size() != n || t.output_tokens.size() != n) {
    throw Error(path, 0, "input_tokens", "columns have different lengths");
  }
  if (n == 0) throw Error(path, 0, "arrival_s", "the trace holds no request");
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(t.arrival_s[i]) || t.arrival_s[i] < 0 ||
        (i > 0 && t.arrival_s[i] < t.arrival_s[i - 1])) {
      throw Error(path, 0, "arrival_s",
                  "must be finite, >= 0 and sorted (row " + std::to_string(i) + ")");
    }
    if (t.input_tokens[i] < 1)
      throw Error(path, 0, "input_tokens", "must be >= 1 (row " + std::to_string(i) + ")");
    if (t.output_tokens[i] < 1)
      throw Error(path, 0, "output_tokens", "must be >= 1 (row " + std::to_string(i) + ")");
  }
  if (t.has_hash_ids()) {
    if (t.hash_offsets.size() != n + 1 || t.hash_offsets.front() != 0 ||
        t.hash_offsets.back() != t.hash_ids.size() ||
        !std::is_sorted(t.hash_offsets.begin(), t.hash_offsets.end())) {
      throw Error(path, 0, "hash_offsets", "inconsistent with hash_ids");
    }
    if (t.hash_block_size < 1) throw Error(path, 0, "hash_block_size", "must be >= 1");
  }
  const TraceCounts& c = t.counts;
  for (const CountField& f : kCounts) {
    // At most 2^50 (a quadrillion rows): sums of counts and increments then cannot overflow.
    if (c.*f.member < 0 || c.*f.member > (int64_t(1) << 50))
      throw Error(path, 0, f.name, "must be a count in [0, 2^50]");
  }
  if (c.rows_read != int64_t(n) + c.skipped()) {
    throw Error(path, 0, "rows_read", "must equal the requests kept plus the rows skipped");
  }
  if (!t.session_id.empty() && t.session_id.size() != n) {
    throw Error(path, 0, "session_id", "has a different length");
  }
  const auto [field, reason] = content_problem(t);
  if (!field.empty()) throw Error(path, 0, field, reason);
  if (!t.request_class.empty()) {
    if (t.request_class.size() != n)
      throw Error(path, 0, "request_class", "has a different length");
    for (uint8_t c : t.request_class) {
      if (c >= t.class_names.size())
        throw Error(path, 0, "request_class", "names an unknown class");
    }
  }
}

// Spans as one column per field, so that pandas and h5py read them without a compound type.
void write_spans(H5::H5File& f, const Trace& t) {
  std::vector<uint64_t> stream(t.spans.size());
  std::vector<int32_t> stream_pos(t.spans.size()), prompt_pos(t.spans.size()),
      tokens(t.spans.size());
  for (size_t k = 0; k < t.spans.size(); ++k) {
    stream[k] = t.spans[k].stream;
    stream_pos[k] = t.spans[k].stream_pos;
    prompt_pos[k] = t.spans[k].prompt_pos;
    tokens[k] = t.spans[k].tokens;
  }
  write_column(f, "span_offsets", t.span_offsets);
  write_column(f, "span_stream", stream);
  write_column(f, "span_stream_pos", stream_pos);
  write_column(f, "span_prompt_pos", prompt_pos);
  write_column(f, "span_tokens", tokens);
  write_column(f, "output_continues", t.output_continues);
}

// The spans of a file with span_offsets (N + 1 of them), every column's length checked first.
void read_spans(H5::H5File& f, const std::string& path, hsize_t n, Trace& t) {
  const hsize_t offsets = column_length<uint64_t>(f, path, "span_offsets", kMaxRows + 1);
  if (offsets != n + 1) throw Error(path, 0, "span_offsets", "has the wrong length");
  const hsize_t m = column_length<uint64_t>(f, path, "span_stream", kMaxHashIds);
  for (const char* name : {"span_stream_pos", "span_prompt_pos", "span_tokens"}) {
    if (column_length<int32_t>(f, path, name, kMaxHashIds) != m) {
      throw Error(path, 0, name, "has a different length than span_stream");
    }
  }
  if (column_length<uint8_t>(f, path, "output_continues", kMaxRows) != n) {
    throw Error(path, 0, "output_continues", "has the wrong length");
  }
  t.span_offsets = read_column<uint64_t>(f, "span_offsets", n + 1);
  t.output_continues = read_column<uint8_t>(f, "output_continues", n);
  const auto stream = read_column<uint64_t>(f, "span_stream", m);
  const auto stream_pos = read_column<int32_t>(f, "span_stream_pos", m);
  const auto prompt_pos = read_column<int32_t>(f, "span_prompt_pos", m);
  const auto tokens = read_column<int32_t>(f, "span_tokens", m);
  t.spans.resize(m);
  for (size_t k = 0; k < m; ++k)
    t.spans[k] = {stream[k], stream_pos[k], prompt_pos[k], tokens[k]};
}

}  // namespace

void write_trace_h5(const std::string& path, const Trace& t) {
  h5::write_file_atomically(path, [&](H5::H5File& f) {
    write_column(f, "arrival_s", t.arrival_s);
    write_column(f, "input_tokens", t.input_tokens);
    write_column(f, "output_tokens", t.output_tokens);
    if (t.has_hash_ids()) {
      write_column(f, "hash_offsets", t.hash_offsets);
      write_column(f, "hash_ids", t.hash_ids);
    }
    if (!t.session_id.empty()) write_column(f, "session_id", t.session_id);
    if (t.has_spans()) write_spans(f, t);
    if (!t.priority.empty()) write_column(f, "priority", t.priority);
    if (!t.lora.empty()) write_column(f, "lora", t.lora);
    if (!t.request_class.empty()) write_column(f, "request_class", t.request_class);
    write_attr(f, "magic", std::string(kMagic));
    write_attr(f, "version", int64_t(kVersion));
    write_attr(f, "source_file", t.source);
    write_attr(f, "source_format", t.format);
    write_attr(f, "options", t.options);
    write_attr(f, "timed", int64_t(t.timed));
    write_attr(f, "hash_block_size", int64_t(t.hash_block_size));
    write_attr(f, "class_names", join_lines(t.class_names));
    if (!t.lora_names.empty()) write_attr(f, "lora_names", join_lines(t.lora_names));
    write_attr(f, "first_errors", join_lines(t.first_errors));
    for (const CountField& c : kCounts)
      write_attr(f, c.name, t.counts.*c.member);
  });
}

Trace read_trace_h5(const std::string& path) {
  Trace t;
  try {
    H5::H5File f = h5::open_checked(path, kMagic, kVersion, "trace");
    // Every column's type and length are checked before anything is allocated.
    const hsize_t n = column_length<double>(f, path, "arrival_s", kMaxRows);
    auto expect = [&](const char* name, hsize_t got, hsize_t want) {
      if (got != want) {
        throw Error(path, 0, name,
                    "has " + std::to_string(got) + " elements, expected " + std::to_string(want));
      }
    };
    expect("input_tokens", column_length<int32_t>(f, path, "input_tokens", kMaxRows), n);
    expect("output_tokens", column_length<int32_t>(f, path, "output_tokens", kMaxRows), n);
    const bool hashes = f.nameExists("hash_offsets");
    hsize_t num_ids = 0;
    if (hashes) {
      expect("hash_offsets", column_length<uint64_t>(f, path, "hash_offsets", kMaxRows + 1), n + 1);
      num_ids = column_length<uint64_t>(f, path, "hash_ids", kMaxHashIds);
    }
    const bool sessions = f.nameExists("session_id");
    if (sessions) expect("session_id", column_length<int64_t>(f, path, "session_id", kMaxRows), n);
    if (f.nameExists("priority")) {
      expect("priority", column_length<int32_t>(f, path, "priority", kMaxRows), n);
    }
    if (f.nameExists("lora")) expect("lora", column_length<int32_t>(f, path, "lora", kMaxRows), n);
    const bool classes = f.nameExists("request_class");
    if (classes) {
      expect("request_class", column_length<uint8_t>(f, path, "request_class", kMaxRows), n);
    }
    t.arrival_s = read_column<double>(f, "arrival_s", n);
    t.input_tokens = read_column<int32_t>(f, "input_tokens", n);
    t.output_tokens = read_column<int32_t>(f, "output_tokens", n);
    if (hashes) {
      t.hash_offsets = read_column<uint64_t>(f, "hash_offsets", n + 1);
      t.hash_ids = read_column<uint64_t>(f, "hash_ids", num_ids);
    }
    if (sessions) t.session_id = read_column<int64_t>(f, "session_id", n);
    if (f.nameExists("span_offsets")) read_spans(f, path, n, t);
    if (f.nameExists("priority")) t.priority = read_column<int32_t>(f, "priority", n);
    if (f.nameExists("lora")) t.lora = read_column<int32_t>(f, "lora", n);
    if (classes) t.request_class = read_column<uint8_t>(f, "request_class", n);
    t.source = read_string_attr(f, "source_file");
    t.format = read_string_attr(f, "source_format");
    t.options = read_string_attr(f, "options");
    t.timed = read_int_attr(f, path, "timed") != 0;
    const int64_t block = read_int_attr(f, path, "hash_block_size");
    if (block < 0 || block > INT32_MAX) throw Error(path, 0, "hash_block_size", "out of range");
    t.hash_block_size = int32_t(block);
    t.class_names = h5::split_lines(read_string_attr(f, "class_names"), true);
    if (f.attrExists("lora_names")) {
      t.lora_names = h5::split_lines(read_string_attr(f, "lora_names"), true);
    }
    t.first_errors = h5::split_lines(read_string_attr(f, "first_errors"), true);
    for (const CountField& c : kCounts)
      t.counts.*c.member = read_int_attr(f, path, c.name);
  } catch (const std::bad_alloc&) {
    throw Error(path, 0, "", "not enough memory to load this trace");
  } catch (const H5::Exception& e) {
    throw Error(path, 0, "",
                "unreadable servesim trace (truncated or corrupt HDF5?): " + e.getFuncName() +
                    ": " + e.getDetailMsg());
  }
  check(t, path);
  return t;
}

}  // namespace servesim
