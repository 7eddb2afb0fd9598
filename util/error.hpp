// servesim::Error: the one error type for bad input at the boundary (command line, config and
// catalogue files, traces). It carries where the problem is (file, line, field) and why, so the
// CLI can print one clear line and exit with status 2. Past the boundary, invariants are
// asserted, not re-checked.
// Below cli/, FIELD is a field path (util/field_path.hpp) and a REASON may refer to another
// setting as field::ref(path); the installed FieldSpeller turns both into the user's spelling as
// the error is made, and path() keeps the path.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "util/field_path.hpp"

namespace servesim {

class Error : public std::runtime_error {
 public:
  // A problem not tied to a file, e.g. a command-line flag: "field 'X': reason".
  Error(std::string field, std::string reason)
      : Error("", 0, std::move(field), std::move(reason)) {}

  // A problem at FILE:LINE (line 0 when the whole file is at fault).
  Error(std::string file, int line, std::string field, std::string reason)
      : Error(Spelled{}, std::move(file), line, spell_field(field), field, spell_refs(reason)) {}

  // This error with its field shown as NAME (the user's own spelling of it), its path kept.
  Error named(std::string name) const {
    return Error(Spelled{}, file_, line_, std::move(name), path_, reason_);
  }

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }
  // The field as the code that threw named it: a field path below cli/ (field() is its spelling).
  const std::string& path() const { return path_; }

 private:
  struct Spelled {};
  Error(Spelled, std::string file, int line, std::string field, std::string path,
        std::string reason)
      : std::runtime_error(format(file, line, field, reason)),
        file_(std::move(file)),
        line_(line),
        field_(std::move(field)),
        path_(std::move(path)),
        reason_(std::move(reason)) {}

  // Appends at most MAX bytes of TEXT to S (cut at a UTF-8 character boundary, with the number of
  // bytes left out), control characters escaped: a NUL would end the message where it is printed,
  // a bare CR would overwrite it on a terminal, and a 20 MB key is no help to anyone.
  static void append_printable(std::string& s, const std::string& text, size_t max) {
    size_t n = std::min(text.size(), max);
    while (n < text.size() && n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80)
      --n;
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c == '\r') {
        s.append("\\r");
      } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
        s.append("\\x").push_back(hex[c >> 4]);
        s.push_back(hex[c & 15]);
      } else {
        s.push_back(char(c));
      }
    }
    if (n < text.size())
      s.append("... (").append(std::to_string(text.size() - n)).append(" more bytes)");
  }

  // Built with append(): GCC 12 warns falsely (-Wrestrict, PR105329) on chained operator+.
  static std::string format(const std::string& file, int line, const std::string& field,
                            const std::string& reason) {
    std::string s;
    if (!file.empty()) {
      append_printable(s, file, 4096);
      if (line > 0) s.append(":").append(std::to_string(line));
      s.append(": ");
    }
    if (!field.empty()) {
      s.append("field '");
      append_printable(s, field, 200);
      s.append("': ");
    }
    append_printable(s, reason, 8192);
    return s;
  }

  std::string file_;
  int line_ = 0;
  std::string field_;
  std::string path_;
  std::string reason_;
};

}  // namespace servesim
