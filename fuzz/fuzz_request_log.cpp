// Fuzz target: a request log CSV for `diagnose` (analysis/request_log_csv.hpp); the first byte
// picks the units (arrival in s or ms, latencies in ms or s) and whether input and queue columns
// are required.
#include "analysis/request_log_csv.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  if (size == 0) return 0;
  CsvLogColumns c;
  if (data[0] & 1) c.time_to_s = 1e-3;
  if (data[0] & 2) c.latency_to_ms = 1e3;
  c.input_required = data[0] & 4;
  c.queue_required = data[0] & 8;
  const std::string path = fuzz::input_file(data + 1, size - 1, ".csv");
  fuzz::expect_errors([&] { read_request_log_csv(path, c); });
  return 0;
}
