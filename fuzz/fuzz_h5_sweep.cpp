// Fuzz target: the sweep file reader's validation (analysis/sweep.hpp), as `sweep merge` and the
// plots read it. The template is a 2-point sweep; the fuzz bytes edit it (h5_mutate.hpp).
#include "analysis/sweep.hpp"
#include "h5_mutate.hpp"
#include "h5_templates.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  static const std::string tmpl =
      fuzz::template_file("sweep.h5", {"sweep", "--num-requests", "6", "--scheduler",
                                       "vllm-v0,chunked:512", "--jobs", "1", "--out", "{}"});
  const std::string path = fuzz::mutated_copy(tmpl, ".h5", data, size);
  if (path.empty()) return 0;
  fuzz::expect_errors([&] { read_sweep_h5(path); });
  return 0;
}
