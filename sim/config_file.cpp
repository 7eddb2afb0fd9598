#include "sim/config_file.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/error.hpp"

namespace servesim {
namespace po = boost::program_options;

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string strip_dashes(std::string name) {
  while (!name.empty() && name.front() == '-')
    name.erase(name.begin());
  return name;
}

}  // namespace

namespace {

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(path, 0, "", "not a readable file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, 0, "", "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte-order mark
  return text;
}

std::vector<IniEntry> parse_entries(const std::string& path, const std::string& text) {
  std::vector<IniEntry> out;
  std::string section, line;
  std::istringstream lines(text);
  for (int lineno = 1; std::getline(lines, line); ++lineno) {
    std::string s = trim(line.substr(0, line.find_first_of("#;")));
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

}  // namespace

std::vector<IniEntry> read_ini_entries(const std::string& path) {
  return parse_entries(path, read_text(path));
}

void store_ini_file(const std::string& path, const po::options_description& desc,
                    po::variables_map& vm, const std::set<std::string>& skip) {
  const std::string text = read_text(path);
  // First pass: syntax and known keys, remembering the line of each key for later errors.
  std::map<std::string, int> line_of;
  for (const IniEntry& e : parse_entries(path, text)) {
    if (e.key.empty()) continue;  // a section header
    const int lineno = e.line;
    const std::string key = (e.section.empty() ? "" : e.section + ".") + e.key;
    if (key == "config" || key == "help") {
      throw Error(path, lineno, key, "only allowed on the command line");
    }
    if (desc.find_nothrow(key, false) == nullptr) throw Error(path, lineno, key, "unknown key");
    if (e.value.empty()) throw Error(path, lineno, key, "empty value");
    line_of.emplace(key, lineno);
  }

  try {
    std::istringstream again(text);
    po::parsed_options parsed = po::parse_config_file(again, desc, false);
    std::erase_if(parsed.options,
                  [&](const po::option& o) { return skip.count(o.string_key) > 0; });
    po::store(parsed, vm);
  } catch (const po::error_with_option_name& e) {
    const std::string key = strip_dashes(e.get_option_name());
    const auto it = line_of.find(key);
    throw Error(path, it == line_of.end() ? 0 : it->second, key, e.what());
  } catch (const po::error& e) {
    throw Error(path, 0, "", e.what());
  }
}

int ini_line_of(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    const std::string s = trim(line.substr(0, line.find_first_of("#;")));
    const auto eq = s.find('=');
    if (eq != std::string::npos && trim(s.substr(0, eq)) == key) return lineno;
  }
  return 0;
}

po::variables_map load_ini_file(const std::string& path, const po::options_description& desc) {
  po::variables_map vm;
  store_ini_file(path, desc, vm);
  try {
    po::notify(vm);
  } catch (const po::error_with_option_name& e) {
    throw Error(path, 0, strip_dashes(e.get_option_name()), e.what());
  }
  return vm;
}

}  // namespace servesim
