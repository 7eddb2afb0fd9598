#include "util/ini.hpp"

#include <boost/lexical_cast.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "util/error.hpp"
#include "util/output_file.hpp"

namespace servesim {

namespace {

std::string trim(const std::string& s, const char* space = " \t\r") {
  const auto b = s.find_first_not_of(space);
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(space);
  return s.substr(b, e - b + 1);
}

// LINE without its comment, as Python's configparser reads inline comments: a `#` or `;` starts
// one at the start of the line or after a space or tab, outside double quotes, so that
// `client-mix = rate=2;rate=5` keeps its `;` and `budget = 3 ; note` is 3.
std::string strip_comment(const std::string& line) {
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') quoted = !quoted;
    if (!quoted && (c == '#' || c == ';') &&
        (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

// `key = "value"` as `key = value`: quotes keep a value's own `;`, `#` and spaces.
std::string unquote_value(const std::string& line) {
  const size_t eq = line.find('=');
  if (eq == std::string::npos) return line;
  const std::string value = trim(line.substr(eq + 1));
  if (value.size() < 2 || value.front() != '"' || value.back() != '"') return line;
  return line.substr(0, eq + 1) + " " + value.substr(1, value.size() - 2);
}

}  // namespace

std::string read_ini_text(const std::string& path) {
  if (const std::string problem = input_file_problem(path); !problem.empty()) {
    throw Error(path, 0, "", problem);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, 0, "", "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte-order mark
  // Comments go here, once, so that every later pass (the syntax check, Boost.Program_options'
  // parser, which knows only '#') reads the same lines: `key = 3 ; note` is 3 in all of them.
  std::string out;
  out.reserve(text.size());
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    out.append(unquote_value(strip_comment(line))).push_back('\n');
  return out;
}

std::vector<IniEntry> parse_ini_entries(const std::string& path, const std::string& text) {
  std::vector<IniEntry> out;
  std::string section, line;
  std::istringstream lines(text);
  for (int lineno = 1; std::getline(lines, line); ++lineno) {
    std::string s = trim(line);  // read_ini_text took the comments out
    if (s.empty()) continue;
    if (s.front() == '[') {
      if (s.back() != ']') throw Error(path, lineno, "", "section header must end with ']'");
      section = trim(s.substr(1, s.size() - 2));
      out.push_back({section, "", "", lineno});  // the header itself, with no key
      continue;
    }
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw Error(path, lineno, s, "expected 'key = value'");
    const std::string name = trim(s.substr(0, eq));
    if (name.empty()) throw Error(path, lineno, "", "missing key before '='");
    out.push_back({section, name, trim(s.substr(eq + 1)), lineno});
  }
  return out;
}

std::vector<IniEntry> read_ini_entries(const std::string& path) {
  return parse_ini_entries(path, read_ini_text(path));
}

int ini_line_of(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    const std::string s = trim(strip_comment(line));
    const auto eq = s.find('=');
    if (eq != std::string::npos && trim(s.substr(0, eq)) == key) return lineno;
  }
  return 0;
}

std::map<std::string, int> check_ini_keys(const std::string& path, const std::string& text,
                                          const std::function<bool(const std::string&)>& known) {
  std::map<std::string, int> line_of;
  for (const IniEntry& e : parse_ini_entries(path, text)) {
    if (e.key.empty()) continue;  // a section header
    const std::string key = (e.section.empty() ? "" : e.section + ".") + e.key;
    if (key == "config" || key == "help") {
      throw Error(path, e.line, key, "only allowed on the command line");
    }
    if (!known(key)) throw Error(path, e.line, key, "unknown key");
    if (e.value.empty()) throw Error(path, e.line, key, "empty value");
    line_of.emplace(key, e.line);
  }
  return line_of;
}

namespace {

// The key = value pairs of TEXT as Boost.Program_options' config-file parser reads them: `#`
// starts a comment (`;` does not), a [section] prefixes its keys with "section.", and any other
// line without '=' is an error.
std::vector<std::pair<std::string, std::string>> config_pairs(const std::string& path,
                                                              const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string prefix, line;
  std::istringstream lines(text);
  while (std::getline(lines, line)) {
    const std::string s = trim(line.substr(0, line.find('#')), " \t\r\n");
    if (s.empty()) continue;
    if (s.front() == '[' && s.back() == ']') {
      prefix = s.substr(1, s.size() - 2);
      if (prefix.empty() || prefix.back() != '.') prefix += '.';
    } else if (const auto eq = s.find('='); eq != std::string::npos) {
      out.emplace_back(prefix + trim(s.substr(0, eq), " \t\r\n"),
                       trim(s.substr(eq + 1), " \t\r\n"));
    } else {
      throw Error(path, 0, "",
                  "the options configuration file contains an invalid line '" + s + "'");
    }
  }
  return out;
}

// Parses VALUE into TARGET; false when it is not of the target's type.
bool parse_value(const std::string& value, const IniField& f) {
  if (auto* s = std::get_if<std::string*>(&f.target)) {
    **s = value;
    return true;
  }
  if (auto* b = std::get_if<bool*>(&f.target)) {
    std::string v = value;
    for (char& c : v)
      c = char(std::tolower(static_cast<unsigned char>(c)));
    if (v == "on" || v == "yes" || v == "1" || v == "true") return **b = true, true;
    if (v == "off" || v == "no" || v == "0" || v == "false") return **b = false, true;
    return false;
  }
  try {
    if (auto* d = std::get_if<double*>(&f.target)) {
      **d = boost::lexical_cast<double>(value);
    } else {
      *std::get<int*>(f.target) = boost::lexical_cast<int>(value);
    }
  } catch (const boost::bad_lexical_cast&) {
    return false;
  }
  return true;
}

std::string invalid_value(const std::string& value, const IniField& f) {
  if (!std::holds_alternative<bool*>(f.target)) {
    return "the argument ('" + value + "') for option '" + f.key + "' is invalid";
  }
  std::string v = value;
  for (char& c : v)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return "the argument ('" + v + "') for option '" + f.key +
         "' is invalid. Valid choices are 'on|off', 'yes|no', '1|0' and 'true|false'";
}

}  // namespace

std::set<std::string> load_ini_fields(const std::string& path,
                                      const std::vector<IniField>& fields) {
  const std::string text = read_ini_text(path);
  std::map<std::string, const IniField*> by_key;
  for (const IniField& f : fields)
    by_key.emplace(f.key, &f);
  check_ini_keys(path, text, [&](const std::string& key) { return by_key.count(key) > 0; });
  // Every line of each key, so that an error names the occurrence at fault (a repeat's own line).
  std::map<std::string, std::vector<int>> lines_of;
  for (const IniEntry& e : parse_ini_entries(path, text)) {
    if (!e.key.empty()) lines_of[e.key].push_back(e.line);
  }
  // Second pass: values, in file order.
  std::set<std::string> given;
  std::map<std::string, size_t> seen;
  for (const auto& [key, value] : config_pairs(path, text)) {
    const auto known = by_key.find(key);
    if (known == by_key.end()) throw Error(path, 0, key, "unrecognised option '" + key + "'");
    const IniField& f = *known->second;
    const std::vector<int>& lines = lines_of[key];
    const size_t nth = seen[key]++;
    const int line = nth < lines.size() ? lines[nth] : 0;
    if (!given.insert(key).second) {
      throw Error(path, line, key, "option '" + key + "' cannot be specified more than once");
    }
    if (!parse_value(value, f)) throw Error(path, line, key, invalid_value(value, f));
  }
  for (const auto& [key, f] : by_key) {  // in key order, as Program_options reports them
    if (f->required && !given.count(key)) {
      throw Error(path, 0, key, "the option '" + key + "' is required but missing");
    }
  }
  return given;
}

}  // namespace servesim
