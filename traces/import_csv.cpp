// The CSV trace formats with fixed column names (azure, vidur) and any CSV with columns named by
// flags (csv), read into a Trace (traces/import_formats.hpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "traces/import_formats.hpp"
#include "util/error.hpp"

namespace servesim::import_detail {

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
    int64_t since = 0;  // rows are in order, so only a span past int64 ns can overflow
    if (__builtin_sub_overflow(ns, first_ns, &since) || double(since) * 1e-9 > kMaxSimTime_s) {
      return rows.bad(line, "TIMESTAMP",
                      quoted(f[size_t(c_time)]) + " is more than 1e9 s after the first row");
    }
    t.push(double(since) * 1e-9, input, output);
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

namespace {

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
  if (!t.priority.empty()) gather(t.priority);
  if (!t.lora.empty()) gather(t.lora);
}

// A priority: a whole number that fits int32 (vLLM's priority is any int; lower runs first).
bool priority(std::string_view s, int32_t& out) {
  double v = 0;
  if (!parse_double(s, v) || v != std::floor(v) || v < INT32_MIN || v > INT32_MAX) return false;
  out = int32_t(v);
  return true;
}

}  // namespace

void import_csv(const std::string& path, const ImportOptions& opt, LineReader& in, const Header& h,
                Rows& rows, Trace& t) {
  if (opt.col_input.empty() || opt.col_output.empty()) {
    throw Error(field::kColInput, "the csv format needs " + field::ref(field::kColInput) + " and " +
                                      field::ref(field::kColOutput) + " (and " +
                                      field::ref(field::kColArrival) +
                                      " for a timed trace); header: " + h.text);
  }
  double unit = 1;
  if (opt.time_unit == "ms") {
    unit = 1e-3;
  } else if (opt.time_unit == "us") {
    unit = 1e-6;
  } else if (opt.time_unit != "s") {
    throw Error(field::kTimeUnit, "expected s, ms or us, got '" + opt.time_unit + "'");
  }
  // No arrival column (or `none`, as --col-arrival's help has it): a length-only trace.
  const bool length_only = opt.col_arrival.empty() || opt.col_arrival == "none";
  const int c_time = length_only ? -1 : require(h, path, opt.col_arrival);
  const int c_in = require(h, path, opt.col_input);
  const int c_out = require(h, path, opt.col_output);
  const int c_prio = opt.col_priority.empty() ? -1 : require(h, path, opt.col_priority);
  const int c_lora = opt.col_lora.empty() ? -1 : require(h, path, opt.col_lora);
  t.timed = c_time >= 0;
  const size_t needed = size_t(std::max({c_time, c_in, c_out, c_prio, c_lora})) + 1;
  std::map<std::string, int32_t, std::less<>> lora_ids;
  std::string reason;
  for_each_row(in, rows, t, needed, h, [&](int64_t line, const std::vector<std::string_view>& f) {
    double time = 0;
    int32_t input = 0, output = 0, prio = 0;
    if (t.timed && !parse_double(f[size_t(c_time)], time)) {
      return rows.bad(line, opt.col_arrival, quoted(f[size_t(c_time)]) + " is not a number");
    }
    if (!tokens(f[size_t(c_in)], 1, input, reason)) return rows.bad(line, opt.col_input, reason);
    if (!tokens(f[size_t(c_out)], 1, output, reason)) return rows.bad(line, opt.col_output, reason);
    if (c_prio >= 0 && !priority(f[size_t(c_prio)], prio)) {
      return rows.bad(line, opt.col_priority,
                      quoted(f[size_t(c_prio)]) + " is not a whole number that fits int32");
    }
    int32_t lora = 0;
    if (c_lora >= 0) {
      // An adapter by name, numbered 1, 2, ... as they first appear; none for the base model.
      const std::string_view name = trim(f[size_t(c_lora)]);
      if (!name.empty() && name != "0" && name != "base") {
        auto it = lora_ids.find(name);
        if (it == lora_ids.end()) {
          if (int64_t(lora_ids.size()) >= kMaxLoras) {
            return rows.bad(line, opt.col_lora, "more than 65535 adapters");
          }
          it = lora_ids.emplace(std::string(name), int32_t(lora_ids.size()) + 1).first;
          t.lora_names.emplace_back(name);
        }
        lora = it->second;
      }
    }
    t.push(time * unit, input, output);
    if (c_prio >= 0) t.priority.push_back(prio);
    if (c_lora >= 0) t.lora.push_back(lora);
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

}  // namespace servesim::import_detail
