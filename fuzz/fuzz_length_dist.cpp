// Fuzz target: length distribution specs (traces/synthetic.hpp: fixed, uniform, normal,
// lognormal with bounds), and 64 draws from each accepted one, which must lie in its bounds.
#include "fuzz_common.hpp"
#include "traces/synthetic.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  const std::string spec(fuzz::as_text(data, size));
  fuzz::expect_errors([&] {
    const LengthDist d = LengthDist::parse(spec, "input-len");
    for (int32_t v : draw_lengths(d, 64, size))
      fuzz::fuzz_assert(v >= d.min && v <= d.max && v >= 1, "draws lie in [min, max]");
  });
  return 0;
}
