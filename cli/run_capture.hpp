// What run and compare hand back to a caller in memory (the Python module, python/module.cpp)
// instead of, or beside, the files of --out and --json: the same contents, built by the same code.
#pragma once

#include <optional>
#include <string>

#include "analysis/results_image.hpp"

namespace servesim::cli {

struct RunCapture {
  std::optional<ResultsImage> results;  // --out's file in memory (every run, steps unless
                                        // --no-steps)
  std::string json;                     // --json's text
};

}  // namespace servesim::cli
