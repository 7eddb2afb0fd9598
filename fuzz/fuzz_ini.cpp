// Fuzz target: the INI reader (util/ini.hpp): syntax, comments, sections and the key check, as
// every config, GPU, model and calibration file is read.
#include "fuzz_common.hpp"
#include "util/ini.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  const std::string path = fuzz::input_file(data, size, ".ini");
  fuzz::expect_errors([&] {
    const std::string text = read_ini_text(path);
    for (const IniEntry& e : parse_ini_entries(path, text))
      fuzz::fuzz_assert(e.line >= 1, "entries name their line");
    check_ini_keys(path, text, [](const std::string& key) { return key.size() % 2 == 0; });
  });
  return 0;
}
