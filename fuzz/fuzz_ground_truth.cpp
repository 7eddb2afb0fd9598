// Fuzz target: the ground-truth CSV of `validate` (analysis/validate.hpp).
#include "analysis/validate.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  const std::string path = fuzz::input_file(data, size, ".csv");
  fuzz::expect_errors([&] {
    for (const GroundTruthRow& r : read_ground_truth(path))
      fuzz::fuzz_assert(!r.experiment.empty() && r.tp >= 1, "rows name an experiment and a TP");
  });
  return 0;
}
