// Runs the servesim command line in-process, capturing its exit code and output.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "sim/cli.hpp"

namespace servesim::test {

struct CliResult {
  int code;
  std::string out, err;
};

inline CliResult cli(std::vector<std::string> args) {
  args.insert(args.begin(), "servesim");
  std::vector<const char*> argv;
  for (const auto& a : args)
    argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = run_cli(int(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace servesim::test
