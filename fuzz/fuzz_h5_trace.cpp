// Fuzz target: the HDF5 trace reader's validation (traces/trace_store.hpp). The first byte picks
// the template (prefix hash ids; BurstGPT sessions and classes; spans from --input-trim; a plain
// synthetic trace); the rest edits it (h5_mutate.hpp). A trace the reader accepts must keep its
// promises (trace_target.hpp's check_trace).
#include "h5_mutate.hpp"
#include "h5_templates.hpp"
#include "trace_target.hpp"
#include "traces/trace_store.hpp"

namespace {

const char* kMooncake =
    "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
    "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 7, \"hash_ids\": [0, 2]}\n"
    "{\"timestamp\": 1500, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [3]}\n";
const char* kBurstGpt =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID,Elapsed time\n"
    "5.0,ChatGPT,472,18,490,Conversation log,1,2.0\n"
    "45.0,ChatGPT,1087,0,1087,Conversation log,1,3.0\n"
    "118.0,GPT-4,417,276,693,API log,,4.0\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  using fuzz::template_file;
  static const std::vector<std::string> templates = {
      template_file("moon.h5", {"trace", "import", "{src}", "-o", "{}"}, kMooncake),
      template_file("burst.h5", {"trace", "import", "{src}", "--keep-failed", "-o", "{}"},
                    kBurstGpt),
      template_file("spans.h5", {"trace", "import", "{src}", "--input-trim", "100", "-o", "{}"},
                    kMooncake),
      template_file("synth.h5", {"trace", "synth", "--num-requests", "6", "-o", "{}"})};
  if (size == 0) return 0;
  const std::string path =
      fuzz::mutated_copy(templates[data[0] % templates.size()], ".h5", data + 1, size - 1);
  if (path.empty()) return 0;
  fuzz::expect_errors([&] { fuzz::check_trace(read_trace_h5(path)); });
  return 0;
}
