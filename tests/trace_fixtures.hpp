// Helpers for trace tests: write a fixture (bytes exactly as given, CRLF and missing final
// newlines included) to a fresh temporary file.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace servesim::test {

inline std::string fixture(const std::string& name, const std::string& bytes) {
  const auto dir = std::filesystem::temp_directory_path() / "servesim_trace_fixtures";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  return path.string();
}

}  // namespace servesim::test
