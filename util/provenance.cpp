#include "util/provenance.hpp"

#include <algorithm>
#include <set>
#include <utility>

#ifndef SERVESIM_VERSION
#error "SERVESIM_VERSION is set by CMakeLists.txt (the project's version)"
#endif

namespace servesim {
namespace {

std::string& command_line() {
  thread_local std::string line;
  return line;
}

}  // namespace

const char* servesim_version() {
  return SERVESIM_VERSION;
}

const std::string& current_command_line() {
  return command_line();
}

bool is_placement_flag(const std::string& arg) {
  static const std::set<std::string> kNames = {"out",  "output", "o",        "json",
                                               "csv",  "junit",  "timeline", "requests-csv",
                                               "jobs", "j",      "shard"};
  if (arg.size() < 2 || arg[0] != '-') return false;
  std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
  name = name.substr(0, name.find('='));
  if (arg[1] != '-') name = name.substr(0, 1);  // -j4, -oFILE
  std::replace(name.begin(), name.end(), '_', '-');
  return kNames.count(name) > 0;
}

CommandScope::CommandScope(int argc, const char* const* argv) : previous_(command_line()) {
  std::string line = "servesim";
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (is_placement_flag(a)) {
      // Its value too, when it is the next argument (not --out=F, -j4 or -oF).
      const bool joined = a.find('=') != std::string::npos || (a[1] != '-' && a.size() > 2);
      if (!joined && i + 1 < argc) ++i;
      continue;
    }
    line += " " + shell_quoted(a);
  }
  command_line() = std::move(line);
}

CommandScope::~CommandScope() {
  command_line() = std::move(previous_);
}

std::string shell_quoted(const std::string& arg) {
  bool bare = !arg.empty();
  for (const char c : arg) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || c == ',' ||
                      c == '=' || c == '+' || c == '@' || c == '%';
    bare = bare && safe;
  }
  if (bare) return arg;
  std::string out = "'";
  for (const char c : arg)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace servesim
