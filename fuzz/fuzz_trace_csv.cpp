// Fuzz target: the generic CSV trace importer (traces/import.hpp), its columns named as by
// --col-arrival t --col-input in --col-output out --col-priority p --col-lora a; the first byte
// picks the --time-unit and which optional columns are named.
#include "trace_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  servesim::ImportOptions o;
  o.col_arrival = "t";
  o.col_input = "in";
  o.col_output = "out";
  if (data[0] & 4) o.col_priority = "p";
  if (data[0] & 8) o.col_lora = "a";
  const char* units[] = {"s", "ms", "us", "s"};
  o.time_unit = units[data[0] & 3];
  servesim::fuzz::import_one(data + 1, size - 1, "csv", ".csv", o);
  return 0;
}
