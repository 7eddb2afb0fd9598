// Valid servesim HDF5 files, written once per process by servesim's own commands, for the HDF5
// fuzz targets to edit (h5_mutate.hpp).
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "fuzz_common.hpp"

namespace servesim::fuzz {

// Runs `servesim ARGS` in this process; aborts when it fails (the template is not the finding).
inline void servesim_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "servesim");
  std::vector<const char*> argv;
  for (const std::string& a : args)
    argv.push_back(a.c_str());
  std::ostringstream out, err;
  if (run_cli(int(argv.size()), argv.data(), out, err) != 0) {
    std::fprintf(stderr, "fuzz: template failed: %s\n", err.str().c_str());
    std::abort();
  }
}

// A file NAME made once by writing TEXT to NAME.src and running `servesim ARGS... NAME.src -o
// NAME` (for `trace import`), or by ARGS alone with NAME substituted for "{}".
inline std::string template_file(const std::string& name, const std::vector<std::string>& args,
                                 const std::string& text = "") {
  const std::string path = scratch_path("_template_" + name);
  std::vector<std::string> a;
  if (!text.empty()) write_bytes(path + ".src", text);
  for (const std::string& x : args)
    a.push_back(x == "{}" ? path : x == "{src}" ? path + ".src" : x);
  servesim_cli(a);
  return path;
}

}  // namespace servesim::fuzz
