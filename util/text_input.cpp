#include "util/text_input.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include <sys/stat.h>

#include "util/error.hpp"
#include "util/lookup.hpp"
#include "util/output_file.hpp"

namespace servesim {

namespace {
constexpr size_t kBlock = size_t(1) << 20;
constexpr size_t kMaxLine = size_t(1) << 24;

}  // namespace

void write_text_file(const std::string& path, std::string_view text) {
  write_output_file(path, text);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

LineReader::LineReader(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "rb");
  if (f_ == nullptr) throw Error(path, 0, "", std::string("cannot open: ") + std::strerror(errno));
  // A small file gets a buffer its size (it grows for a longer line): a config file or a profile
  // should not cost a zeroed megabyte. Pipes and large files read in 1 MiB blocks.
  struct stat st {};
  size_t block = kBlock;
  if (fstat(fileno(f_), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fclose(f_);
    f_ = nullptr;
    throw Error(path, 0, "", "cannot read: is a directory (expected a regular file)");
  }
  if (fstat(fileno(f_), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0) {
    block = std::clamp<size_t>(size_t(st.st_size) + 1, 4096, kBlock);
  }
  buf_.resize(block);
}

LineReader::~LineReader() {
  if (f_ != nullptr) std::fclose(f_);
}

bool LineReader::fill() {
  if (eof_) return false;
  // Keep the unfinished line, make room, read more.
  const size_t keep = end_ - begin_;
  if (begin_ > 0) std::memmove(buf_.data(), buf_.data() + begin_, keep);
  begin_ = 0;
  end_ = keep;
  if (end_ == buf_.size()) {  // a line longer than the buffer
    if (buf_.size() >= kMaxLine) {
      throw Error(path_, int(line_ + 1), "",
                  "line longer than 16 MiB (a binary file, or bare CR line endings?)");
    }
    buf_.resize(buf_.size() * 2);
  }
  const size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, f_);
  if (got == 0) {
    if (std::ferror(f_)) throw Error(path_, int(line_), "", "read error");
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

int64_t LineReader::estimated_lines() {
  if (end_ == begin_) fill();
  if (end_ == begin_) return 0;
  const int64_t sample = int64_t(end_ - begin_);
  int64_t lines = 0;
  for (size_t i = begin_; i < end_; ++i)
    lines += buf_[i] == '\n';
  const long here = std::ftell(f_);
  std::fseek(f_, 0, SEEK_END);
  const long size = std::ftell(f_);
  std::fseek(f_, here, SEEK_SET);
  if (here < 0 || size < 0 || lines == 0) return lines;
  // The remaining bytes at the sample's density, plus a little slack; never more than a row per
  // 8 bytes (a first block of blank lines must not reserve gigabytes).
  const int64_t estimate =
      lines + int64_t(double(size - here) * double(lines) / double(sample) * 1.02) + 16;
  return std::min<int64_t>(estimate, size / 8 + 16);
}

bool LineReader::next(std::string_view& line) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      const char* stop = static_cast<const char*>(nl);
      size_t len = size_t(stop - start);
      if (len > 0 && start[len - 1] == '\r') --len;
      line = std::string_view(start, len);
      begin_ += size_t(stop - start) + 1;
      ++line_;
      return true;
    }
    if (!fill()) {
      if (begin_ == end_) return false;
      // The last line has no final newline.
      size_t len = end_ - begin_;
      const char* s = buf_.data() + begin_;
      if (len > 0 && s[len - 1] == '\r') --len;
      line = std::string_view(s, len);
      begin_ = end_;
      ++line_;
      return true;
    }
  }
}

bool CsvSplitter::split(std::string_view line, std::vector<std::string_view>& fields,
                        std::string& reason) {
  fields.clear();
  if (line.find('"') == std::string_view::npos) {  // the fast path: no quoting at all
    size_t start = 0;
    for (;;) {
      const size_t comma = line.find(',', start);
      if (comma == std::string_view::npos) {
        fields.push_back(line.substr(start));
        return true;
      }
      fields.push_back(line.substr(start, comma - start));
      start = comma + 1;
    }
  }
  size_t used = 0;  // unescaped_ buffers in use
  size_t i = 0;
  for (;;) {
    while (i < line.size() && line[i] == ' ')
      ++i;
    if (i < line.size() && line[i] == '"') {
      if (used == unescaped_.size()) unescaped_.emplace_back();
      std::string& text = unescaped_[used++];
      text.clear();
      ++i;
      for (;;) {
        if (i >= line.size()) {
          reason = "unterminated quoted field";
          return false;
        }
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            text.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        text.push_back(line[i++]);
      }
      while (i < line.size() && line[i] == ' ')
        ++i;
      fields.push_back(text);
      if (i == line.size()) return true;
      if (line[i] != ',') {
        reason = "text after a closing quote";
        return false;
      }
      ++i;
    } else {
      const size_t comma = line.find(',', i);
      fields.push_back(line.substr(i, comma == std::string_view::npos ? line.npos : comma - i));
      if (comma == std::string_view::npos) return true;
      i = comma + 1;
    }
  }
}

bool parse_int(std::string_view s, int64_t& v) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return true;
  // Accept an integral value written as a float ("12.0").
  double d = 0;
  if (!parse_double(s, d) || d != std::floor(d) || std::abs(d) > 9e15) return false;
  v = int64_t(d);
  return true;
}

bool parse_double(std::string_view s, double& v) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
}

namespace {

bool digits(std::string_view s, size_t pos, size_t n, int& v) {
  if (pos + n > s.size()) return false;
  v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  return true;
}

// Days from 1970-01-01 to Y-M-D in the proleptic Gregorian calendar (H. Hinnant's algorithm).
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

}  // namespace

bool parse_datetime_ns(std::string_view s, int64_t& ns) {
  s = trim(s);
  int y, mo, d, h, mi, sec;
  if (!digits(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != ' ' && s[10] != 'T') || !digits(s, 11, 2, h) ||
      s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, sec)) {
    return false;
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  // Nanoseconds since 1970 fit int64 between 1678 and 2261.
  if (y < 1678 || y > 2261 || mo < 1 || mo > 12 || d < 1 ||
      d > kDays[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 || sec > 60) {
    return false;
  }
  size_t i = 19;
  int64_t frac_ns = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int64_t scale = 100000000;
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (i - start < 9) {
        frac_ns += (s[i] - '0') * scale;
        scale /= 10;
      }
      ++i;
    }
    if (i == start) return false;
  }
  int64_t offset_s = 0;
  if (i < s.size()) {
    if (s[i] == 'Z' && i + 1 == s.size()) {
      ++i;
    } else if ((s[i] == '+' || s[i] == '-') && s.size() == i + 6 && s[i + 3] == ':') {
      int oh, om;
      if (!digits(s, i + 1, 2, oh) || !digits(s, i + 4, 2, om) || oh > 23 || om > 59) return false;
      offset_s = (s[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
      i += 6;
    } else {
      return false;
    }
  }
  const int64_t seconds = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_s;
  ns = seconds * 1000000000 + frac_ns;
  return true;
}

int CsvHeader::find(std::string_view name, bool ignore_case) const {
  const std::string want = ignore_case ? lowercase(name) : std::string(name);
  for (size_t i = 0; i < names.size(); ++i) {
    if ((ignore_case ? lowercase(names[i]) : names[i]) == want) return int(i);
  }
  return -1;
}

std::string CsvHeader::joined() const {
  std::string s;
  for (const std::string& n : names)
    s.append(s.empty() ? "" : ", ").append(n);
  return s;
}

CsvHeader read_csv_header(std::string_view line, const std::string& path, int64_t line_number) {
  CsvHeader h;
  std::vector<std::string_view> fields;
  std::string reason;
  CsvSplitter split;
  if (!split.split(line, fields, reason)) {
    throw Error(path, int(line_number), "", "header: " + reason);
  }
  for (std::string_view f : fields)
    h.names.emplace_back(clean_header_name(f));
  return h;
}

std::string_view clean_header_name(std::string_view s) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return trim(s);
}

}  // namespace servesim
