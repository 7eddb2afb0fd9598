// What every fuzz target shares. servesim's parsers read files, so a target writes its input to a
// file of its own (in /dev/shm when there is one) and hands the parser the path. Bad input may
// end in servesim::Error and nothing else: any other exception, a crash, a sanitizer report or a
// broken promise (fuzz_assert) is a finding.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace servesim::fuzz {

// A path unique to this process, ending in SUFFIX; removed (with the ".tmp" and ".src" files made
// beside it) when the process exits.
inline std::string scratch_path(const std::string& suffix) {
  static std::vector<std::string>* made = [] {
    static std::vector<std::string> paths;
    std::atexit([] {
      std::error_code ec;
      for (const std::string& p : paths) {
        for (const char* extra : {"", ".tmp", ".src"})
          std::filesystem::remove(p + extra, ec);
      }
    });
    return &paths;
  }();
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm", ec)
                                        ? "/dev/shm"
                                        : std::filesystem::temp_directory_path();
  const std::string path = (dir / ("servesim_fuzz_" + std::to_string(getpid()) + suffix)).string();
  if (std::find(made->begin(), made->end(), path) == made->end()) made->push_back(path);
  return path;
}

inline void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// DATA written to this process's scratch file ending in SUFFIX; returns its path.
inline std::string input_file(const uint8_t* data, size_t size, const std::string& suffix) {
  const std::string path = scratch_path(suffix);
  write_bytes(path, std::string_view(reinterpret_cast<const char*>(data), size));
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs F; a servesim::Error is the expected answer to bad input.
template <class F>
void expect_errors(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    // Every message names something: an empty one would leave the user guessing.
    if (std::string_view(e.what()).empty()) std::abort();
  }
}

// A promise the parser made about what it returns.
inline void fuzz_assert(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz: broken promise: %s\n", what);
    std::abort();
  }
}

}  // namespace servesim::fuzz
