// Fuzz target: the check gate's spec reader (analysis/check.hpp): sections, the baseline, every
// tolerance's sign, number and unit. An accepted spec has a baseline, a scenario and tolerances
// that say which way is bad.
#include <cmath>

#include "analysis/check.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  if (size == 0) return 0;
  const bool update = data[0] & 1;
  const std::string path = fuzz::input_file(data + 1, size - 1, ".ini");
  fuzz::expect_errors([&] {
    const CheckSpec s = read_check_spec(path, update);
    fuzz::fuzz_assert(!s.baseline.empty() && !s.scenarios.empty(), "a baseline and a scenario");
    for (const Tolerance& t : s.tolerances)
      fuzz::fuzz_assert(t.amount >= 0 && std::isfinite(t.amount), "a finite tolerance >= 0");
  });
  return 0;
}
