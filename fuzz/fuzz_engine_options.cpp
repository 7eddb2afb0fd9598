// Fuzz target: the vLLM engine features' own parsers (analysis/engine_options.hpp). The input's
// first line names the parser and its plain-text argument, "speculative ACCEPTANCE"; the rest is
// the flag's JSON. What a parser accepts must keep its promises (rates in [0, 1],
// non-increasing, one per draft).
#include <cmath>

#include "analysis/engine_options.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  const std::string text(fuzz::as_text(data, size));
  const size_t eol = text.find('\n');
  const std::string head = text.substr(0, eol);
  const std::string body = eol == std::string::npos ? "" : text.substr(eol + 1);
  const size_t space = head.find(' ');
  const std::string parser = head.substr(0, space);
  const std::string arg = space == std::string::npos ? "" : head.substr(space + 1);
  if (parser == "speculative") {
    fuzz::expect_errors([&] {
      const SpeculativeOptions o = parse_speculative_config(body, arg);
      if (!o.enabled()) return;
      fuzz::fuzz_assert(o.num_speculative_tokens >= 1 &&
                            int(o.acceptance_rates.size()) == o.num_speculative_tokens,
                        "one rate per draft");
      for (size_t i = 0; i < o.acceptance_rates.size(); ++i) {
        const double r = o.acceptance_rates[i];
        fuzz::fuzz_assert(r >= 0 && r <= 1, "rates in [0, 1]");
        fuzz::fuzz_assert(i == 0 || r <= o.acceptance_rates[i - 1], "rates do not increase");
      }
    });
  }
  return 0;
}
