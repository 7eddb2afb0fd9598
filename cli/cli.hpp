// The servesim command line: `servesim run|compare|list ...`, parsed with
// Boost.Program_options, vLLM's flag spellings, `--help` on each command and `--config FILE.ini`
// for any flag. Bad input prints one line naming the flag (or file, line and field) and returns 2;
// an internal error returns 3.
#pragma once

#include <ostream>

namespace servesim {

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace servesim
