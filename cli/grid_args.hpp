// The command lines of the commands that run many configurations (sweep, capacity, check): their
// own options, and `run` flags that may hold lists, from the command line and an INI file.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/run_spec.hpp"
#include "util/output_file.hpp"

namespace servesim::cli {

// A command line split into the command's own options and `run` flags (name, value), in order;
// a repeated `run` flag gathers its values into one comma-separated list. A switch has the value
// "" (any other flag needs a non-empty value).
struct SplitArgs {
  std::map<std::string, std::string> own;
  std::vector<std::pair<std::string, std::string>> run;
  std::vector<std::string> positional;
};

// ARGV[1..] split; OWN_FLAGS and OWN_SWITCHES are the command's own options, anything else must
// be a `run` flag (Error otherwise, before anything runs).
SplitArgs split_args(int argc, const char* const* argv, const std::set<std::string>& own_flags,
                     const std::set<std::string>& own_switches);

// Where the flags of a spec came from (check): each flag's line, and the keys a section unset.
struct IniFlagLines {
  std::map<std::string, int> line;
  std::set<std::string> unset;
};

// The entries of an INI file (top level, or [SECTION]) as `run` flags, unless already given in
// RUN; keys in OWN_FLAGS go to OWN. Keys are flags spelled with dashes or underscores, as vLLM
// takes them. ONLY_SECTION: any other section is an error (sweep and capacity files have none).
// WHERE (check's specs): each flag's line is recorded there; in a section, `key =` with no value
// unsets KEY, so that the top level's KEY is not read for it.
void add_ini_run_flags(const std::string& path, const std::string& section,
                       const std::set<std::string>& own_flags,
                       std::vector<std::pair<std::string, std::string>>& run,
                       std::map<std::string, std::string>& own, bool only_section = false,
                       IniFlagLines* where = nullptr);

// --jobs N (1..1024; default: every hardware thread), a number option, a text option ("" when
// absent).
int get_jobs(const std::map<std::string, std::string>& own);
double get_number(const std::map<std::string, std::string>& own, const std::string& name,
                  double fallback);
std::string get(const std::map<std::string, std::string>& own, const std::string& name);

// "--flag value --switch": FLAGS as a command line, for messages.
std::string flags_text(const std::vector<std::pair<std::string, std::string>>& flags);

// The RunSpec of single-valued FLAGS (each parsed once by parse_run_flag).
RunSpec spec_from_flags(const std::vector<std::pair<std::string, std::string>>& flags);

// The files the run flags FLAGS name (every value of a list, every file of --calibration a,b),
// and the --config file among OWN, as inputs of PLAN.
void add_flag_inputs(PathPlan& plan, const std::vector<std::pair<std::string, std::string>>& flags,
                     const std::map<std::string, std::string>& own);

}  // namespace servesim::cli
