// The CI gate's reports (check_report.hpp): the terminal's table, --json and --junit.
#include "analysis/check_report.hpp"

#include <cmath>
#include <set>
#include <sstream>

#include "analysis/report.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {

using nlohmann::ordered_json;

// V in SPEC, or "-" when undefined.
std::string check_number(double v, const char* spec) {
  return std::isfinite(v) ? format(spec, v) : "-";
}

std::string check_plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// A line's interval as a change in percent of the baseline mean ("[-3.1%, +8.2%]"), or in the
// metric's unit when the baseline is 0; "-" without one.
std::string check_interval_text(const CheckLine& l) {
  const ChangeInterval& i = l.interval;
  if (i.test == ChangeTest::kSingle || !std::isfinite(i.low)) return "-";
  if (i.baseline != 0 && std::isfinite(i.baseline)) {
    const double b = std::abs(i.baseline);
    return format("[%+.1f%%, %+.1f%%]", i.low / b * 100, i.high / b * 100);
  }
  return format("[%+.3g, %+.3g]", i.low, i.high);
}

// The table and its last line.
void print_check_table(std::ostream& out, const CheckSpec& c, const std::vector<CheckLine>& lines,
                       bool replicated) {
  out << format("%-20s %-32s %12s %12s %9s %20s %9s  %s\n", "scenario", "metric", "baseline",
                "current", "change", "interval", "tolerance", "verdict");
  int regressions = 0;
  std::set<std::string> fresh;
  for (const CheckLine& l : lines) {
    regressions += is_regression(l.verdict);
    if (l.verdict == CheckVerdict::kNew) fresh.insert(l.scenario);
    out << format("%-20s %-32s %12s %12s %9s %20s %9s  %s", l.scenario.c_str(), l.metric.c_str(),
                  check_number(l.interval.baseline, "%.4g").c_str(),
                  check_number(l.interval.current, "%.4g").c_str(),
                  check_number(l.change, "%+.1f%%").c_str(), check_interval_text(l).c_str(),
                  l.tolerance.c_str(), verdict_text(l.verdict))
        << (l.note.empty() ? "" : ": " + l.note) << "\n";
  }
  if (replicated) {
    out << format(
        "(interval: the change of the mean, %.0f%% confidence; a regression is an "
        "interval wholly beyond the tolerance)\n",
        c.confidence * 100);
  } else {
    out << "(one run a side: noise is not estimated; give num-seeds = N for intervals)\n";
  }
  out << (regressions ? "check: FAILED, " + check_plural(size_t(regressions), "regression")
                      : std::string("check: passed"))
      << " (" << check_plural(c.scenarios.size(), "scenario") << ", "
      << check_plural(c.tolerances.size(), "tolerance");
  if (!fresh.empty()) out << "; " << fresh.size() << " new: run check --update to record";
  out << ")\n";
}

std::string check_xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // XML 1.0 allows no control characters but tab and line breaks.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
          out += '?';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace

std::string check_text(const CheckSpec& c, const CheckOutcome& outcome) {
  std::ostringstream out;
  print_check_table(out, c, outcome.lines, outcome.replicated);
  for (const auto& [name, list] : outcome.changes) {
    if (list.empty()) continue;
    constexpr size_t kShown = 6;  // the rest are in --json's config_changes
    std::string joined;
    for (size_t k = 0; k < list.size() && k < kShown; ++k)
      joined += (joined.empty() ? "" : "; ") + list[k];
    if (list.size() > kShown)
      joined += format("; and %zu more (--json lists them)", list.size() - kShown);
    out << "WARNING: " << name << ": the configuration differs from the baseline's: " << joined
        << "\n";
  }
  for (const auto& [name, cause] : outcome.causes) {
    if (outcome.regressions) out << name << ": " << cause.text() << "\n";
  }
  return out.str();
}

std::string check_updated_text(const CheckSpec& c, size_t runs) {
  return "check: baseline " + c.baseline + " updated with " +
         check_plural(c.scenarios.size(), "scenario") + " (" + check_plural(runs, "run") + ")\n";
}

std::string check_json(const CheckSpec& c, const CheckOutcome& outcome) {
  const std::vector<CheckLine>& lines = outcome.lines;
  const int regressions = outcome.regressions;
  ordered_json causes = ordered_json::object();
  for (const auto& [name, cause] : outcome.causes) {
    causes[name] = {{"runs", cause.runs},
                    {"findings", cause.findings},
                    {"finding", cause.finding},
                    {"side", cause.side},
                    {"headline", cause.headline}};
  }
  ordered_json j = {{"spec", c.path},
                    {"baseline", c.baseline},
                    {"confidence_level", c.confidence},
                    {"passed", regressions == 0},
                    {"regressions", regressions}};
  j["lines"] = ordered_json::array();
  for (const CheckLine& l : lines) {
    j["lines"].push_back({{"scenario", l.scenario},
                          {"metric", l.metric},
                          {"tolerance", l.tolerance},
                          {"baseline", json_number(l.interval.baseline)},
                          {"current", json_number(l.interval.current)},
                          {"change_pct", json_number(l.change)},
                          {"interval", {json_number(l.interval.low), json_number(l.interval.high)}},
                          {"test", change_test_name(l.interval.test)},
                          {"n_baseline", l.interval.n_baseline},
                          {"n_current", l.interval.n_current},
                          {"verdict", verdict_text(l.verdict)},
                          {"regression", is_regression(l.verdict)},
                          {"note", l.note}});
  }
  j["config_changes"] = outcome.changes;
  j["causes"] = causes;
  j["servesim"] = provenance_json();
  return json_text(j, 2) + "\n";
}

std::string check_junit(const std::vector<CheckLine>& lines) {
  size_t failures = 0, skipped = 0;
  std::string cases;
  for (const CheckLine& l : lines) {
    const std::string text =
        format("baseline %s, current %s, change %s, interval %s (%s), tolerance %s: %s",
               check_number(l.interval.baseline, "%.6g").c_str(),
               check_number(l.interval.current, "%.6g").c_str(),
               check_number(l.change, "%+.2f%%").c_str(), check_interval_text(l).c_str(),
               change_test_name(l.interval.test), l.tolerance.c_str(), verdict_text(l.verdict)) +
        (l.note.empty() ? "" : "; " + l.note);
    cases += "    <testcase classname=\"" + check_xml_escape(l.scenario) + "\" name=\"" +
             check_xml_escape(l.metric) + "\">\n";
    if (is_regression(l.verdict)) {
      ++failures;
      cases += "      <failure message=\"" + check_xml_escape(verdict_text(l.verdict)) + "\">" +
               check_xml_escape(text) + "</failure>\n";
    } else if (l.verdict == CheckVerdict::kNew) {
      ++skipped;
      cases += "      <skipped message=\"no baseline yet\"/>\n";
    }
    cases += "      <system-out>" + check_xml_escape(text) + "</system-out>\n    </testcase>\n";
  }
  return format(
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite "
             "name=\"servesim check\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
             "skipped=\"%zu\">\n",
             lines.size(), failures, skipped) +
         cases + "  </testsuite>\n</testsuites>\n";
}

}  // namespace servesim
