// format(): printf into a std::string of any length (a long path or number is never cut), for
// reports built line by line.
#pragma once

#include <cstdio>
#include <string>

namespace servesim {

template <typename... T>
std::string format(const char* spec, T... args) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, spec, args...);
  if (n < 0) return "";
  if (n < int(sizeof buf)) return buf;
  std::string s(size_t(n) + 1, '\0');
  std::snprintf(s.data(), s.size(), spec, args...);
  s.resize(size_t(n));
  return s;
}

}  // namespace servesim
