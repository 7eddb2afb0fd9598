// What differs between two recorded configurations (analysis/config_diff.hpp).
#include "analysis/config_diff.hpp"

namespace servesim {

using nlohmann::ordered_json;

namespace {

std::string value_text(const ordered_json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

void diff(const std::string& path, const ordered_json& b, const ordered_json& c,
          std::vector<std::string>& out) {
  if (!b.is_object() || !c.is_object()) {
    if (b != c) out.push_back(path + ": " + value_text(b) + " -> " + value_text(c));
    return;
  }
  const std::string prefix = path.empty() ? "" : path + ".";
  for (const auto& [key, value] : b.items()) {
    if (!c.contains(key)) {
      out.push_back(prefix + key + ": " + value_text(value) + " -> (none)");
    } else {
      diff(prefix + key, value, c[key], out);
    }
  }
  for (const auto& [key, value] : c.items()) {
    if (!b.contains(key)) out.push_back(prefix + key + ": (none) -> " + value_text(value));
  }
}

}  // namespace

int64_t summary_seed(const ordered_json& summary) {
  if (!summary.is_object() || !summary.contains("config")) return -1;
  return config_seed(summary["config"]);
}

int64_t config_seed(const ordered_json& config) {
  if (!config.is_object() || !config.contains("workload")) return -1;
  const ordered_json& workload = config["workload"];
  if (!workload.is_object() || !workload.contains("seed")) return -1;
  const ordered_json& seed = workload["seed"];
  return seed.is_number_integer() ? seed.get<int64_t>() : -1;
}

std::vector<std::string> configuration_changes(const ordered_json& baseline,
                                               const ordered_json& current, bool with_seed) {
  ordered_json b = baseline, c = current;
  if (!with_seed) {
    for (ordered_json* j : {&b, &c}) {
      if (j->is_object() && j->contains("workload") && (*j)["workload"].is_object()) {
        (*j)["workload"].erase("seed");
      }
    }
  }
  std::vector<std::string> out;
  diff("", b, c, out);
  return out;
}

std::vector<std::string> config_changes(const ordered_json& baseline, const ordered_json& current) {
  if (!baseline.is_object() || !current.is_object() || !baseline.contains("config") ||
      !current.contains("config")) {
    return {};
  }
  return configuration_changes(baseline["config"], current["config"]);
}

}  // namespace servesim
