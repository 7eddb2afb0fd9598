// `--config FILE.ini`: any flag of a command read from an INI file (keys spelled as the flags
// without dashes), through Boost.Program_options' config-file parser, with util/ini.hpp's
// errors: an unknown key, a line that is not `key = value`, or a value of the wrong type is
// reported as FILE:LINE: field 'KEY': reason.
#pragma once

#include <boost/program_options.hpp>
#include <set>
#include <string>

namespace servesim::cli {

// Parses PATH against DESC and stores the values into VM, except the keys in SKIP (those the
// command line already set: the command line overrides a config file). Throws Error on bad input.
void store_ini_file(const std::string& path,
                    const boost::program_options::options_description& desc,
                    boost::program_options::variables_map& vm,
                    const std::set<std::string>& skip = {});

}  // namespace servesim::cli
