// INI files read with Boost.Program_options' config-file parser, with the errors our users need:
// an unknown key, a line that is not `key = value`, or a value of the wrong type is reported as
// FILE:LINE: field 'KEY': reason. Used for `--config FILE.ini`, `--gpu-file` and `--model-file`.
#pragma once

#include <boost/program_options.hpp>
#include <set>
#include <string>
#include <vector>

namespace servesim {

// Parses PATH against DESC and stores the values into VM, except the keys in SKIP (those the
// command line already set: the command line overrides a config file). Throws Error on bad input.
void store_ini_file(const std::string& path,
                    const boost::program_options::options_description& desc,
                    boost::program_options::variables_map& vm,
                    const std::set<std::string>& skip = {});

// A whole file on its own: stores PATH and notifies the bound variables, so that a missing
// required key is also reported against the file. Returns the stored values.
boost::program_options::variables_map load_ini_file(
    const std::string& path, const boost::program_options::options_description& desc);

// One `key = value` line of an INI file, in file order; SECTION is the last [header] ("" before
// any). A header is also an entry of its own, with an empty key.
struct IniEntry {
  std::string section, key, value;
  int line = 0;
};

// The entries of PATH, with syntax checked (FILE:LINE errors) but keys not interpreted: for files
// whose keys are open-ended (sweep grids, check specs).
std::vector<IniEntry> read_ini_entries(const std::string& path);

// The line of PATH that sets KEY (0 if none), for errors found after parsing.
int ini_line_of(const std::string& path, const std::string& key);

}  // namespace servesim
