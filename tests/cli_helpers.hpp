// Runs the servesim command line in-process, capturing its exit code and output; scratch
// directories and whole-file reads for the tests that use it.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/run_spec.hpp"
#include "cli/cli.hpp"
#include "cli/run_flags.hpp"

namespace servesim::test {

struct CliResult {
  int code;
  std::string out, err;
};

inline CliResult call_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "servesim");
  std::vector<const char*> argv;
  for (const auto& a : args)
    argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = run_cli(int(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

// Runs ARGS and checks it fails with status 2 and a message holding WHAT.
inline void refused(const std::vector<std::string>& args, const std::string& what) {
  const CliResult r = call_cli(args);
  INFO(r.out << r.err);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains(what));
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A fresh directory for one test's files (tests run in parallel: one name per test).
inline std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("servesim_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

// FLAGS (run's flag names without dashes, and their values) simulated as `servesim run` does,
// every step kept with KEEP_STEPS.
inline PointRun run_with_flags(const std::vector<std::pair<std::string, std::string>>& flags,
                               bool keep_steps = true) {
  RunSpec s;
  for (const auto& [name, value] : flags)
    cli::parse_run_flag(name, value)(s);
  Inputs inputs;
  SimulateOptions keep;
  keep.keep_steps = keep_steps;
  return run_point(s, inputs, keep);
}

}  // namespace servesim::test
