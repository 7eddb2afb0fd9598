// Fuzz target: `run` flag values (cli/run_flags.hpp) and the checks a run makes before it
// simulates (check_point: names, the fleet, --replica-gpus, --client-mix, the datasets, the
// workload generated for one request). The input is up to 8 lines `flag=value` (a switch has no
// '='); flags naming files are left out, so that a target never reads what it was not given.
#include <boost/program_options/errors.hpp>
#include <sstream>

#include "analysis/run_spec.hpp"
#include "cli/run_flags.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  std::istringstream lines{std::string(fuzz::as_text(data, size))};
  RunSpec s;
  int n = 0;
  try {
    for (std::string line; n < 8 && std::getline(lines, line); ++n) {
      const size_t eq = line.find('=');
      const std::string name = line.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
      if (cli::run_flag_is_path(name) || name == "servegen") continue;
      cli::parse_run_flag(name, value)(s);
    }
    Inputs inputs;
    check_point(s, inputs);
  } catch (const Error&) {
  } catch (const boost::program_options::error&) {
  }
  return 0;
}
