// The flags of `servesim run` that define a run (not its output files), declared once: each names
// its RunSpec field, its help group and text, its default as --help shows it, and how its text
// is read (Boost.Program_options' typed parsing, or a rate, a length distribution, a window).
// From this one table come `run`'s and `compare`'s option groups, the trace commands' input and
// what-if groups, and the typed patches that sweeps, capacity searches and check scenarios
// build their RunSpecs from: a value is parsed once, when the command starts, never per point.
#pragma once

#include <boost/program_options.hpp>
#include <set>
#include <string>
#include <vector>

#include "analysis/run_spec.hpp"

namespace servesim::cli {

namespace po = boost::program_options;

enum class FlagGroup { kHardware, kScheduler, kWorkload, kTraceInput, kWhatIf, kMetrics };

// The captioned option group G of the run flags, bound to TARGET's fields (which must outlive
// the description). The scheduler group leaves --scheduler to the command (run takes one policy,
// compare a list).
po::options_description run_flag_group(FlagGroup g, RunSpec& target);

// Marks the settings of TARGET (bound by run_flag_group) whose flags the command line gave
// (not defaulted) as given (Given::given).
void mark_given_flags(const po::variables_map& vm, RunSpec& target);

// Whether run flag NAME is a switch (takes no value), or takes numbers (so that LO:HI:STEP is a
// range in a sweep). Both throw Error when `run` has no such flag.
bool run_flag_is_switch(const std::string& name);
bool run_flag_is_numeric(const std::string& name);

// Whether run flag NAME names a file or folder (--trace, --gpu-file, ...): a spec file resolves
// it against its own folder.
bool run_flag_is_path(const std::string& name);

// Whether run flag NAME's one value is itself a comma list (--servegen a,b is one mixture,
// --replica-gpus h100-sxm:2,a100-80g:1 one fleet): a sweep or capacity list of its values is
// separated by '|' (run_flag_separator), not ','.
bool run_flag_is_list(const std::string& name);
char run_flag_separator(const std::string& name);

// Every flag of `run` (the flag table, in --help order): tests hold each to its recorded value.
std::vector<std::string> run_flag_names();

// Parses VALUE ("" for a switch) of run flag NAME once, into a patch that sets it on any
// RunSpec. Throws Error (or a Program_options error) with the message `run` would give; an
// output flag (--out, --json, ...) is an Error: the command writes the results.
RunPatch parse_run_flag(const std::string& name, const std::string& value);

}  // namespace servesim::cli
