// Fuzz target: a ServeGen client (traces/servegen.hpp): the input is the window CSV, then a NUL
// byte, then the dataset JSON beside it. An accepted client generates an hour of requests at a
// tenth of its rates (at most 20,000: a fuzzed rate of 1e9 req/s must not time out).
#include <algorithm>
#include <cmath>

#include "fuzz_common.hpp"
#include "traces/servegen.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  const std::string_view text = fuzz::as_text(data, size);
  const size_t nul = std::min(text.find('\0'), text.size());
  const std::string csv = fuzz::scratch_path("_c-trace.csv");
  fuzz::write_bytes(csv, text.substr(0, nul));
  fuzz::write_bytes(fuzz::scratch_path("_c-dataset.json"),
                    nul < text.size() ? text.substr(nul + 1) : std::string_view());
  fuzz::expect_errors([&] {
    const ServeGenClient c = load_servegen_client(csv);
    double requests = 0;
    for (const ServeGenWindow& w : c.windows) {
      fuzz::fuzz_assert(std::isfinite(w.rate) && w.rate >= 0, "window rates are finite");
      if (w.start_s < 3600) requests += w.rate * c.window_s * 0.1;
    }
    if (requests > 20000) return;
    ServeGenOptions o;
    o.rate_scale = 0.1;
    const Workload wl = generate_servegen({c}, o);
    for (const RequestSpec& r : wl)
      fuzz::fuzz_assert(r.input_tokens >= 1 && r.output_tokens >= 1, "lengths are >= 1");
  });
  return 0;
}
