// Shared by the sweep tests (test_sweep.cpp, test_sweep_check.cpp): a command line built from
// pieces, and `run` flags simulated as a sweep point is.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/run_spec.hpp"
#include "cli/grid_args.hpp"

namespace servesim::test {

// `run`'s flags (--name value ...) as a RunSpec, simulated as a sweep point is.
inline PointRun run_args(const std::vector<std::string>& args) {
  std::vector<std::pair<std::string, std::string>> flags;
  for (size_t i = 0; i + 1 < args.size(); i += 2)
    flags.emplace_back(args[i].substr(2), args[i + 1]);
  Inputs inputs;
  return run_point(servesim::cli::spec_from_flags(flags), inputs);
}

// A followed by MORE.
inline std::vector<std::string> with(std::vector<std::string> a,
                                     const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

}  // namespace servesim::test
