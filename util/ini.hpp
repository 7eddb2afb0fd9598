// INI files (`key = value` lines, `[section]` headers, `#` and `;` comments, "quoted" values), with
// the errors our users need: a line that is not `key = value`, an unknown key, an empty or
// ill-typed value, a key given twice or a required key missing is reported as FILE:LINE: field
// 'KEY': reason.
//  - read_ini_entries(): the syntax only, keys left to the caller (sweep grids, check specs).
//  - load_ini_fields(): a file whose keys are a fixed, typed set (GPU, model and calibration
//    files). Values are read the way Boost.Program_options reads a config file (lexical_cast for
//    numbers, on|off yes|no 1|0 true|false for switches), so its messages are the ones the
//    command line gives.
// The command line's `--config FILE.ini` is read by cli/config_file.hpp on top of these.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace servesim {

// PATH's text without a UTF-8 byte-order mark and with comments removed: a `#` or `;` starts one
// at the start of a line or after a space or tab, outside double quotes (Python configparser's
// inline comments), so `client-mix = rate=2;rate=5` keeps its `;`; a value in double quotes
// loses them. Throws Error when it is not a readable file.
std::string read_ini_text(const std::string& path);

// One `key = value` line of an INI file, in file order; SECTION is the last [header] ("" before
// any). A header is also an entry of its own, with an empty key.
struct IniEntry {
  std::string section, key, value;
  int line = 0;
};

// The entries of TEXT (read_ini_text's, from PATH), with syntax checked (FILE:LINE errors) but keys
// not interpreted.
std::vector<IniEntry> parse_ini_entries(const std::string& path, const std::string& text);
std::vector<IniEntry> read_ini_entries(const std::string& path);

// The line of PATH that sets KEY (0 if none), for errors found after parsing.
int ini_line_of(const std::string& path, const std::string& key);

// The first line of each key of TEXT (read from PATH; a key in a section is "section.key"), after
// checking that every key is KNOWN and has a value (config and help are only allowed on the
// command line). Throws Error(file, line, key, reason).
std::map<std::string, int> check_ini_keys(const std::string& path, const std::string& text,
                                          const std::function<bool(const std::string&)>& known);

// One key of a fixed-schema file and where its value goes.
struct IniField {
  std::string key;
  std::variant<std::string*, double*, int*, bool*> target;
  bool required = false;
};

// Reads PATH into FIELDS' targets (keys absent from the file keep their targets' values) and
// returns the keys the file set. Throws Error(file, line, key, reason) on an unknown key, an empty
// or ill-typed value, a key given twice, a section, or a missing required key.
std::set<std::string> load_ini_fields(const std::string& path, const std::vector<IniField>& fields);

}  // namespace servesim
