// Fuzz target: read_calibration (models/calibration.hpp), a file of fixed, typed keys with physical
// ranges.
#include "fuzz_common.hpp"
#include "models/calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = servesim::fuzz::input_file(data, size, ".ini");
  servesim::fuzz::expect_errors([&] { servesim::read_calibration(path); });
  return 0;
}
