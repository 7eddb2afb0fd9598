#include "cli/common.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "cli/config_file.hpp"
#include "util/error.hpp"

namespace servesim::cli {

namespace {

// The values Program_options substitutes into its messages (a protected member, reached through a
// pointer to it, which a derived class may form).
struct PlaceholderValues : po::error_with_option_name {
  static std::map<std::string, std::string>& of(const po::error_with_option_name& e) {
    return const_cast<po::error_with_option_name&>(e).*(&PlaceholderValues::m_substitutions);
  }
};

}  // namespace

std::string po_error_text(const po::error& e) {
  const auto* named = dynamic_cast<const po::error_with_option_name*>(&e);
  if (named == nullptr) return e.what();
  // '%' in a value becomes a byte no template holds while the message is built, then '%' again.
  constexpr char kPercent = '\x1f';
  std::map<std::string, std::string>& values = PlaceholderValues::of(*named);
  for (auto& [key, value] : values)
    std::replace(value.begin(), value.end(), '%', kPercent);
  std::string text = named->what();
  for (auto& [key, value] : values)
    std::replace(value.begin(), value.end(), kPercent, '%');
  std::replace(text.begin(), text.end(), kPercent, '%');
  return text;
}

bool parse_command(int argc, const char* const* argv, const po::options_description& desc,
                   po::variables_map& vm, std::ostream& out, const std::string& usage,
                   const po::positional_options_description* positional) {
  po::command_line_parser parser(argc, argv);
  // No prefix guessing: `trace synth --trace F` must not be read as --trace-format F.
  parser.options(desc).style(po::command_line_style::default_style &
                             ~po::command_line_style::allow_guessing);
  if (positional != nullptr) parser.positional(*positional);
  po::parsed_options cmd = parser.run();
  if (positional == nullptr) {
    // Program_options keeps words that are not options aside, silently: refuse them.
    for (const std::string& word : po::collect_unrecognized(cmd.options, po::include_positional)) {
      std::error_code ec;
      const bool file = std::filesystem::is_regular_file(word, ec);
      throw Error("", "unexpected argument '" + word + "'" +
                          (file ? " (to replay a trace: --trace " + word + ")" : ""));
    }
  }
  po::store(cmd, vm);
  if (vm.count("help")) {
    out << "usage: " << usage << "\n" << desc;
    return false;
  }
  if (vm.count("config")) {
    std::set<std::string> given;
    for (const po::option& o : cmd.options)
      given.insert(o.string_key);
    store_ini_file(vm["config"].as<std::string>(), desc, vm, given);
  }
  po::notify(vm);
  return true;
}

std::string dashed(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::vector<std::string> vllm_spellings(int argc, const char* const* argv) {
  std::vector<std::string> out(argv, argv + argc);
  for (std::string& a : out) {
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) continue;
    const size_t end = std::min(a.find('='), a.size());
    std::replace(a.begin() + 2, a.begin() + std::ptrdiff_t(end), '_', '-');
  }
  return out;
}

double parse_rate(const std::string& text) {
  if (text == "inf") return INFINITY;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v > 0) || !std::isfinite(v)) {
    throw Error("request-rate", "'" + text + "' is not a positive number or inf");
  }
  return v;
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    std::stringstream ss(item);
    for (std::string part; std::getline(ss, part, ',');) {
      if (!part.empty()) out.push_back(part);
    }
  }
  return out;
}

void add_run_inputs(PathPlan& plan, const RunSpec& s) {
  plan.input("trace", s.trace);
  plan.input("model-file", s.model_file);
  plan.input("gpu-file", s.gpu_file);
  plan.input("profiles", s.profiles);
  for (const std::string& path : split_list({s.calibration}))
    plan.input("calibration", path);
  for (const std::string& path : split_list({s.servegen}))
    plan.input("servegen", path);
}

void add_config_input(PathPlan& plan, const po::variables_map& vm) {
  if (vm.count("config")) plan.input("config", vm["config"].as<std::string>());
}

}  // namespace servesim::cli
