// Reading a request log CSV into a RequestLog (analysis/request_log_csv.hpp).
#include "analysis/request_log_csv.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "analysis/diagnose_util.hpp"
#include "util/error.hpp"
#include "util/text_input.hpp"

namespace servesim {

namespace {

// The index of each field's column; -1 for an optional column the header lacks.
struct ColumnIndex {
  int arrival = -1, ttft = -1, latency = -1, output = -1, input = -1, queue = -1;
};

// Reads one file front to back: the header, then a request per non-blank line. Knows the line
// it is on, for messages.
class LogCsvReader {
 public:
  LogCsvReader(const std::string& path, const CsvLogColumns& columns)
      : path_(path), c_(columns), in_(path) {}
  LogCsvReader(const LogCsvReader&) = delete;
  LogCsvReader& operator=(const LogCsvReader&) = delete;

  RequestLog read();

 private:
  std::string_view header_line();
  void find_columns(std::string_view header);
  int column(const CsvHeader& h, const std::string& name, const char* flag, bool required) const;
  void reserve(RequestLog& log);
  void split(std::string_view line);
  void read_row(RequestLog& log);
  double real(int i, const std::string& field, double scale, bool allow_empty) const;
  double duration_ms(int i, const std::string& field) const;
  int64_t tokens(int i, const std::string& field, bool done) const;

  const std::string& path_;
  const CsvLogColumns& c_;
  LineReader in_;
  int line_ = 0;      // of the header, then of the row being read
  size_t width_ = 0;  // columns in the header
  ColumnIndex i_;
  CsvSplitter splitter_;
  std::vector<std::string_view> fields_;
  std::string reason_;
};

RequestLog LogCsvReader::read() {
  find_columns(header_line());
  RequestLog log;
  log.source = path_;
  reserve(log);
  std::string_view line;
  while (in_.next(line)) {
    if (trim(line).empty()) continue;
    line_ = int(in_.line_number());
    split(line);
    read_row(log);
  }
  if (log.size() == 0) throw Error(path_, 0, "", "no requests after the header");
  return log;
}

// The first non-blank line.
std::string_view LogCsvReader::header_line() {
  std::string_view line;
  while (in_.next(line)) {
    if (!trim(line).empty()) return line;
  }
  throw Error(path_, 0, "", "empty file: expected a CSV header line");
}

void LogCsvReader::find_columns(std::string_view header) {
  line_ = int(in_.line_number());
  const CsvHeader h = read_csv_header(header, path_, line_);
  width_ = h.names.size();
  i_.arrival = column(h, c_.arrival, "col-arrival", true);
  i_.ttft = column(h, c_.ttft, "col-ttft", true);
  i_.latency = column(h, c_.latency, "col-latency", true);
  i_.output = column(h, c_.output, "col-output", true);
  i_.input = column(h, c_.input, "col-input", c_.input_required);
  i_.queue = column(h, c_.queue, "col-queue", c_.queue_required);
}

// The index of column NAME; -1 when it is absent and not REQUIRED. FLAG renames it.
int LogCsvReader::column(const CsvHeader& h, const std::string& name, const char* flag,
                         bool required) const {
  const int i = h.find(name);
  if (i >= 0 || !required) return i;
  throw Error(path_, line_, name,
              "no such column (the header has: " + h.joined() + "); name it with --" + flag);
}

void LogCsvReader::reserve(RequestLog& log) {
  const size_t expect = size_t(std::max<int64_t>(in_.estimated_lines(), 1));
  log.arrival_s.reserve(expect);
  log.ttft_ms.reserve(expect);
  log.e2e_ms.reserve(expect);
  log.output_tokens.reserve(expect);
  if (i_.input >= 0) log.input_tokens.reserve(expect);
  if (i_.queue >= 0) log.queue_ms.reserve(expect);
}

// LINE into fields_, one per header column.
void LogCsvReader::split(std::string_view line) {
  if (!splitter_.split(line, fields_, reason_)) throw Error(path_, line_, "", reason_);
  if (fields_.size() != width_) {
    throw Error(path_, line_, "", format("%zu fields, the header has %zu", fields_.size(), width_));
  }
}

void LogCsvReader::read_row(RequestLog& log) {
  const double arrival = real(i_.arrival, c_.arrival, c_.time_to_s, false);
  double ttft = duration_ms(i_.ttft, c_.ttft);
  double e2e = duration_ms(i_.latency, c_.latency);
  const bool done = std::isfinite(ttft) && std::isfinite(e2e);
  if (done && e2e < ttft) {
    throw Error(path_, line_, c_.latency, format("latency %g ms is below TTFT %g ms", e2e, ttft));
  }
  if (!done) ttft = e2e = NAN;  // started, or non-streaming: not a completed stream
  log.arrival_s.push_back(arrival);
  log.ttft_ms.push_back(ttft);
  log.e2e_ms.push_back(e2e);
  log.output_tokens.push_back(tokens(i_.output, c_.output, done));
  if (i_.input >= 0) log.input_tokens.push_back(tokens(i_.input, c_.input, done));
  if (i_.queue >= 0) log.queue_ms.push_back(duration_ms(i_.queue, c_.queue));
}

// Field I x SCALE; NaN when it is empty and ALLOW_EMPTY.
double LogCsvReader::real(int i, const std::string& field, double scale, bool allow_empty) const {
  const std::string_view text = trim(fields_[size_t(i)]);
  if (text.empty() && allow_empty) return NAN;
  double v = 0;
  if (!parse_double(text, v)) {
    throw Error(path_, line_, field, "'" + std::string(text) + "' is not a finite number");
  }
  return v * scale;
}

// Field I in ms (>= 0), or NaN when empty.
double LogCsvReader::duration_ms(int i, const std::string& field) const {
  const double v = real(i, field, c_.latency_to_ms, true);
  if (v < 0) throw Error(path_, line_, field, format("%g is negative", v));
  return v;
}

// Field I as a token count >= 0; 0 when it is empty on a request that did not complete (DONE).
int64_t LogCsvReader::tokens(int i, const std::string& field, bool done) const {
  const std::string_view text = trim(fields_[size_t(i)]);
  if (text.empty() && !done) return 0;
  int64_t v = 0;
  if (!parse_int(text, v) || v < 0) {
    throw Error(path_, line_, field, "'" + std::string(text) + "' is not a token count >= 0");
  }
  return v;
}

}  // namespace

RequestLog read_request_log_csv(const std::string& path, const CsvLogColumns& columns) {
  return LogCsvReader(path, columns).read();
}

}  // namespace servesim
