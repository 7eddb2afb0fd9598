// A request log CSV (a real service's log, or `servesim run --requests-csv`) read as a
// RequestLog (analysis/windows.hpp), its columns found by header name and converted to seconds
// and milliseconds.
// Promises: bad input throws Error(file, line, field, why); nothing is guessed.
#pragma once

#include <string>

#include "analysis/windows.hpp"

namespace servesim {

// Where a request log CSV keeps each field (header names) and in which units.
struct CsvLogColumns {
  std::string arrival = "arrival_s", ttft = "ttft_ms", latency = "e2e_ms", output = "output_tokens",
              input = "input_tokens", queue = "queue_ms";
  bool input_required = false, queue_required = false;  // else absent = unknown
  double time_to_s = 1;                                 // arrival x this = seconds (1e-3 for ms)
  double latency_to_ms = 1;  // TTFT, latency and queue x this = ms (1e3 for s)
};

// One row per request. Arrival must be a finite number on every row (epoch seconds are fine);
// an empty TTFT or latency marks a request that did not complete (its output and input tokens
// may then be empty too). Latency must be >= TTFT >= 0. Throws Error(file, line, column, why).
RequestLog read_request_log_csv(const std::string& path, const CsvLogColumns& columns);

}  // namespace servesim
