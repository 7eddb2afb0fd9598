// Pieces the servesim commands share (internal to the CLI): parsing a command line with
// --config and --help, the trace-input and what-if option groups, loading a workload from a
// trace or the generator, and describing it in text and JSON.
#pragma once

#include <boost/program_options.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "models/gpu.hpp"
#include "models/model.hpp"
#include "sim/simulation.hpp"
#include "traces/import.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace.hpp"
#include "traces/transform.hpp"

namespace servesim::cli {

namespace po = boost::program_options;

// Stores the command line, then --config FILE (the command line wins), then notifies.
// Returns false when --help was printed. POSITIONAL names positional arguments, if any.
bool parse_command(int argc, const char* const* argv, const po::options_description& desc,
                   po::variables_map& vm, std::ostream& out, const std::string& usage,
                   const po::positional_options_description* positional = nullptr);

// --gpu NAME / --gpu-file FILE and --model NAME / --model-file FILE: the file when given, else
// the catalogue entry.
GpuSpec gpu_from_flags(const std::string& name, const std::string& file);
ModelSpec model_from_flags(const std::string& name, const std::string& file);

// "inf" or a positive number; Error naming --request-rate otherwise.
double parse_rate(const std::string& text);

void write_file(const std::string& path, const std::string& text);

// Flags that say how to read a trace and how to change it (what-if), bound straight to the
// options the importer and the transforms take.
struct TraceArgs {
  ImportOptions import;
  TransformOptions what_if;  // rate, burstiness and seed come from the run's own flags
  std::string window;        // START:END, parsed into what_if
};

po::options_description trace_input_options(TraceArgs& a);
po::options_description transform_options(TraceArgs& a);
ImportOptions import_options(const TraceArgs& a);
// REQUEST_RATE: 0 to keep the trace's timing.
TransformOptions transforms(const TraceArgs& a, double request_rate, double burstiness,
                            uint64_t seed);

// Imports PATH and applies the transforms. CACHED: keep the imported file for later calls
// (thread-safe; for the many points of a sweep).
Trace load_trace(const std::string& path, const TraceArgs& a, double request_rate,
                 double burstiness, uint64_t seed, bool cached = false);

// The workload section of reports: where the requests came from and where every row went.
nlohmann::ordered_json trace_json(const Trace& t);
std::string trace_text(const Trace& t);
nlohmann::ordered_json synthetic_json(const SyntheticOptions& w);
std::string synthetic_text(const SyntheticOptions& w);

// `servesim trace import | info | synth` (sim/cli_trace.cpp).
int cmd_trace(int argc, const char* const* argv, std::ostream& out);
// `servesim calibrate` or `servesim fidelity` (sim/cli_calibrate.cpp).
int cmd_calibrate_or_fidelity(const std::string& command, int argc, const char* const* argv,
                              std::ostream& out);

// One simulated point of a sweep, a capacity search or a check scenario: ARGS is a `run` command
// line without the command (e.g. {"--scheduler", "chunked:512", "--request-rate", "4"}). The
// output flags (--out, --json, --requests-csv, --config) are not allowed. Thread-safe: trace
// files are read under a lock. Throws Error for bad flags, like `run`.
struct PointRun {
  RunResult run;
  nlohmann::ordered_json workload;
  double request_rate = NAN;  // req/s asked for; NaN when a trace kept its own timing
};
PointRun run_point(const std::vector<std::string>& args);
// Checks ARGS as run_point would, without simulating: flags, model and GPU names, files, the
// workload's options (on one request; a trace is imported once and cached). What only the
// simulation finds (a model that does not fit a GPU) is left to run_point.
void check_point_args(const std::vector<std::string>& args);
// Whether `run` flag NAME is a switch (takes no value); Error when `run` has no such flag.
bool run_flag_is_switch(const std::string& name);

// `servesim sweep | capacity | check` (sim/cli_sweep.cpp).
int cmd_sweep(int argc, const char* const* argv, std::ostream& out);
int cmd_capacity(int argc, const char* const* argv, std::ostream& out);
int cmd_check(int argc, const char* const* argv, std::ostream& out);

// `servesim diagnose BASELINE CURRENT` (sim/cli_diagnose.cpp).
int cmd_diagnose(int argc, const char* const* argv, std::ostream& out);

// The synthetic workload of the built-in default scenario (also `trace synth`'s defaults).
inline constexpr int64_t kDefaultNumRequests = 2000;
inline constexpr const char* kDefaultRate = "9";
inline constexpr const char* kDefaultInputLen = "lognormal:1024:0.8:16:6000";
inline constexpr const char* kDefaultOutputLen = "lognormal:256:0.8:4:2000";

}  // namespace servesim::cli
