#include "cli/config_file.hpp"

#include <map>
#include <sstream>

#include "cli/common.hpp"
#include "util/error.hpp"
#include "util/ini.hpp"

namespace servesim::cli {
namespace po = boost::program_options;

namespace {

std::string strip_dashes(std::string name) {
  while (!name.empty() && name.front() == '-')
    name.erase(name.begin());
  return name;
}

// TEXT with each key spelled with dashes (max_num_seqs = 64 is max-num-seqs = 64), as on the
// command line; comments, sections, values and line numbers unchanged.
std::string dashed_keys(const std::string& text) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('='), hash = line.find('#');
    if (eq != std::string::npos && (hash == std::string::npos || eq < hash)) {
      line = dashed(line.substr(0, eq)) + line.substr(eq);
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

void store_ini_file(const std::string& path, const po::options_description& desc,
                    po::variables_map& vm, const std::set<std::string>& skip) {
  const std::string text = dashed_keys(read_ini_text(path));
  const std::map<std::string, int> line_of = check_ini_keys(
      path, text, [&](const std::string& key) { return desc.find_nothrow(key, false) != nullptr; });
  try {
    std::istringstream again(text);
    po::parsed_options parsed = po::parse_config_file(again, desc, false);
    std::erase_if(parsed.options,
                  [&](const po::option& o) { return skip.count(o.string_key) > 0; });
    po::store(parsed, vm);
  } catch (const po::error_with_option_name& e) {
    const std::string key = strip_dashes(e.get_option_name());
    const auto it = line_of.find(key);
    throw Error(path, it == line_of.end() ? 0 : it->second, key, po_error_text(e));
  } catch (const po::error& e) {
    throw Error(path, 0, "", po_error_text(e));
  }
}

}  // namespace servesim::cli
