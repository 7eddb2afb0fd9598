// The run flags' table (cli/run_flags.cpp reads it): each flag's name, its field path
// (util/field_path.hpp: the setting a message below cli/ names, spelled back as this flag by
// cli/field_spellings.cpp), help group, binding to its RunSpec field, whether --help shows its
// default, and its help text. Split from
// run_flags.cpp so that neither file passes 600 lines nor one function 300 (issue 45).
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "cli/run_flags.hpp"
#include "util/field_path.hpp"

namespace servesim::cli::run_flag_table {

// How a flag's text becomes its field.
template <class T>
struct Plain {  // Program_options' own parsing of T (bool: a switch)
  T& (*field)(RunSpec&);
};
struct Rate {  // "inf" or a number > 0 (parse_rate)
  Given<double>& (*field)(RunSpec&);
};
struct Length {  // fixed:N | uniform:LO:HI | ... (LengthDist::parse)
  Given<LengthDist>& (*field)(RunSpec&);
};
struct Window {};      // START:END into RunSpec::what_if (parse_window)
struct OptionalBool {  // a switch that also takes true/false (vLLM's StoreBoolean)
  Given<bool>& (*field)(RunSpec&);
};
struct Goodput {};      // "ttft:MS tpot:MS e2el:MS", one or several words (parse_goodput)
struct Percentiles {};  // "50,90,99" (parse_percentiles)
struct GpuGroups {};    // "h100-sxm:4,a100-80g:2" into RunSpec::replica_gpus (parse_replica_gpus)

using Binding = std::variant<Plain<std::string>, Plain<Given<std::string>>, Plain<int>,
                             Plain<Given<int>>, Plain<int64_t>, Plain<Given<int64_t>>,
                             Plain<double>, Plain<Given<double>>, Plain<bool>, Plain<Given<bool>>,
                             Rate, Length, Window, OptionalBool, Goodput, Percentiles, GpuGroups>;
struct RunFlag {
  const char* name;
  const char* path;  // one per flag: an alias (--tp) is a path of its own
  FlagGroup group;
  Binding binding;
  bool show_default;  // --help shows RunSpec's default value
  const char* help;
};
constexpr bool kShowDefault = true, kNoDefault = false;

// Every run flag, in --help order within each group.
const std::vector<RunFlag>& run_flags();

}  // namespace servesim::cli::run_flag_table
