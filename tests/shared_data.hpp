// Where the tests tagged [shared] find ../shared (the public traces and profiles the project is
// measured on): $SERVESIM_SHARED, else the folder beside the checkout. Such tests skip, with a
// message, where it is absent.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace servesim::test {

// ../shared/SUB (SUB may be empty).
inline std::filesystem::path shared_path(const std::string& sub = "") {
  const char* env = std::getenv("SERVESIM_SHARED");
  return std::filesystem::path(env ? env : SERVESIM_SHARED_DIR) / sub;
}

// Whether ../shared/SUB exists; when not, the test says it is skipped.
inline bool have_shared(const std::string& sub) {
  if (std::filesystem::exists(shared_path(sub))) return true;
  WARN("skipped: " << shared_path(sub).string() << " is absent");
  return false;
}

}  // namespace servesim::test
