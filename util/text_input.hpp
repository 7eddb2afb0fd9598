// Reading text traces fast: a LineReader that streams a file in large blocks and hands out lines
// (LF or CRLF, last line with or without a newline) with their numbers, a CSV field splitter with
// RFC 4180 quoting, and the number and date parsers the importers share. Nothing here allocates
// per line once warm, so a 20-million-row CSV parses at millions of rows a second.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace servesim {

class LineReader {
 public:
  // Throws Error(path, 0, ...) when the file cannot be read.
  explicit LineReader(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its terminator; false at the end of the file.
  bool next(std::string_view& line);
  int64_t line_number() const { return line_; }  // of the line last returned, 1-based
  // Lines in the whole file, extrapolated from the first block read (to reserve columns once
  // instead of growing them: less copying, and peak memory close to the final size).
  int64_t estimated_lines();

 private:
  bool fill();
  std::string path_;
  std::FILE* f_ = nullptr;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  int64_t line_ = 0;
};

// Splits one CSV line into fields. Quoted fields may hold commas and "" for a quote (RFC 4180
// within a line; a newline inside quotes is not supported); their unescaped text lives in the
// splitter until the next call. Returns false (with REASON) on a
// malformed line, e.g. an unterminated quote.
class CsvSplitter {
 public:
  bool split(std::string_view line, std::vector<std::string_view>& fields, std::string& reason);

 private:
  std::deque<std::string> unescaped_;  // a deque: growing it never moves the strings fields view
};

// Writes TEXT to PATH as write_output_file does (util/output_file.hpp): through a temp file and a
// rename, never over anything but a regular file; a failure is an Error naming PATH and why.
void write_text_file(const std::string& path, std::string_view text);

// Whole-field parsers: the entire text must be the number (surrounding spaces allowed).
bool parse_int(std::string_view s, int64_t& v);
bool parse_double(std::string_view s, double& v);  // finite only

// "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]" ('T' may separate date and time; 0 to 9
// fractional digits; years 1678-2261) to nanoseconds since 1970-01-01 (UTC when a zone is given,
// else as written).
bool parse_datetime_ns(std::string_view s, int64_t& ns);

// S without leading and trailing spaces and tabs.
std::string_view trim(std::string_view s);

// Trims spaces, a UTF-8 byte-order mark and surrounding quotes from a header name.
std::string_view clean_header_name(std::string_view s);

// The header line of a CSV file: its cleaned column names, looked up by name. Shared by the
// trace importers, the profile readers and diagnose's request logs.
struct CsvHeader {
  std::vector<std::string> names;

  // The index of column NAME, or -1. IGNORE_CASE: as the trace importers match.
  int find(std::string_view name, bool ignore_case = false) const;
  std::string joined() const;  // "a, b, c", for messages
};

// Splits LINE, line LINE_NUMBER of PATH, into a header; Error naming the line when it is not
// valid CSV.
CsvHeader read_csv_header(std::string_view line, const std::string& path, int64_t line_number);

}  // namespace servesim
