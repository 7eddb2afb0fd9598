// Fuzz target: a sweep's value lists (analysis/sweep.hpp): "a,b,c" and numeric ranges
// "LO:HI:STEP"; the first byte says whether the flag is numeric. At most a million values.
#include "analysis/sweep.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  if (size == 0) return 0;
  const std::string text(fuzz::as_text(data + 1, size - 1));
  fuzz::expect_errors([&] {
    const auto v = expand_values("seed", text, data[0] & 1);
    fuzz::fuzz_assert(!v.empty() && v.size() <= 1'000'000, "1 to a million values");
    for (const std::string& s : v)
      fuzz::fuzz_assert(!s.empty(), "no empty value");
  });
  fuzz::expect_errors([&] { parse_shard(text); });
  return 0;
}
