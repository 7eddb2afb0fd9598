// Fuzz target: the detect trace importer (traces/import.hpp), the format read off the file.
#include "trace_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  servesim::fuzz::import_one(data, size, "", ".csv");
  return 0;
}
