// What every trace importer shares (internal to traces/import*.cpp): the bad-row policy, the
// counts and the time-order check (Rows), token counts and blank lines, a CSV trace's header with
// its columns found by case-insensitive name, and the loop over a CSV trace's data rows.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "traces/import.hpp"
#include "traces/trace.hpp"
#include "util/error.hpp"
#include "util/text_input.hpp"

namespace servesim::import_detail {

inline constexpr size_t kMaxReasons = 5;  // bad-row reasons kept in Trace::first_errors

// A value quoted in a message, cut short: a bad field may be megabytes long.
std::string quoted(std::string_view s);

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
  // bad(), then false: for checks that return whether a row is kept.
  bool fail(int64_t line, const std::string& field, const std::string& reason) {
    bad(line, field, reason);
    return false;
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

// Token counts: whole numbers >= MIN that fit int32; false with REASON otherwise.
bool tokens(std::string_view s, int64_t min, int32_t& out, std::string& reason);

// Spaces and tabs only: a line that holds no request.
bool blank(std::string_view line);

// The header of a CSV trace: column index by case-insensitive name.
struct Header : CsvHeader {
  std::string text;  // for messages, cut short
  int find(std::string_view name) const { return CsvHeader::find(name, true); }
  bool has(std::string_view name) const { return find(name) >= 0; }
};

// LINE, line LINE_NUMBER of PATH, as a trace's header.
Header parse_header(std::string_view line, const std::string& path, int64_t line_number);

// The index of column NAME; Error naming the header when it has none.
int require(const Header& h, const std::string& path, const std::string& name);

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

}  // namespace servesim::import_detail
