// One trace format's fuzz target: the input is a trace file, imported with FORMAT forced (or
// detected when FORMAT is ""). The importer's promise is checked on every trace it accepts: each
// row read is kept or counted as skipped, and the kept ones are valid requests.
#pragma once

#include <cmath>

#include "fuzz_common.hpp"
#include "traces/import.hpp"

namespace servesim::fuzz {

inline void check_trace(const Trace& t) {
  fuzz_assert(t.counts.rows_read == int64_t(t.size()) + t.counts.skipped(),
              "rows_read = kept + skipped");
  for (size_t i = 0; i < t.size(); ++i) {
    // Not bounded by kMaxSimTime_s here: --time-scale may bring a trace into the horizon, which
    // the run checks after the transforms (analysis/run_spec.cpp).
    fuzz_assert(std::isfinite(t.arrival_s[i]) && t.arrival_s[i] >= 0,
                "arrivals are finite and >= 0");
    fuzz_assert(t.input_tokens[i] >= 1 && t.output_tokens[i] >= 1, "lengths are >= 1");
  }
  fuzz_assert(t.lora.empty() || t.lora.size() == t.size(), "an adapter per row");
  for (const int32_t l : t.lora)
    fuzz_assert(l >= 0 && l <= kMaxLoras, "adapter ids in [0, 65535]");
}

inline void import_one(const uint8_t* data, size_t size, const char* format, const char* suffix,
                       ImportOptions o = {}) {
  o.format = format;
  const std::string path = input_file(data, size, suffix);
  expect_errors([&] { check_trace(import_trace(path, o)); });
  o.skip_bad_rows = true;
  expect_errors([&] { check_trace(import_trace(path, o)); });
}

}  // namespace servesim::fuzz
