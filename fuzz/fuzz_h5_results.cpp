// Fuzz target: the results file readers' validation (analysis/results.hpp), as `diagnose` reads
// a run's summary and request log. The template holds two runs of `compare` with histograms; the
// fuzz bytes edit it (h5_mutate.hpp).
#include "analysis/results.hpp"
#include "h5_mutate.hpp"
#include "h5_templates.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  static const std::string tmpl =
      fuzz::template_file("results.h5", {"compare", "--num-requests", "8", "--scheduler",
                                         "vllm-v0,chunked:512", "--out", "{}", "--period-s", "1"});
  const std::string path = fuzz::mutated_copy(tmpl, ".h5", data, size);
  if (path.empty()) return 0;
  fuzz::expect_errors([&] {
    for (const std::string& run : results_runs(path)) {
      fuzz::expect_errors([&] { read_results_summary(path, run); });
      fuzz::expect_errors([&] { read_results_log(path, run); });
    }
  });
  return 0;
}
