#include "traces/import.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>

#include "models/catalogue.hpp"
#include "sim/error.hpp"
#include "traces/text_input.hpp"
#include "traces/trace_store.hpp"

namespace servesim {

const std::vector<std::string>& trace_formats() {
  static const std::vector<std::string> formats = {"azure", "burstgpt", "mooncake",
                                                   "vidur", "csv",      "servesim"};
  return formats;
}

std::string ImportOptions::describe() const {
  std::string s;
  auto add = [&s](const std::string& flag, const std::string& value) {
    if (!value.empty())
      s.append(s.empty() ? "" : " ").append("--").append(flag).append(" ").append(value);
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

 private:
  const std::string& path_;
  const ImportOptions& opt_;
  Trace& t_;
  bool have_last_ = false;
  std::tuple<int64_t, double> last_{0, 0.0};
};

// Token counts: whole numbers >= MIN that fit int32.
bool tokens(std::string_view s, int64_t min, int32_t& out, std::string& reason) {
  int64_t v = 0;
  if (!parse_int(s, v)) {
    reason = s.empty() ? "missing value" : "'" + std::string(s) + "' is not a whole number";
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

std::string lower(std::string_view s) {
  return lowercase(s);
}

// The header of a CSV file: column index by (case-insensitive) name.
struct Header {
  std::vector<std::string> names;
  std::string text;
  int find(std::string_view name) const {
    const std::string want = lower(name);
    for (size_t i = 0; i < names.size(); ++i) {
      if (lower(names[i]) == want) return int(i);
    }
    return -1;
  }
  bool has(std::string_view name) const { return find(name) >= 0; }
};

Header read_header(LineReader& in, const std::string& path) {
  std::string_view line;
  if (!in.next(line)) throw Error(path, 0, "", "empty file");
  Header h;
  h.text = std::string(line);
  std::vector<std::string_view> fields;
  std::string reason;
  CsvSplitter split;
  if (!split.split(line, fields, reason)) throw Error(path, 1, "", "header: " + reason);
  for (std::string_view f : fields)
    h.names.emplace_back(clean_header_name(f));
  return h;
}

int require(const Header& h, const std::string& path, const std::string& name) {
  const int i = h.find(name);
  if (i < 0) throw Error(path, 1, name, "missing column (header: " + h.text + ")");
  return i;
}

// Iterates the data rows of a CSV: calls ROW(line, fields) for every non-empty line, after
// checking that it has the columns the importer needs.
template <class Row>
void for_each_row(LineReader& in, Rows& rows, Trace& t, size_t needed, const Header& h, Row row) {
  t.reserve(size_t(in.estimated_lines()));
  CsvSplitter split;
  std::vector<std::string_view> fields;
  std::string reason;
  std::string_view line;
  while (in.next(line)) {
    if (line.empty()) continue;  // blank lines hold no request
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
      rows.bad(line, "TIMESTAMP", "'" + std::string(f[size_t(c_time)]) + "' is not a date-time");
      return;
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
  const int c_session = h.find("Session ID");  // BurstGPT_3 only
  const size_t needed = size_t(std::max({c_time, c_model, c_in, c_out, c_log, c_session})) + 1;
  const std::string model_filter = lower(opt.model_filter);
  const std::string log_filter = lower(opt.log_type);
  if (!log_filter.empty() && log_filter != "conversation" && log_filter != "api") {
    throw Error("log-type", "expected conversation or api, got '" + opt.log_type + "'");
  }
  if (c_session >= 0) t.session_id.reserve(1 << 16);
  std::map<std::string, uint8_t> classes;
  double first = 0;
  bool have_first = false;
  std::string reason;
  for_each_row(in, rows, t, needed, h, [&](int64_t line, const std::vector<std::string_view>& f) {
    double time = 0;
    int32_t input = 0, output = 0;
    if (!parse_double(f[size_t(c_time)], time)) {
      return rows.bad(line, "Timestamp",
                      "'" + std::string(f[size_t(c_time)]) + "' is not a number");
    }
    if (!tokens(f[size_t(c_in)], 1, input, reason)) return rows.bad(line, "Request tokens", reason);
    if (!tokens(f[size_t(c_out)], 0, output, reason)) {
      return rows.bad(line, "Response tokens", reason);
    }
    int64_t session = -1;
    if (c_session >= 0 && !clean_header_name(f[size_t(c_session)]).empty() &&
        !parse_int(f[size_t(c_session)], session)) {
      return rows.bad(line, "Session ID",
                      "'" + std::string(f[size_t(c_session)]) + "' is not a whole number");
    }
    if (!rows.in_order(line, "Timestamp", time)) return;
    const std::string model(clean_header_name(f[size_t(c_model)]));
    const std::string log(clean_header_name(f[size_t(c_log)]));
    if ((!model_filter.empty() && lower(model) != model_filter) ||
        (!log_filter.empty() && lower(log).rfind(log_filter, 0) != 0)) {
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
    const std::string name = model + " / " + log;
    auto it = classes.find(name);
    if (it == classes.end()) {
      if (classes.size() == 255)
        throw Error(path, int(line), "Model", "more than 255 model/log-type classes");
      it = classes.emplace(name, uint8_t(classes.size())).first;
      t.class_names.push_back(name);
    }
    if (!have_first) {
      first = time;
      have_first = true;
    }
    t.push(time - first, input, output);
    t.request_class.push_back(it->second);
    if (c_session >= 0) t.session_id.push_back(session);
  });
}

void import_vidur(const std::string& path, LineReader& in, const Header& h, Rows& rows, Trace& t) {
  const int c_time = h.find("arrived_at");
  const int c_in = require(h, path, "num_prefill_tokens");
  const int c_out = require(h, path, "num_decode_tokens");
  t.timed = c_time >= 0;
  const size_t needed = size_t(std::max({c_time, c_in, c_out})) + 1;
  double first = 0;
  bool have_first = false;
  std::string reason;
  for_each_row(in, rows, t, needed, h, [&](int64_t line, const std::vector<std::string_view>& f) {
    double time = 0;
    int32_t input = 0, output = 0;
    if (t.timed && !parse_double(f[size_t(c_time)], time)) {
      return rows.bad(line, "arrived_at",
                      "'" + std::string(f[size_t(c_time)]) + "' is not a number");
    }
    if (!tokens(f[size_t(c_in)], 1, input, reason))
      return rows.bad(line, "num_prefill_tokens", reason);
    if (!tokens(f[size_t(c_out)], 1, output, reason))
      return rows.bad(line, "num_decode_tokens", reason);
    if (t.timed && !rows.in_order(line, "arrived_at", time)) return;
    if (!have_first) {
      first = time;
      have_first = true;
    }
    t.push(time - first, input, output);
  });
}

void import_csv(const std::string& path, const ImportOptions& opt, LineReader& in, const Header& h,
                Rows& rows, Trace& t) {
  if (opt.col_input.empty() || opt.col_output.empty()) {
    throw Error("col-input",
                "the csv format needs --col-input and --col-output (and --col-arrival "
                "for a timed trace); header: " +
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
      return rows.bad(line, opt.col_arrival,
                      "'" + std::string(f[size_t(c_time)]) + "' is not a number");
    }
    if (!tokens(f[size_t(c_in)], 1, input, reason)) return rows.bad(line, opt.col_input, reason);
    if (!tokens(f[size_t(c_out)], 1, output, reason)) return rows.bad(line, opt.col_output, reason);
    t.push(time * unit, input, output);
  });
  if (!t.timed) return;
  // A generic CSV promises no order: sort by arrival (stable, so ties keep file order) and
  // start at the first arrival.
  std::vector<size_t> order(t.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t.arrival_s[a] < t.arrival_s[b]; });
  Trace sorted;
  sorted.reserve(t.size());
  const double first = t.size() ? t.arrival_s[order[0]] : 0;
  for (size_t i : order)
    sorted.push(t.arrival_s[i] - first, t.input_tokens[i], t.output_tokens[i]);
  t.arrival_s.swap(sorted.arrival_s);
  t.input_tokens.swap(sorted.input_tokens);
  t.output_tokens.swap(sorted.output_tokens);
}

void import_mooncake(const std::string& path, const ImportOptions& opt, LineReader& in, Rows& rows,
                     Trace& t) {
  using nlohmann::json;
  t.hash_block_size = opt.hash_block_size > 0 ? opt.hash_block_size : 512;
  bool with_hashes = false, decided = false;
  double first = 0;
  std::string reason;
  std::string_view line;
  while (in.next(line)) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    ++t.counts.rows_read;
    const int64_t n = in.line_number();
    const json j = json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      if (!decided) throw Error(path, int(n), "", "not a Mooncake JSONL trace: not a JSON object");
      rows.bad(n, "", "not a JSON object");
      continue;
    }
    auto number = [&](const char* key, double& v) {
      const auto it = j.find(key);
      if (it == j.end()) {
        reason = "missing";
        return false;
      }
      if (!it->is_number()) {
        reason = "not a number";
        return false;
      }
      v = it->get<double>();
      return std::isfinite(v);
    };
    double ts = 0, in_len = 0, out_len = 0;
    if (!number("timestamp", ts)) {
      if (!decided && t.counts.rows_read == 1 && !j.contains("input_length")) {
        throw Error(path, int(n), "timestamp",
                    "not a Mooncake JSONL trace (no timestamp, input_length, output_length)");
      }
      rows.bad(n, "timestamp", reason);
      continue;
    }
    if (!number("input_length", in_len) || in_len < 1 || in_len != std::floor(in_len) ||
        in_len > INT32_MAX) {
      rows.bad(n, "input_length", reason == "missing" ? reason : "must be a whole number >= 1");
      continue;
    }
    if (!number("output_length", out_len) || out_len < 1 || out_len != std::floor(out_len) ||
        out_len > INT32_MAX) {
      rows.bad(n, "output_length", reason == "missing" ? reason : "must be a whole number >= 1");
      continue;
    }
    const auto hashes = j.find("hash_ids");
    if (!decided) {
      with_hashes = hashes != j.end();
      decided = true;
      if (with_hashes) t.hash_offsets.push_back(0);
    }
    if (with_hashes) {
      if (hashes == j.end() || !hashes->is_array()) {
        rows.bad(n, "hash_ids", "missing (earlier rows have hash ids)");
        continue;
      }
      bool ok = true;
      for (const json& id : *hashes)
        ok = ok && id.is_number_unsigned();
      if (!ok) {
        rows.bad(n, "hash_ids", "must be non-negative integers");
        continue;
      }
    }
    if (!rows.in_order(n, "timestamp", ts)) continue;
    if (t.size() == 0) first = ts;
    t.push((ts - first) * 1e-3, int32_t(in_len), int32_t(out_len));
    if (with_hashes) {
      for (const json& id : *hashes)
        t.hash_ids.push_back(id.get<uint64_t>());
      t.hash_offsets.push_back(t.hash_ids.size());
    }
  }
  if (t.counts.rows_read == 0) throw Error(path, 0, "", "empty file");
}

bool is_hdf5(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char sig[8] = {};
  f.read(sig, 8);
  return f.gcount() == 8 && std::string_view(sig, 8) == std::string_view("\x89HDF\r\n\x1a\n", 8);
}

std::string detect_csv(const std::string& path, const Header& h, const ImportOptions& opt) {
  if (h.has("TIMESTAMP") && h.has("ContextTokens") && h.has("GeneratedTokens")) return "azure";
  if (h.has("Timestamp") && h.has("Request tokens") && h.has("Response tokens")) return "burstgpt";
  if (h.has("num_prefill_tokens") && h.has("num_decode_tokens")) return "vidur";
  if (!opt.col_input.empty()) return "csv";
  throw Error(path, 1, "",
              "cannot tell the trace format from the header '" + h.text +
                  "' (known: azure, burstgpt, mooncake, vidur, servesim; for any "
                  "other CSV give --trace-format csv with --col-input and "
                  "--col-output)");
}

}  // namespace

std::string detect_trace_format(const std::string& path, const ImportOptions& opt) {
  if (!opt.format.empty()) {
    const auto& f = trace_formats();
    if (std::find(f.begin(), f.end(), opt.format) == f.end()) {
      throw Error("trace-format", "unknown format '" + opt.format +
                                      "' (known: azure, burstgpt, mooncake, vidur, csv, servesim)");
    }
    return opt.format;
  }
  if (is_hdf5(path)) return "servesim";
  LineReader in(path);
  std::string_view line;
  if (!in.next(line)) throw Error(path, 0, "", "empty file");
  const std::string_view first = clean_header_name(line);
  if (!first.empty() && first.front() == '{') return "mooncake";
  LineReader again(path);
  return detect_csv(path, read_header(again, path), opt);
}

Trace import_trace(const std::string& path, const ImportOptions& opt) {
  const std::string format = detect_trace_format(path, opt);
  if (format == "servesim") return read_trace_h5(path);
  Trace t;
  t.source = path;
  t.format = format;
  t.options = opt.describe();
  Rows rows(path, opt, t);
  LineReader in(path);
  if (format == "mooncake") {
    import_mooncake(path, opt, in, rows, t);
  } else {
    const Header h = read_header(in, path);
    if (format == "azure") import_azure(path, in, h, rows, t);
    if (format == "burstgpt") import_burstgpt(path, opt, in, h, rows, t);
    if (format == "vidur") import_vidur(path, in, h, rows, t);
    if (format == "csv") import_csv(path, opt, in, h, rows, t);
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
