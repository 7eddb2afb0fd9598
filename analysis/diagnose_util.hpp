// Small helpers the diagnose files share: a test for a finite positive number, and the printf-style
// number formatting of diagnose's text (one decimal, "-" or "n/a" for undefined values, so that a
// NaN never prints as "nan").
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace servesim::diagnose_util {

inline bool positive(double x) {
  return std::isfinite(x) && x > 0;
}

// snprintf into a std::string; a long path or number is never cut.
template <typename... T>
std::string fmt(const char* format, T... args) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, format, args...);
  if (n < int(sizeof buf)) return buf;
  std::string s(size_t(n) + 1, '\0');
  std::snprintf(s.data(), s.size(), format, args...);
  s.resize(size_t(n));
  return s;
}

// A relative change as "+12.3%", "up from 0" / "down from 0" when infinite, "n/a" when undefined.
inline std::string pct(double r) {
  if (std::isinf(r)) return r > 0 ? "up from 0" : "down from 0";
  return std::isfinite(r) ? fmt("%+.1f%%", r * 100) : "n/a";
}

// X with DECIMALS decimals, or "-" when undefined.
inline std::string num(double x, int decimals) {
  return std::isfinite(x) ? fmt("%.*f", decimals, x) : "-";
}

// X with a sign and DECIMALS decimals, or "-" when undefined.
inline std::string signed_num(double x, int decimals) {
  return std::isfinite(x) ? fmt("%+.*f", decimals, x) : "-";
}

}  // namespace servesim::diagnose_util
