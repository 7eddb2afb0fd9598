// Fuzz target: the vLLM engine features' own parsers (analysis/engine_options.hpp). The input's
// first line names the parser and its plain-text arguments, "speculative ACCEPTANCE" or
// "offload SIZE_GIB BACKEND"; the rest is the flag's JSON. What a parser accepts must keep its
// promises (rates in [0, 1], non-increasing, one per draft; a tier of positive finite bytes).
#include <cmath>
#include <exception>
#include <string>

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
  if (parser == "offload") {
    const size_t space2 = arg.find(' ');
    double size = 0;
    try {
      size = std::stod(arg.substr(0, space2));
    } catch (const std::exception&) {
      return 0;
    }
    const std::string backend = space2 == std::string::npos ? "" : arg.substr(space2 + 1);
    fuzz::expect_errors([&] {
      const KvOffloadOptions o = parse_kv_offload(size, backend, body);
      if (!o.enabled()) return;
      fuzz::fuzz_assert(o.cpu_bytes > 0 && std::isfinite(o.cpu_bytes), "a tier of bytes > 0");
      fuzz::fuzz_assert(o.block_size >= 0, "block size >= 0");
    });
  }
  return 0;
}
