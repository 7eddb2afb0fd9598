// CsvFile: a CSV file read by header name, row by row, with errors naming the file, line and
// column. Shared by the profile readers and the ground-truth reader.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"
#include "util/format.hpp"
#include "util/text_input.hpp"

namespace servesim {

class CsvFile {
 public:
  explicit CsvFile(const std::string& path) : path_(path), in_(path) {
    std::string_view line;
    if (!in_.next(line)) throw Error(path, 0, "", "empty file");
    header_ = read_csv_header(line, path, 1);
  }
  int col(const std::string& name, bool required = true) const {
    const int i = header_.find(name);
    if (i < 0 && required) throw Error(path_, 1, name, "missing column");
    return i;
  }
  bool next() {
    std::string_view line;
    std::string reason;
    do {
      if (!in_.next(line)) return false;
    } while (line.find_first_not_of(" \t") == std::string_view::npos);
    if (!split_.split(line, fields_, reason))
      throw Error(path_, int(in_.line_number()), "", reason);
    return true;
  }
  // The field of column C ("" when the row is short).
  std::string_view text(int c) const {
    return c >= 0 && size_t(c) < fields_.size() ? clean_header_name(fields_[size_t(c)])
                                                : std::string_view();
  }
  double number(int c) const {
    double v = 0;
    if (!parse_double(text(c), v)) {
      throw Error(path_, int(in_.line_number()), header_.names[size_t(c)],
                  "'" + std::string(text(c).substr(0, 40)) + "' is not a number");
    }
    return v;
  }
  // A whole number in [LO, HI]; Error naming the line and column otherwise.
  int64_t integer(int c, int64_t lo, int64_t hi) const {
    const double v = number(c);
    if (v != std::floor(v) || v < double(lo) || v > double(hi)) {
      throw Error(
          path_, line(), header_.names[size_t(c)],
          "must be a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return int64_t(v);
  }
  // A number in [LO, HI] (UNIT names its unit in the message); Error naming the line otherwise.
  double bounded(int c, double lo, double hi, const char* unit) const {
    const double v = number(c);
    if (!(v >= lo && v <= hi)) {
      throw Error(path_, line(), header_.names[size_t(c)],
                  format("must be in [%g, %g] %s", lo, hi, unit));
    }
    return v;
  }
  // A measured time in milliseconds: 1 ns to about 3 hours. A subnormal time would make every
  // relative error infinite.
  double measured_ms(int c) const { return bounded(c, 1e-6, 1e7, "ms"); }
  // A message size in bytes: 1 byte to 1 PB.
  double size_bytes(int c) const { return bounded(c, 1, 1e15, "bytes"); }
  bool has_number(int c) const {
    double v = 0;
    return parse_double(text(c), v);
  }
  const std::string& path() const { return path_; }
  int line() const { return int(in_.line_number()); }
  const std::string& name(int c) const { return header_.names[size_t(c)]; }

 private:
  std::string path_;
  LineReader in_;
  CsvSplitter split_;
  std::vector<std::string_view> fields_;
  CsvHeader header_;
};

}  // namespace servesim
