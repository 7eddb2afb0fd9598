// Fuzz target: load_gpu_file (models/gpu.hpp), a file of fixed, typed keys with physical ranges.
#include "fuzz_common.hpp"
#include "models/gpu.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = servesim::fuzz::input_file(data, size, ".ini");
  servesim::fuzz::expect_errors([&] { servesim::load_gpu_file(path); });
  return 0;
}
