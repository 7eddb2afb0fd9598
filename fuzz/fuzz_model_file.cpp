// Fuzz target: load_model_file (models/model.hpp), a file of fixed, typed keys with physical
// ranges.
#include "fuzz_common.hpp"
#include "models/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = servesim::fuzz::input_file(data, size, ".ini");
  servesim::fuzz::expect_errors([&] { servesim::load_model_file(path); });
  return 0;
}
