// Pieces the servesim commands share (internal to the CLI): parsing a command line with
// --config and --help, reading a rate, splitting lists, writing a whole file.
#pragma once

#include <boost/program_options.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "util/text_input.hpp"

namespace servesim::cli {

namespace po = boost::program_options;

// Stores the command line, then --config FILE (the command line wins), then notifies.
// Returns false when --help was printed. POSITIONAL names positional arguments, if any.
bool parse_command(int argc, const char* const* argv, const po::options_description& desc,
                   po::variables_map& vm, std::ostream& out, const std::string& usage,
                   const po::positional_options_description* positional = nullptr);

// "inf" or a positive number; Error naming --request-rate otherwise.
double parse_rate(const std::string& text);

// "a,b" "c" -> a, b, c (empty items dropped).
std::vector<std::string> split_list(const std::vector<std::string>& items);

}  // namespace servesim::cli
