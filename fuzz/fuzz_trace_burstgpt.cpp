// Fuzz target: the burstgpt trace importer (traces/import.hpp).
#include "trace_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  servesim::fuzz::import_one(data, size, "burstgpt", ".csv");
  return 0;
}
