// How a user spells each field path (util/field_path.hpp): the flag `servesim` takes for it, from
// the run flag table's rows (cli/run_flag_table.cpp: each flag with its path) and, for the paths
// of a command's own flags, this folder's short table (its INI key, check-spec key, sweep grid
// name and Python keyword are the same word; vLLM's underscore spelling is taken too,
// cli/cli.cpp). Errors made below cli/ name
// paths; the speller installed here makes them name flags.
#pragma once

#include <string>
#include <string_view>

namespace servesim::cli {

// The flag (without dashes) a user gives PATH's value by; "" for a text that is no field path.
std::string field_flag(std::string_view path);

// Installs the speller for the process (util/field_path.hpp); every command calls it first.
void install_field_spellings();

}  // namespace servesim::cli
