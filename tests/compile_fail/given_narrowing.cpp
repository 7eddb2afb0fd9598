// Compiled by ctest (compile_fail.given_narrowing*) with the project's warnings as errors: a
// Given setting converted on to a narrower type, as `given() ? rate : 0` truncated
// --request-rate (issue 42), must not build. Each NARROWING case is one ctest entry that must
// fail to compile; the file without NARROWING must compile, so that the failures are the
// narrowing's and nothing else's.
#include <cstdint>

#include "analysis/run_spec.hpp"

using servesim::Given;

double rate(const Given<double>& r, bool given) {
#if NARROWING == 1
  return given ? r : 0;  // Given<double> -> int: -Wfloat-conversion
#elif NARROWING == 2
  int n = r;  // -Wfloat-conversion
  return given ? n : 0.0;
#elif NARROWING == 3
  const Given<int64_t> seed{int64_t(1) << 40};
  int s = seed;  // -Wshorten-64-to-32 (Clang) / -Wconversion's narrowing (GCC: see CMakeLists)
  return s + (given ? *r : 0.0);
#else
  return given ? *r : 0.0;
#endif
}
