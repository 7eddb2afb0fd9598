// Pieces the servesim commands share (internal to the CLI): parsing a command line with
// --config and --help, reading a rate, splitting lists, writing a whole file.
#pragma once

#include <boost/program_options.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/run_spec.hpp"
#include "util/output_file.hpp"
#include "util/text_input.hpp"

namespace servesim::cli {

namespace po = boost::program_options;

// Stores the command line, then --config FILE (the command line wins), then notifies.
// Returns false when --help was printed. POSITIONAL names positional arguments, if any.
bool parse_command(int argc, const char* const* argv, const po::options_description& desc,
                   po::variables_map& vm, std::ostream& out, const std::string& usage,
                   const po::positional_options_description* positional = nullptr);

// E's message. Boost.Program_options fills a message by replacing each %NAME% placeholder with its
// value, in a loop that never ends when the value holds its own placeholder (`--num-requests
// %value%` hung): the values are quoted safely here. Every Program_options message goes through
// this.
std::string po_error_text(const po::error& e);

// vLLM's argument parser (FlexibleArgumentParser) reads `--max_num_seqs` as `--max-num-seqs`:
// a flag NAME with its underscores as dashes, and ARGS (a command line) with every option's
// name so spelled (values untouched: `--slo ttft_p99_ms=2000` keeps its value).
std::string dashed(std::string name);
std::vector<std::string> vllm_spellings(int argc, const char* const* argv);

// "inf" or a positive number; Error naming --request-rate otherwise.
double parse_rate(const std::string& text);

// "a,b" "c" -> a, b, c (empty items dropped).
std::vector<std::string> split_list(const std::vector<std::string>& items);

// The files the run S reads (--trace, --model-file, --gpu-file, --calibration, --profiles,
// --servegen), as inputs of PLAN, so that no output of the command can overwrite one.
void add_run_inputs(PathPlan& plan, const RunSpec& s);

// The --config file VM was read with, if any, as an input of PLAN.
void add_config_input(PathPlan& plan, const po::variables_map& vm);

}  // namespace servesim::cli
