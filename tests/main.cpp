// Catch2's runner, with one addition: run by hand on a machine without ../shared (and not in CI),
// the suite leaves the tests tagged [shared] out, and says so, instead of running them as passes.
// A [shared] test named explicitly still runs, and fails there (tests/shared_data.hpp).
// Errors name flags, as the command line's do: the field speller is installed (a test of the
// paths themselves reads Error::path()).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/field_spellings.hpp"
#include "shared_data.hpp"

int main(int argc, char* argv[]) {
  servesim::cli::install_field_spellings();
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const char* ci = std::getenv("CI");
  const bool in_ci = ci != nullptr && std::string(ci) == "true";
  if (!in_ci && session.configData().testsOrTags.empty() &&
      !std::filesystem::exists(servesim::test::shared_path())) {
    session.configData().testsOrTags.push_back("~[shared]~[.]");
    session.useConfigData(session.configData());
    std::cerr << "NOTE: " << servesim::test::shared_path().string()
              << " is absent: the tests tagged [shared] are left out (CI runs them beside it)\n";
  }
  return session.run();
}
