// The configurations of one `servesim capacity` command and their searches: every combination of
// the run flags that may be lists (capacity_list_flag; the first listed varying slowest, every
// other flag shared), each checked before any search starts, then searched (capacity.hpp:
// search) and, with --target-rate, its fleet sized (size_fleet), on threads or, under mpirun
// (util/distributed.hpp), on every rank.
// The flags are read through the run flags' table, which lives in cli/ (cli/run_flags.hpp): the
// command hands its reading over as RunFlagReading.
// Promises: results come in configuration order and depend only on the inputs (never on threads,
// ranks or timing); an Error from one configuration's search names its flags.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/capacity.hpp"
#include "analysis/run_spec.hpp"

namespace servesim {

// Run flags as (name, value) pairs, in command-line order ("" for a switch).
using RunFlags = std::vector<std::pair<std::string, std::string>>;

// Whether run flag FLAG may be a list in a capacity search: --scheduler,
// --max-num-batched-tokens, --gpu, --gpu-file, --model, --model-file, --tp,
// --tensor-parallel-size, --pp and --pipeline-parallel-size.
bool capacity_list_flag(const std::string& flag);

// The most configurations one command searches.
inline constexpr size_t kMaxCapacityConfigurations = 10000;

// How the command reads run flags (cli/run_flags.hpp's table).
struct RunFlagReading {
  // A list flag's values ("a,b", or LO:HI:STEP for a number); Error naming the flag.
  std::function<std::vector<std::string>(const std::string& flag, const std::string& value)> values;
  // The RunSpec of single-valued flags; Error as `run` gives it.
  std::function<RunSpec(const RunFlags& flags)> spec;
  // Flags as a command line ("--gpu h100-sxm --tp 2"), for messages.
  std::function<std::string(const RunFlags& flags)> text;
};

// One configuration to search: its flags, their text (for messages) and its RunSpec.
struct CapacityConfiguration {
  RunFlags flags;
  std::string text;
  RunSpec spec;
};

// One configuration per combination of RUN's list flags, each checked as a probe runs it (at a
// rate). Error naming --request-rate or --time-scale (the search sets the rate), a list flag
// whose lists make more than kMaxCapacityConfigurations, or a flag a configuration cannot run.
// When a parallel-layout flag (--tp, --pp and their long names) is a list, a layout that vLLM
// refuses at start-up (the model does not fit, TP does not divide the heads, PP exceeds the
// layers) is left out and, with REFUSED, named there ("flags: reason"); Error when none is left.
std::vector<CapacityConfiguration> capacity_configurations(
    const RunFlags& run, const RunFlagReading& read, Inputs& inputs,
    std::vector<std::string>* refused = nullptr);

// Error naming --gpu-hour-cost when it prices a GPU by name that no configuration has (its
// fleets' pools included), or --size-group when a configuration is not a mixed fleet
// (--replica-gpus).
void check_capacity_configurations(const CapacitySpec& spec,
                                   const std::vector<CapacityConfiguration>& configs,
                                   Inputs& inputs);

// The capacity of CONFIG (search); an Error names the configuration's flags.
CapacityResult search_configuration(const CapacityConfiguration& config, const CapacitySpec& spec,
                                    Inputs& inputs, const ProbeHook& on_probe = {});

// Every configuration of CONFIGS searched on JOBS threads, and with TARGET > 0 (--target-rate)
// its fleet sized, in configuration order; when stderr is a terminal a progress line counts the
// probes and configurations done. Under mpirun rank 0 hands the configurations out and gathers
// the results; every other rank returns WORKER set and no results.
struct CapacitySearchOutcome {
  std::vector<CapacityResult> results;
  bool worker = false;
};
CapacitySearchOutcome search_configurations(const std::vector<CapacityConfiguration>& configs,
                                            const CapacitySpec& spec, double target, int jobs,
                                            Inputs& inputs);

}  // namespace servesim
