// servesim::Error: the one error type for bad input at the boundary (command line, config and
// catalogue files, traces). It carries where the problem is (file, line, field) and why, so the
// CLI can print one clear line and exit with status 2. Past the boundary, invariants are
// asserted, not re-checked.
#pragma once

#include <stdexcept>
#include <string>

namespace servesim {

class Error : public std::runtime_error {
 public:
  // A problem not tied to a file, e.g. a command-line flag: "field 'X': reason".
  Error(std::string field, std::string reason)
      : std::runtime_error(format("", 0, field, reason)),
        field_(std::move(field)),
        reason_(std::move(reason)) {}

  // A problem at FILE:LINE (line 0 when the whole file is at fault).
  Error(std::string file, int line, std::string field, std::string reason)
      : std::runtime_error(format(file, line, field, reason)),
        file_(std::move(file)),
        line_(line),
        field_(std::move(field)),
        reason_(std::move(reason)) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 private:
  // Built with append(): GCC 12 warns falsely (-Wrestrict, PR105329) on chained operator+.
  static std::string format(const std::string& file, int line, const std::string& field,
                            const std::string& reason) {
    std::string s;
    if (!file.empty()) {
      s.append(file);
      if (line > 0) s.append(":").append(std::to_string(line));
      s.append(": ");
    }
    if (!field.empty()) s.append("field '").append(field).append("': ");
    return s.append(reason);
  }

  std::string file_;
  int line_ = 0;
  std::string field_;
  std::string reason_;
};

}  // namespace servesim
