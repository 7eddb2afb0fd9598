// Fuzz target: --client-mix (traces/datasets.hpp), and 200 requests from each accepted mixture,
// which must come sorted with valid lengths.
#include <cmath>

#include "fuzz_common.hpp"
#include "traces/datasets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  const std::string text(fuzz::as_text(data, size));
  fuzz::expect_errors([&] {
    const auto classes = parse_client_mix(text);
    const Workload w = generate_client_mixture(classes, 200, 1, 7);
    for (size_t i = 0; i < w.size(); ++i) {
      const RequestSpec& r = w[i];
      fuzz::fuzz_assert(std::isfinite(r.arrival_s) && r.input_tokens >= 1 && r.output_tokens >= 1,
                        "finite arrivals, lengths >= 1");
      fuzz::fuzz_assert(i == 0 || w[i - 1].arrival_s <= r.arrival_s, "sorted arrivals");
    }
  });
  return 0;
}
