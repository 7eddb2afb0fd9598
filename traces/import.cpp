#include "traces/import.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "traces/trace_store.hpp"
#include "util/error.hpp"
#include "util/lookup.hpp"
#include "util/text_input.hpp"

namespace servesim {

const std::vector<std::string>& trace_formats() {
  static const std::vector<std::string> formats = {"azure", "burstgpt", "mooncake",
                                                   "vidur", "csv",      "servesim"};
  return formats;
}

std::string ImportOptions::describe() const {
  std::string s;
  auto add = [&s](const std::string& flag, const std::string& value) {
    if (!value.empty()) {
      s.append(s.empty() ? "" : " ").append("--").append(flag).append(" ").append(value);
    }
  };
  add("trace-format", format);
  add("col-arrival", col_arrival);
  add("col-input", col_input);
  add("col-output", col_output);
  if (time_unit != "s") add("time-unit", time_unit);
  if (skip_bad_rows) s.append(s.empty() ? "" : " ").append("--skip-bad-rows");
  if (keep_failed) s.append(s.empty() ? "" : " ").append("--keep-failed");
  add("model-filter", model_filter);
  add("log-type", log_type);
  if (hash_block_size > 0) add("hash-block-size", std::to_string(hash_block_size));
  return s;
}

namespace {

constexpr size_t kMaxReasons = 5;

// A value quoted in a message, cut short: a bad field may be megabytes long.
std::string quoted(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string q = "'";
  q.append(s.substr(0, kMax));
  if (s.size() > kMax) q.append("...");
  return q.append("'");
}

// What every importer shares: error policy, counts and the order check.
class Rows {
 public:
  Rows(const std::string& path, const ImportOptions& opt, Trace& t)
      : path_(path), opt_(opt), t_(t) {}

  // A malformed row: stop, or skip and count it.
  void bad(int64_t line, const std::string& field, const std::string& reason) {
    if (!opt_.skip_bad_rows) throw Error(path_, int(line), field, reason);
    ++t_.counts.skipped_bad;
    if (t_.first_errors.size() < kMaxReasons) {
      t_.first_errors.push_back(Error(path_, int(line), field, reason).what());
    }
  }
  // For formats that promise time order: false (and the row reported) when it goes backwards.
  // Integer times (nanoseconds since 1970) are compared exactly, not through a double.
  template <class T>
  bool in_order(int64_t line, const std::string& field, T time) {
    T& last = std::get<T>(last_);
    if (have_last_ && time < last) {
      bad(line, field, "goes backwards in time (the format promises sorted rows)");
      return false;
    }
    have_last_ = true;
    last = time;
    return true;
  }
  // Seconds after the first kept row; false (and the row reported) when that overflows.
  bool relative(int64_t line, const std::string& field, double time, double& out) {
    if (!have_first_) {
      first_ = time;
      have_first_ = true;
    }
    out = time - first_;
    if (std::isfinite(out)) return true;
    bad(line, field, "out of range relative to the first row");
    return false;
  }

 private:
  const std::string& path_;
  const ImportOptions& opt_;
  Trace& t_;
  bool have_last_ = false;
  std::tuple<int64_t, double> last_{0, 0.0};
  bool have_first_ = false;
  double first_ = 0;
};

// Token counts: whole numbers >= MIN that fit int32.
bool tokens(std::string_view s, int64_t min, int32_t& out, std::string& reason) {
  int64_t v = 0;
  if (!parse_int(s, v)) {
    reason = s.empty() ? "missing value" : quoted(s) + " is not a whole number";
    return false;
  }
  if (v < min) {
    reason = std::to_string(v) + (min == 1 ? " must be >= 1" : " must be >= 0");
    return false;
  }
  if (v > INT32_MAX) {
    reason = std::to_string(v) + " is too large";
    return false;
  }
  out = int32_t(v);
  return true;
}

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

// The header of a CSV trace: column index by case-insensitive name.
struct Header : CsvHeader {
  std::string text;  // for messages, cut short
  int find(std::string_view name) const { return CsvHeader::find(name, true); }
  bool has(std::string_view name) const { return find(name) >= 0; }
};

Header parse_header(std::string_view line, const std::string& path, int64_t line_number) {
  Header h;
  static_cast<CsvHeader&>(h) = read_csv_header(line, path, line_number);
  h.text = quoted(line);
  return h;
}

int require(const Header& h, const std::string& path, const std::string& name) {
  const int i = h.find(name);
  if (i < 0) throw Error(path, 1, name, "missing column (header: " + h.text + ")");
  return i;
}

// Iterates the data rows of a CSV: calls ROW(line, fields) for every non-blank line, after
// checking that it has the columns the importer needs.
template <class Row>
void for_each_row(LineReader& in, Rows& rows, Trace& t, size_t needed, const Header& h, Row row) {
  t.reserve(size_t(in.estimated_lines()));
  CsvSplitter split;
  std::vector<std::string_view> fields;
  std::string reason;
  std::string_view line;
  while (in.next(line)) {
    if (blank(line)) continue;  // blank lines hold no request
    ++t.counts.rows_read;
    if (!split.split(line, fields, reason)) {
      rows.bad(in.line_number(), "", reason);
      continue;
    }
    if (fields.size() < needed) {
      rows.bad(in.line_number(), h.names[fields.size()], "missing field");
      continue;
    }
    row(in.line_number(), fields);
  }
}

void import_azure(const std::string& path, LineReader& in, const Header& h, Rows& rows, Trace& t) {
  const int c_time = require(h, path, "TIMESTAMP");
  const int c_in = require(h, path, "ContextTokens");
  const int c_out = require(h, path, "GeneratedTokens");
  const size_t needed = size_t(std::max({c_time, c_in, c_out})) + 1;
  int64_t first_ns = 0;
  bool first = true;
  std::string reason;
  for_each_row(in, rows, t, needed, h, [&](int64_t line, const std::vector<std::string_view>& f) {
    int64_t ns = 0;
    int32_t input = 0, output = 0;
    if (!parse_datetime_ns(f[size_t(c_time)], ns)) {
      return rows.bad(line, "TIMESTAMP", quoted(f[size_t(c_time)]) + " is not a date-time");
    }
    if (!tokens(f[size_t(c_in)], 1, input, reason)) return rows.bad(line, "ContextTokens", reason);
    if (!tokens(f[size_t(c_out)], 1, output, reason)) {
      return rows.bad(line, "GeneratedTokens", reason);
    }
    if (!rows.in_order(line, "TIMESTAMP", ns)) return;
    if (first) {
      first_ns = ns;
      first = false;
    }
    t.push(double(ns - first_ns) * 1e-9, input, output);
  });
}

void import_burstgpt(const std::string& path, const ImportOptions& opt, LineReader& in,
                     const Header& h, Rows& rows, Trace& t) {
  const int c_time = require(h, path, "Timestamp");
  const int c_model = require(h, path, "Model");
  const int c_in = require(h, path, "Request tokens");
  const int c_out = require(h, path, "Response tokens");
  const int c_log = require(h, path, "Log Type");
  const int c_session = h.find("Session ID");  // BurstGPT_3 only: a UUID, or empty
  const size_t needed = size_t(std::max({c_time, c_model, c_in, c_out, c_log, c_session})) + 1;
  const std::string model_filter = lowercase(opt.model_filter);
  const std::string log_filter = lowercase(opt.log_type);
  if (!log_filter.empty() && log_filter != "conversation" && log_filter != "api") {
    throw Error("log-type", "expected conversation or api, got '" + opt.log_type + "'");
  }
  // Classes and sessions are interned: a few distinct models and log types, and session ids
  // numbered in order of first appearance. The last class is cached to avoid a lookup per row.
  std::unordered_map<std::string, uint8_t> classes;
  std::unordered_map<std::string, int64_t> sessions;
  std::string last_model, last_log;
  uint8_t last_class = 0;
  bool have_class = false;
  std::string reason;
  bool reserved = false;
  for_each_row(in, rows, t, needed, h, [&](int64_t line, const std::vector<std::string_view>& f) {
    if (!reserved) {
      t.request_class.reserve(t.arrival_s.capacity());
      if (c_session >= 0) t.session_id.reserve(t.arrival_s.capacity());
      reserved = true;
    }
    double time = 0, rel = 0;
    int32_t input = 0, output = 0;
    if (!parse_double(f[size_t(c_time)], time)) {
      return rows.bad(line, "Timestamp", quoted(f[size_t(c_time)]) + " is not a number");
    }
    if (!tokens(f[size_t(c_in)], 1, input, reason)) return rows.bad(line, "Request tokens", reason);
    if (!tokens(f[size_t(c_out)], 0, output, reason)) {
      return rows.bad(line, "Response tokens", reason);
    }
    if (!rows.in_order(line, "Timestamp", time)) return;
    const std::string_view model = clean_header_name(f[size_t(c_model)]);
    const std::string_view log = clean_header_name(f[size_t(c_log)]);
    if ((!model_filter.empty() && lowercase(model) != model_filter) ||
        (!log_filter.empty() && lowercase(log).rfind(log_filter, 0) != 0)) {
      ++t.counts.filtered;
      return;
    }
    if (output == 0) {  // a failed request: no response
      if (!opt.keep_failed) {
        ++t.counts.skipped_failed;
        return;
      }
      ++t.counts.kept_failed;
      output = 1;  // it still took a prefill; replayed as one output token
    }
    if (!rows.relative(line, "Timestamp", time, rel)) return;
    if (!have_class || model != last_model || log != last_log) {
      last_model.assign(model);
      last_log.assign(log);
      std::string name = last_model;
      name.append(" / ").append(last_log);
      if (name.size() > 100) name = name.substr(0, 100);
      auto it = classes.find(name);
      if (it == classes.end()) {
        if (classes.size() == 255) {
          throw Error(path, int(line), "Model", "more than 255 model / log-type classes");
        }
        it = classes.emplace(name, uint8_t(classes.size())).first;
        t.class_names.push_back(name);
      }
      last_class = it->second;
      have_class = true;
    }
    t.push(rel, input, output);
    t.request_class.push_back(last_class);
    if (c_session >= 0) {
      const std::string_view id = clean_header_name(f[size_t(c_session)]);
      t.session_id.push_back(
          id.empty() ? -1
                     : sessions.emplace(std::string(id), int64_t(sessions.size())).first->second);
    }
  });
}

void import_vidur(const std::string& path, LineReader& in, const Header& h, Rows& rows, Trace& t) {
  const int c_time = h.find("arrived_at");
  const int c_in = require(h, path, "num_prefill_tokens");
  const int c_out = require(h, path, "num_decode_tokens");
  t.timed = c_time >= 0;
  const size_t needed = size_t(std::max({c_time, c_in, c_out})) + 1;
  std::string reason;
  for_each_row(in, rows, t, needed, h, [&](int64_t line, const std::vector<std::string_view>& f) {
    double time = 0, rel = 0;
    int32_t input = 0, output = 0;
    if (t.timed && !parse_double(f[size_t(c_time)], time)) {
      return rows.bad(line, "arrived_at", quoted(f[size_t(c_time)]) + " is not a number");
    }
    if (!tokens(f[size_t(c_in)], 1, input, reason)) {
      return rows.bad(line, "num_prefill_tokens", reason);
    }
    if (!tokens(f[size_t(c_out)], 1, output, reason)) {
      return rows.bad(line, "num_decode_tokens", reason);
    }
    if (t.timed && !rows.in_order(line, "arrived_at", time)) return;
    if (!rows.relative(line, "arrived_at", time, rel)) return;
    t.push(rel, input, output);
  });
}

// Sorts every column of T by arrival (stable: ties keep file order), one column at a time so
// that memory grows by one column and an index, not by a copy of the trace.
void sort_by_arrival(Trace& t) {
  if (std::is_sorted(t.arrival_s.begin(), t.arrival_s.end())) return;
  std::vector<uint32_t> order(t.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return t.arrival_s[a] < t.arrival_s[b]; });
  auto gather = [&order](auto& column) {
    auto sorted = column;
    for (size_t i = 0; i < order.size(); ++i)
      sorted[i] = column[order[i]];
    column.swap(sorted);
  };
  gather(t.arrival_s);
  gather(t.input_tokens);
  gather(t.output_tokens);
}

void import_csv(const std::string& path, const ImportOptions& opt, LineReader& in, const Header& h,
                Rows& rows, Trace& t) {
  if (opt.col_input.empty() || opt.col_output.empty()) {
    throw Error("col-input",
                "the csv format needs --col-input and --col-output (and --col-arrival for a "
                "timed trace); header: " +
                    h.text);
  }
  double unit = 1;
  if (opt.time_unit == "ms") {
    unit = 1e-3;
  } else if (opt.time_unit == "us") {
    unit = 1e-6;
  } else if (opt.time_unit != "s") {
    throw Error("time-unit", "expected s, ms or us, got '" + opt.time_unit + "'");
  }
  const int c_time = opt.col_arrival.empty() ? -1 : require(h, path, opt.col_arrival);
  const int c_in = require(h, path, opt.col_input);
  const int c_out = require(h, path, opt.col_output);
  t.timed = c_time >= 0;
  const size_t needed = size_t(std::max({c_time, c_in, c_out})) + 1;
  std::string reason;
  for_each_row(in, rows, t, needed, h, [&](int64_t line, const std::vector<std::string_view>& f) {
    double time = 0;
    int32_t input = 0, output = 0;
    if (t.timed && !parse_double(f[size_t(c_time)], time)) {
      return rows.bad(line, opt.col_arrival, quoted(f[size_t(c_time)]) + " is not a number");
    }
    if (!tokens(f[size_t(c_in)], 1, input, reason)) return rows.bad(line, opt.col_input, reason);
    if (!tokens(f[size_t(c_out)], 1, output, reason)) return rows.bad(line, opt.col_output, reason);
    t.push(time * unit, input, output);
  });
  if (!t.timed || t.size() == 0) return;
  // A generic CSV promises no order: sort, and start at the first arrival.
  sort_by_arrival(t);
  const double first = t.arrival_s.front();
  for (double& a : t.arrival_s) {
    a -= first;
    if (!std::isfinite(a)) throw Error(path, 0, opt.col_arrival, "arrival times out of range");
  }
}

void import_mooncake(const std::string& path, const ImportOptions& opt, LineReader& in,
                     std::string_view first_line, Rows& rows, Trace& t) {
  using nlohmann::json;
  const int64_t bs = opt.hash_block_size > 0 ? opt.hash_block_size : 512;
  t.hash_block_size = int32_t(bs);
  bool with_hashes = false, decided = false;
  std::string reason;
  std::string_view line = first_line;
  int64_t n = in.line_number();
  for (bool more = true; more; more = in.next(line), n = in.line_number()) {
    if (blank(line)) continue;
    ++t.counts.rows_read;
    const json j = json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      rows.bad(n, "", "not a JSON object (is this a Mooncake JSONL trace?)");
      continue;
    }
    if (!decided && !j.contains("timestamp") && !j.contains("input_length")) {
      throw Error(path, int(n), "timestamp",
                  "not a Mooncake JSONL trace (no timestamp, input_length, output_length)");
    }
    auto number = [&](const char* key, double& v) {
      const auto it = j.find(key);
      if (it == j.end()) {
        reason = "missing";
        return false;
      }
      if (!it->is_number() || !std::isfinite(v = it->get<double>())) {
        reason = "not a number";
        return false;
      }
      return true;
    };
    auto whole = [&](const char* key, double& v) {
      if (!number(key, v)) return false;
      if (v < 1 || v != std::floor(v) || v > INT32_MAX) {
        reason = "must be a whole number >= 1";
        return false;
      }
      return true;
    };
    double ts = 0, in_len = 0, out_len = 0, rel = 0;
    if (!number("timestamp", ts)) {
      rows.bad(n, "timestamp", reason);
      continue;
    }
    if (!whole("input_length", in_len)) {
      rows.bad(n, "input_length", reason);
      continue;
    }
    if (!whole("output_length", out_len)) {
      rows.bad(n, "output_length", reason);
      continue;
    }
    const auto hashes = j.find("hash_ids");
    if (!decided) {  // the first good row decides whether the trace has hash ids
      with_hashes = hashes != j.end();
      decided = true;
      if (with_hashes) t.hash_offsets.push_back(0);
    }
    if (with_hashes != (hashes != j.end())) {
      rows.bad(n, "hash_ids",
               with_hashes ? "missing (earlier rows have hash ids)"
                           : "present, but the first rows had none");
      continue;
    }
    if (with_hashes) {
      if (!hashes->is_array() || !std::all_of(hashes->begin(), hashes->end(), [](const json& id) {
            return id.is_number_unsigned();
          })) {
        rows.bad(n, "hash_ids", "must be a list of non-negative integers");
        continue;
      }
      const int64_t want = (int64_t(in_len) + bs - 1) / bs;
      if (int64_t(hashes->size()) != want) {
        rows.bad(n, "hash_ids",
                 std::to_string(hashes->size()) + " ids for " + std::to_string(int64_t(in_len)) +
                     " tokens: expected " + std::to_string(want) + " at " + std::to_string(bs) +
                     " tokens a block (see --hash-block-size)");
        continue;
      }
    }
    if (!rows.in_order(n, "timestamp", ts)) continue;
    if (!rows.relative(n, "timestamp", ts * 1e-3, rel)) continue;
    t.push(rel, int32_t(in_len), int32_t(out_len));
    if (with_hashes) {
      for (const json& id : *hashes)
        t.hash_ids.push_back(id.get<uint64_t>());
      t.hash_offsets.push_back(t.hash_ids.size());
    }
  }
}

bool is_hdf5(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;  // pipes: text formats only
  H5::Exception::dontPrint();
  try {
    return H5::H5File::isHdf5(path.c_str());  // also finds a signature after a user block
  } catch (const H5::Exception&) {
    return false;
  }
}

std::string detect_csv(const std::string& path, const Header& h, const ImportOptions& opt) {
  if (h.has("TIMESTAMP") && h.has("ContextTokens") && h.has("GeneratedTokens")) return "azure";
  if (h.has("Timestamp") && h.has("Request tokens") && h.has("Response tokens")) return "burstgpt";
  if (h.has("num_prefill_tokens") && h.has("num_decode_tokens")) return "vidur";
  if (!opt.col_input.empty()) return "csv";
  throw Error(path, 1, "",
              "cannot tell the trace format from the header " + h.text +
                  " (known: azure, burstgpt, mooncake, vidur, servesim; for any other CSV give "
                  "--trace-format csv with --col-input and --col-output)");
}

void check_format(const std::string& format) {
  const auto& f = trace_formats();
  if (!format.empty() && std::find(f.begin(), f.end(), format) == f.end()) {
    throw Error("trace-format", "unknown format '" + format +
                                    "' (known: azure, burstgpt, mooncake, vidur, csv, servesim)");
  }
}

}  // namespace

Trace import_trace(const std::string& path, const ImportOptions& opt) {
  check_format(opt.format);
  if (opt.format == "servesim" || (opt.format.empty() && is_hdf5(path))) {
    return read_trace_h5(path);
  }
  Trace t;
  t.source = path;
  t.options = opt.describe();
  Rows rows(path, opt, t);
  // One pass over one reader, so that pipes work too: the first non-blank line is either a
  // JSON object (Mooncake) or a CSV header.
  LineReader in(path);
  std::string_view first;
  do {
    if (!in.next(first)) throw Error(path, 0, "", "empty file");
  } while (blank(first));
  const bool json = clean_header_name(first).substr(0, 1) == "{";
  if (opt.format == "mooncake" || (opt.format.empty() && json)) {
    t.format = "mooncake";
    import_mooncake(path, opt, in, first, rows, t);
  } else {
    const Header h = parse_header(first, path, in.line_number());
    t.format = opt.format.empty() ? detect_csv(path, h, opt) : opt.format;
    if (t.format == "azure") import_azure(path, in, h, rows, t);
    if (t.format == "burstgpt") import_burstgpt(path, opt, in, h, rows, t);
    if (t.format == "vidur") import_vidur(path, in, h, rows, t);
    if (t.format == "csv") import_csv(path, opt, in, h, rows, t);
    if (t.counts.rows_read == 0) throw Error(path, 1, "", "no data rows (header only)");
  }
  if (t.size() == 0) {
    throw Error(path, 0, "",
                "no request left: " + std::to_string(t.counts.rows_read) +
                    " rows read, all skipped or filtered");
  }
  return t;
}

}  // namespace servesim
