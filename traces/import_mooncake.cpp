// The Mooncake JSONL trace format: timestamp (ms), input_length, output_length and, on every row
// or on none, hash_ids (traces/import_formats.hpp).
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "traces/import_formats.hpp"
#include "util/error.hpp"

namespace servesim::import_detail {

namespace {

using json = nlohmann::json;

// Reads Mooncake JSONL rows: timestamp (ms), input_length, output_length and hash_ids, which
// every row has or none has (the first good row decides).
class Mooncake {
 public:
  Mooncake(const std::string& path, const ImportOptions& opt, Rows& rows, Trace& t);
  Mooncake(const Mooncake&) = delete;
  Mooncake& operator=(const Mooncake&) = delete;

  void row(int64_t n, std::string_view line);

 private:
  bool parse(int64_t n, const json& j, double& ts, double& in_len, double& out_len);
  bool number(const json& j, const char* key, double& v);
  bool whole(const json& j, const char* key, double& v);
  bool hashes_ok(int64_t n, const json& j, json::const_iterator hashes, double in_len);
  bool hash_list_ok(int64_t n, const json& hashes, double in_len);
  void push(double rel, double in_len, double out_len, json::const_iterator hashes);

  const std::string& path_;
  Rows& rows_;
  Trace& t_;
  const int64_t bs_;  // prompt tokens per hash id
  bool with_hashes_ = false, decided_ = false;
  std::string reason_;
};

Mooncake::Mooncake(const std::string& path, const ImportOptions& opt, Rows& rows, Trace& t)
    : path_(path), rows_(rows), t_(t), bs_(opt.hash_block_size > 0 ? opt.hash_block_size : 512) {
  t.hash_block_size = int32_t(bs_);
}

void Mooncake::row(int64_t n, std::string_view line) {
  const json j = json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return rows_.bad(n, "", "not a JSON object (is this a Mooncake JSONL trace?)");
  }
  if (!decided_ && !j.contains("timestamp") && !j.contains("input_length")) {
    throw Error(path_, int(n), "timestamp",
                "not a Mooncake JSONL trace (no timestamp, input_length, output_length)");
  }
  double ts = 0, in_len = 0, out_len = 0, rel = 0;
  if (!parse(n, j, ts, in_len, out_len)) return;
  const auto hashes = j.find("hash_ids");
  if (!hashes_ok(n, j, hashes, in_len)) return;
  if (!rows_.in_order(n, "timestamp", ts)) return;
  if (!rows_.relative(n, "timestamp", ts * 1e-3, rel)) return;
  push(rel, in_len, out_len, hashes);
}

// The time and lengths; false (and the row reported) when one is missing or malformed.
bool Mooncake::parse(int64_t n, const json& j, double& ts, double& in_len, double& out_len) {
  if (!number(j, "timestamp", ts)) return rows_.fail(n, "timestamp", reason_);
  if (!whole(j, "input_length", in_len)) return rows_.fail(n, "input_length", reason_);
  if (!whole(j, "output_length", out_len)) return rows_.fail(n, "output_length", reason_);
  return true;
}

// J[KEY] as a finite number; false with reason_ when it is missing or not one.
bool Mooncake::number(const json& j, const char* key, double& v) {
  const auto it = j.find(key);
  if (it == j.end()) {
    reason_ = "missing";
    return false;
  }
  if (!it->is_number() || !std::isfinite(v = it->get<double>())) {
    reason_ = "not a number";
    return false;
  }
  return true;
}

// J[KEY] as a whole number in [1, INT32_MAX]; false with reason_ otherwise.
bool Mooncake::whole(const json& j, const char* key, double& v) {
  if (!number(j, key, v)) return false;
  if (v < 1 || v != std::floor(v) || v > INT32_MAX) {
    reason_ = "must be a whole number >= 1";
    return false;
  }
  return true;
}

// Whether the row's HASHES (J's "hash_ids", or J.end()) are as the trace's; false (and the row
// reported) otherwise. The first row to get here decides whether the trace has hash ids.
bool Mooncake::hashes_ok(int64_t n, const json& j, json::const_iterator hashes, double in_len) {
  const bool present = hashes != j.end();
  if (!decided_) {
    with_hashes_ = present;
    decided_ = true;
    if (with_hashes_) t_.hash_offsets.push_back(0);
  }
  if (with_hashes_ != present) {
    return rows_.fail(n, "hash_ids",
                      with_hashes_ ? "missing (earlier rows have hash ids)"
                                   : "present, but the first rows had none");
  }
  return !with_hashes_ || hash_list_ok(n, *hashes, in_len);
}

// Non-negative integers, one per block of the IN_LEN prompt tokens.
bool Mooncake::hash_list_ok(int64_t n, const json& hashes, double in_len) {
  if (!hashes.is_array() || !std::all_of(hashes.begin(), hashes.end(),
                                         [](const json& id) { return id.is_number_unsigned(); })) {
    return rows_.fail(n, "hash_ids", "must be a list of non-negative integers");
  }
  const int64_t want = (int64_t(in_len) + bs_ - 1) / bs_;
  if (int64_t(hashes.size()) != want) {
    return rows_.fail(n, "hash_ids",
                      std::to_string(hashes.size()) + " ids for " +
                          std::to_string(int64_t(in_len)) + " tokens: expected " +
                          std::to_string(want) + " at " + std::to_string(bs_) +
                          " tokens a block (see " + field::ref(field::kHashBlockSize) + ")");
  }
  return true;
}

void Mooncake::push(double rel, double in_len, double out_len, json::const_iterator hashes) {
  t_.push(rel, int32_t(in_len), int32_t(out_len));
  if (!with_hashes_) return;
  for (const json& id : *hashes)
    t_.hash_ids.push_back(id.get<uint64_t>());
  t_.hash_offsets.push_back(t_.hash_ids.size());
}

}  // namespace

void import_mooncake(const std::string& path, const ImportOptions& opt, LineReader& in,
                     std::string_view first_line, Rows& rows, Trace& t) {
  Mooncake mooncake(path, opt, rows, t);
  std::string_view line = first_line;
  int64_t n = in.line_number();
  for (bool more = true; more; more = in.next(line), n = in.line_number()) {
    if (blank(line)) continue;
    ++t.counts.rows_read;
    mooncake.row(n, line);
  }
}

}  // namespace servesim::import_detail
