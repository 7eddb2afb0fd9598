#include "cli/grid_args.hpp"

#include <cmath>
#include <exception>

#include "analysis/sweep.hpp"
#include "cli/common.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/parallel.hpp"

namespace servesim::cli {

namespace {

int parse_jobs(const std::string& text) {
  int v = 0;
  try {
    size_t used = 0;
    v = std::stoi(text, &used);
    if (used != text.size()) v = 0;
  } catch (const std::exception&) {
    v = 0;
  }
  if (v < 1 || v > 1024) throw Error("jobs", "'" + text + "' must be an integer in 1..1024");
  return v;
}

double parse_number(const std::string& name, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw Error(name, "'" + text + "' is not a number");
}

// The commands' own options read with get_number (capacity's SLO and search bounds): an INI file
// giving one is checked where its line is known.
const std::set<std::string> kNumberOptions = {
    "attainment", "slo-ttft-ms", "slo-tpot-ms", "max-rejected-share",
    "rate-start", "rate-max",    "rel-tol",     "target-rate"};

}  // namespace

SplitArgs split_args(int argc, const char* const* argv, const std::set<std::string>& own_flags,
                     const std::set<std::string>& own_switches) {
  SplitArgs s;
  auto add_run = [&](const std::string& name, const std::string& value) {
    for (auto& [n, v] : s.run) {
      if (n == name) {
        // A repeated flag lists its values (a repeated switch is the same switch).
        if (!value.empty()) v += run_flag_separator(name) + value;
        return;
      }
    }
    s.run.emplace_back(name, value);
  };
  for (int i = 1; i < argc; ++i) {
    std::string tok = argv[i];
    if (tok == "-h") tok = "--help";
    if (tok.rfind("--", 0) != 0) {
      s.positional.push_back(tok);
      continue;
    }
    std::string name = tok.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const bool own = own_flags.count(name) > 0, own_switch = own_switches.count(name) > 0;
    const bool is_switch = own_switch || (!own && run_flag_is_switch(name));
    if (is_switch) {
      if (inline_value) throw Error(name, "takes no value");
    } else if (!inline_value) {
      if (i + 1 >= argc) throw Error(name, "needs a value");
      value = argv[++i];
    }
    if (!is_switch && value.empty()) throw Error(name, "needs a value (got an empty one)");
    if (own || own_switch) {
      s.own[name] = value;
    } else {
      add_run(name, value);
    }
  }
  return s;
}

void add_ini_run_flags(const std::string& path, const std::string& section,
                       const std::set<std::string>& own_flags,
                       std::vector<std::pair<std::string, std::string>>& run,
                       std::map<std::string, std::string>& own, bool only_section,
                       IniFlagLines* where) {
  std::set<std::string> given;
  for (const auto& [n, v] : run)
    given.insert(n);
  std::set<std::string> seen;
  for (IniEntry e : read_ini_entries(path)) {
    if (e.section != section) {
      if (only_section) throw Error(path, e.line, e.section, "sections are not used in this file");
      continue;
    }
    if (e.key.empty()) continue;  // the section's header
    e.key = dashed(e.key);
    if (where != nullptr && !section.empty() && e.value.empty() && !own_flags.count(e.key)) {
      where->unset.insert(e.key);  // `key =`: the top level's key is not this section's
      where->line[e.key] = e.line;
      continue;
    }
    if (where != nullptr && section.empty() && where->unset.count(e.key)) continue;
    if (where != nullptr && !given.count(e.key)) where->line.emplace(e.key, e.line);
    if (e.key == "config" || e.key == "help") {
      throw Error(path, e.line, e.key, "only allowed on the command line");
    }
    if (!seen.insert(e.key).second) {
      throw Error(path, e.line, e.key, "given twice (write one list: a, b, c)");
    }
    if (own_flags.count(e.key)) {
      if (e.value.empty()) throw Error(path, e.line, e.key, "empty value");
      try {
        if (e.key == "jobs") parse_jobs(e.value);
        if (kNumberOptions.count(e.key)) parse_number(e.key, e.value);
      } catch (const Error& bad) {
        throw Error(path, e.line, e.key, bad.reason());
      }
      own.emplace(e.key, e.value);
      continue;
    }
    if (given.count(e.key)) continue;
    bool is_switch = false;
    try {
      is_switch = run_flag_is_switch(e.key);
    } catch (const Error&) {
      throw Error(path, e.line, e.key, "not a flag of `servesim run`");
    }
    if (is_switch) {
      if (e.value == "false") continue;
      if (e.value != "true") throw Error(path, e.line, e.key, "a switch: true or false");
      run.emplace_back(e.key, "");
    } else {
      if (e.value.empty()) throw Error(path, e.line, e.key, "empty value");
      run.emplace_back(e.key, e.value);
    }
  }
}

int get_jobs(const std::map<std::string, std::string>& own) {
  const auto it = own.find("jobs");
  return it == own.end() ? hardware_threads() : parse_jobs(it->second);
}

double get_number(const std::map<std::string, std::string>& own, const std::string& name,
                  double fallback) {
  const auto it = own.find(name);
  return it == own.end() ? fallback : parse_number(name, it->second);
}

std::string get(const std::map<std::string, std::string>& own, const std::string& name) {
  const auto it = own.find(name);
  return it == own.end() ? "" : it->second;
}

std::string flags_text(const std::vector<std::pair<std::string, std::string>>& flags) {
  std::string s;
  for (const auto& [flag, value] : flags) {
    s.append(s.empty() ? "--" : " --").append(flag);
    if (!value.empty()) s.append(" ").append(value);
  }
  return s;
}

RunSpec spec_from_flags(const std::vector<std::pair<std::string, std::string>>& flags) {
  RunSpec s;
  for (const auto& [flag, value] : flags)
    parse_run_flag(flag, value)(s);
  return s;
}

void add_flag_inputs(PathPlan& plan, const std::vector<std::pair<std::string, std::string>>& flags,
                     const std::map<std::string, std::string>& own) {
  plan.input("config", get(own, "config"));
  for (const auto& [flag, value] : flags) {
    if (!run_flag_is_path(flag) || value.empty()) continue;
    for (const std::string& one : expand_values(flag, value, false, run_flag_separator(flag))) {
      for (const std::string& path : split_list({one}))
        plan.input(flag, path);
    }
  }
}

}  // namespace servesim::cli
