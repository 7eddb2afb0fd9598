// Fuzz target: --timeline-window START:END (analysis/timeline.hpp).
#include <cmath>

#include "analysis/timeline.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  const std::string text(fuzz::as_text(data, size));
  fuzz::expect_errors([&] {
    const auto [from, to] = parse_timeline_window(text);
    fuzz::fuzz_assert(std::isfinite(from) && std::isfinite(to) && to > from && from >= 0,
                      "0 <= START < END, finite");
  });
  return 0;
}
