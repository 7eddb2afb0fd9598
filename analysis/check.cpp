#include "analysis/check.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "util/error.hpp"
#include "util/text_input.hpp"

namespace servesim {

using nlohmann::ordered_json;

namespace {
constexpr const char* kRejectedShare = "requests.rejected_share";
}  // namespace

Tolerance parse_tolerance(const std::string& spec, const IniEntry& e) {
  Tolerance t;
  t.metric = e.key;
  t.text = e.value;
  t.line = e.line;
  std::string v = e.value;
  if (v.empty() || (v[0] != '+' && v[0] != '-')) {
    throw Error(spec, e.line, e.key, "a tolerance starts with + (may rise) or - (may fall)");
  }
  t.rise_is_bad = v[0] == '+';
  v.erase(0, 1);
  if (!v.empty() && v.back() == '%') {
    t.relative = true;
    v.pop_back();
  }
  // A decimal number after the one sign: no second sign, no hex (std::stod read "+0x10" as 16).
  if (v.empty() || v[0] == '+' || v[0] == '-' || !parse_double(v, t.amount) || !(t.amount >= 0)) {
    throw Error(spec, e.line, e.key, "'" + e.value + "' must be like +10%, -5% or +20");
  }
  return t;
}

namespace {

// A [scenario.NAME] header: a new, well-named scenario.
void add_scenario(CheckSpec& s, const IniEntry& e) {
  const std::string name = e.section.substr(9);
  if (std::find(s.scenarios.begin(), s.scenarios.end(), name) != s.scenarios.end()) {
    throw Error(s.path, e.line, e.section, "a second section for the same scenario");
  }
  if (name.find('/') != std::string::npos) {
    throw Error(s.path, e.line, e.section, "a scenario name cannot hold '/'");
  }
  s.scenarios.push_back(name);
}

}  // namespace

CheckSpec read_check_spec(const std::string& path, bool update) {
  CheckSpec s;
  s.path = path;
  for (const IniEntry& e : read_ini_entries(path)) {
    if (e.section.empty()) {
      if (e.key == "baseline") s.baseline = e.value;
    } else if (e.section == "tolerance") {
      if (!e.key.empty()) s.tolerances.push_back(parse_tolerance(path, e));
    } else if (e.section.rfind("scenario.", 0) == 0 && e.section.size() > 9) {
      if (e.key.empty()) add_scenario(s, e);  // the section's header
    } else {
      throw Error(path, e.line, e.section,
                  "unknown section (expected [tolerance] or [scenario.NAME])");
    }
  }
  if (s.baseline.empty()) throw Error(path, 0, "baseline", "missing: baseline = FILE.h5");
  if (s.scenarios.empty()) throw Error(path, 0, "scenario", "no [scenario.NAME] section");
  if (s.tolerances.empty() && !update) {
    throw Error(path, 0, "tolerance", "no [tolerance] entries");
  }
  const bool own = std::any_of(s.tolerances.begin(), s.tolerances.end(),
                               [](const Tolerance& t) { return t.metric == kRejectedShare; });
  if (!own) s.tolerances.push_back({kRejectedShare, "+0", 0, 0, false, true});
  if (std::filesystem::path(s.baseline).is_relative()) {
    s.baseline = (std::filesystem::path(path).parent_path() / s.baseline).string();
  }
  return s;
}

const char* verdict_text(CheckVerdict v) {
  switch (v) {
    case CheckVerdict::kOk:
      return "ok";
    case CheckVerdict::kUndefinedInBoth:
      return "ok (undefined in both)";
    case CheckVerdict::kImproved:
      return "improved (consider --update)";
    case CheckVerdict::kBecameDefined:
      return "defined now (consider --update)";
    case CheckVerdict::kNew:
      return "new (no baseline: run check --update)";
    case CheckVerdict::kFewerRequests:
      return "not comparable: over fewer requests (rejections rose)";
    case CheckVerdict::kRegressed:
      return "REGRESSED";
    case CheckVerdict::kBecameUndefined:
      break;
  }
  return "REGRESSED (undefined)";
}

bool is_regression(CheckVerdict v) {
  return v == CheckVerdict::kRegressed || v == CheckVerdict::kBecameUndefined;
}

CheckVerdict judge(const Tolerance& t, double b, double c) {
  if (std::isnan(b) && std::isnan(c)) return CheckVerdict::kUndefinedInBoth;
  if (std::isnan(c)) return CheckVerdict::kBecameUndefined;
  if (std::isnan(b)) return CheckVerdict::kBecameDefined;
  const double delta = t.relative ? t.amount / 100 * std::abs(b) : t.amount;
  const double limit = t.rise_is_bad ? b + delta : b - delta;
  if (t.rise_is_bad ? c > limit : c < limit) return CheckVerdict::kRegressed;
  if (t.rise_is_bad ? c < b - delta : c > b + delta) return CheckVerdict::kImproved;
  return CheckVerdict::kOk;
}

namespace {

// The node at dotted PATH of a summary (ttft_ms.p50), or null when there is none.
const ordered_json* find_path(const ordered_json& j, const std::string& path) {
  const ordered_json* node = &j;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) {
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
  }
  return node;
}

// The number at PATH; NaN when it is null (an undefined statistic) or missing. A summary written
// before requests.rejected_share existed gives it from its counts.
double lookup(const ordered_json& j, const std::string& path) {
  const ordered_json* node = find_path(j, path);
  if (node && node->is_number()) return node->get<double>();
  if (path != kRejectedShare) return NAN;
  const double total = lookup(j, "requests.total");
  return total > 0 ? lookup(j, "requests.rejected") / total : NAN;
}

// "234 of 500 requests rejected (baseline 0 of 500)".
std::string rejected_note(const ordered_json& baseline, const ordered_json& current) {
  auto count = [](const ordered_json& j) {
    return std::to_string(int64_t(lookup(j, "requests.rejected"))) + " of " +
           std::to_string(int64_t(lookup(j, "requests.total")));
  };
  return count(current) + " requests rejected (baseline " + count(baseline) + ")";
}

}  // namespace

void check_tolerance_metrics(const CheckSpec& spec, const ordered_json& summary) {
  for (const Tolerance& t : spec.tolerances) {
    const ordered_json* node = find_path(summary, t.metric);
    if (node == nullptr || !(node->is_number() || node->is_null())) {
      throw Error(spec.path, t.line, t.metric,
                  "not a number in the JSON summary (e.g. ttft_ms.p50, otps.p50, "
                  "throughput.output_tokens_per_s)");
    }
  }
}

std::vector<CheckLine> check_scenario(const CheckSpec& spec, const std::string& name,
                                      const ordered_json& baseline, const ordered_json& current) {
  check_tolerance_metrics(spec, current);
  std::vector<CheckLine> lines;
  for (const Tolerance& t : spec.tolerances) {
    CheckLine l{
        name, &t, lookup(baseline, t.metric), lookup(current, t.metric), NAN, CheckVerdict::kOk,
        ""};
    l.change = l.baseline != 0 ? (l.current / l.baseline - 1) * 100 : NAN;
    l.verdict = baseline.is_null() ? CheckVerdict::kNew : judge(t, l.baseline, l.current);
    if (t.metric == kRejectedShare && is_regression(l.verdict)) {
      l.note = rejected_note(baseline, current);
    }
    lines.push_back(l);
  }
  // A latency that improved because the slow requests were rejected is no improvement.
  const bool rejections_rose = std::any_of(lines.begin(), lines.end(), [](const CheckLine& l) {
    return l.tolerance->metric == kRejectedShare && is_regression(l.verdict);
  });
  for (CheckLine& l : lines) {
    if (rejections_rose && l.verdict == CheckVerdict::kImproved) {
      l.verdict = CheckVerdict::kFewerRequests;
    }
  }
  return lines;
}

}  // namespace servesim
