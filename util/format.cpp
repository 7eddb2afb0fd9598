#include "util/format.hpp"

#include <cstdarg>
#include <cstdio>

namespace servesim {

std::string format(const char* spec, ...) {
  char buf[256];
  va_list args;
  va_start(args, spec);
  const int n = std::vsnprintf(buf, sizeof buf, spec, args);
  va_end(args);
  if (n < 0) return "";
  if (n < int(sizeof buf)) return buf;
  std::string s(size_t(n) + 1, '\0');
  va_start(args, spec);
  std::vsnprintf(s.data(), s.size(), spec, args);
  va_end(args);
  s.resize(size_t(n));
  return s;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

}  // namespace servesim
