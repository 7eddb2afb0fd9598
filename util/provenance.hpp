// Which servesim wrote a file, and the command that did: every results, sweep, capacity and
// verdict file records both (HDF5 attributes servesim_version and command_line; JSON's
// "servesim" object), so that a page or a reader built from the file can say what made it.
// The command line is the calling thread's: a command sets it for as long as it runs
// (CommandScope, cli/cli.cpp), so the Python module's commands on several threads each record
// their own.
#pragma once

#include <string>

namespace servesim {

// servesim's version (CMake's project version).
const char* servesim_version();

// "servesim ARGS..." of the command running on this thread, each argument quoted as a POSIX
// shell would need it; "" outside a command. The study's command: the flags that name where
// results go or how the work is spread (--out, -o, --json, --csv, --junit, --timeline,
// --requests-csv, --jobs, -j, --shard) are left out, so that the same study run on more cores,
// in shards or written elsewhere records the same line, and its files stay byte-identical.
const std::string& current_command_line();

// Sets this thread's command line from ARGV[0..ARGC) while it lives (the previous one restored
// after: a command run inside another, as check runs its scenarios).
class CommandScope {
 public:
  CommandScope(int argc, const char* const* argv);
  ~CommandScope();
  CommandScope(const CommandScope&) = delete;
  CommandScope& operator=(const CommandScope&) = delete;

 private:
  std::string previous_;
};

// Whether ARG (a flag's name as typed: "--out", "--requests_csv", "-j") names where results go or
// how the work is spread, and so is left out of the recorded command line.
bool is_placement_flag(const std::string& arg);

// ARG as a POSIX shell reads it back: bare when it holds only safe characters, else in single
// quotes (a quote inside written '\'').
std::string shell_quoted(const std::string& arg);

}  // namespace servesim
