// The servesim command line: `servesim run|compare|list ...`, parsed with
// Boost.Program_options, vLLM's flag spellings, `--help` on each command and `--config FILE.ini`
// for any flag. Bad input prints one line naming the flag (or file, line and field) and returns 2;
// an internal error returns 3.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace servesim {

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// Runs the command ARGS[0] with ARGS (as after the program name) as run_cli does, writing its
// report to OUT and returning its exit status, without printing errors: bad input is thrown as
// servesim::Error (a Program_options error as one naming its flag). HOOKS: policies chosen
// outside servesim, for run and compare (an Error for another command). For servesim's Python
// module.
int run_command(const std::vector<std::string>& args, std::ostream& out,
                const cli::RunHooks* hooks = nullptr);

}  // namespace servesim
