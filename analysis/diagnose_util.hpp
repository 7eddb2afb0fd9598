// Small helpers the diagnose files share: a test for a finite positive number, and the printf-style
// number formatting of diagnose's text (one decimal, "-" or "n/a" for undefined values, so that a
// NaN never prints as "nan").
#pragma once

#include <cmath>
#include <string>

#include "util/format.hpp"

namespace servesim::diagnose_util {

inline bool positive(double x) {
  return std::isfinite(x) && x > 0;
}

// A relative change as "+12.3%", "up from 0" / "down from 0" when infinite, "n/a" when undefined.
inline std::string pct(double r) {
  if (std::isinf(r)) return r > 0 ? "up from 0" : "down from 0";
  return std::isfinite(r) ? format("%+.1f%%", r * 100) : "n/a";
}

// X with DECIMALS decimals, or "-" when undefined.
inline std::string num(double x, int decimals) {
  return std::isfinite(x) ? format("%.*f", decimals, x) : "-";
}

// X with a sign and DECIMALS decimals, or "-" when undefined.
inline std::string signed_num(double x, int decimals) {
  return std::isfinite(x) ? format("%+.*f", decimals, x) : "-";
}

}  // namespace servesim::diagnose_util
