// Fuzz target: read_step_log (models/profiles.hpp), a CSV of measured operator or step times.
#include "fuzz_common.hpp"
#include "models/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = servesim::fuzz::input_file(data, size, ".csv");
  servesim::fuzz::expect_errors([&] { servesim::read_step_log(path); });
  return 0;
}
