#include "analysis/check.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "util/error.hpp"
#include "util/format.hpp"
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
      if (e.key == "confidence-level") {
        if (!parse_double(e.value, s.confidence) || !(s.confidence > 0.5 && s.confidence < 1)) {
          throw Error(path, e.line, e.key, "must be a number in (0.5, 1), e.g. 0.95");
        }
      }
      if (e.key == "fail-on-alarm") {
        if (e.value != "true" && e.value != "false" && e.value != "any") {
          throw Error(path, e.line, e.key,
                      "true (fail when the alarm fires and the verdict puts it on the service), "
                      "any (whenever it fires) or false");
        }
        s.fail_on_alarm = e.value != "false";
        s.fail_on_any_alarm = e.value == "any";
      }
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

const char* change_test_name(ChangeTest t) {
  switch (t) {
    case ChangeTest::kPaired:
      return "paired t";
    case ChangeTest::kWelch:
      return "Welch t";
    case ChangeTest::kOneSample:
      return "one-sample t";
    case ChangeTest::kSingle:
      break;
  }
  return "single run";
}

namespace {

struct Moments {
  double mean = NAN, var = NAN;
  size_t n = 0;
};

Moments moments(const std::vector<double>& v) {
  Moments m;
  double sum = 0;
  for (double x : v) {
    if (std::isfinite(x)) sum += x, ++m.n;
  }
  if (m.n == 0) return m;
  m.mean = sum / double(m.n);
  if (m.n < 2) return m;
  double ss = 0;
  for (double x : v) {
    if (std::isfinite(x)) ss += (x - m.mean) * (x - m.mean);
  }
  m.var = ss / double(m.n - 1);
  return m;
}

// Student t's two-sided quantile at LEVEL with DF degrees of freedom.
double t_quantile(double level, double df) {
  return boost::math::quantile(boost::math::students_t(df), 1 - (1 - level) / 2);
}

}  // namespace

ChangeInterval change_interval(const std::vector<int64_t>& seeds_b, const std::vector<double>& b,
                               const std::vector<int64_t>& seeds_c, const std::vector<double>& c,
                               double level) {
  ChangeInterval out;
  const Moments mb = moments(b), mc = moments(c);
  out.baseline = mb.mean;
  out.current = mc.mean;
  out.n_baseline = mb.n;
  out.n_current = mc.n;
  if (mb.n == 0 || mc.n == 0 || (mb.n < 2 && mc.n < 2)) return out;
  // Common random numbers: the same seeds on both sides, each once, pair run k with run k.
  std::vector<int64_t> sb = seeds_b, sc = seeds_c;
  std::sort(sb.begin(), sb.end());
  std::sort(sc.begin(), sc.end());
  const bool paired = sb == sc && sb.size() >= 2 && sb.front() >= 0 &&
                      std::adjacent_find(sb.begin(), sb.end()) == sb.end();
  if (paired) {
    std::vector<double> d;
    for (size_t i = 0; i < seeds_b.size(); ++i) {
      const size_t j =
          size_t(std::find(seeds_c.begin(), seeds_c.end(), seeds_b[i]) - seeds_c.begin());
      if (std::isfinite(b[i]) && std::isfinite(c[j])) d.push_back(c[j] - b[i]);
    }
    const Moments md = moments(d);
    if (md.n >= 2) {
      const double h = t_quantile(level, double(md.n - 1)) * std::sqrt(md.var / double(md.n));
      out.test = ChangeTest::kPaired;
      out.n_baseline = out.n_current = md.n;
      out.low = md.mean - h;
      out.high = md.mean + h;
      return out;
    }
  }
  const double diff = mc.mean - mb.mean;
  if (mb.n >= 2 && mc.n >= 2) {
    // Welch: each side's own variance, Welch-Satterthwaite degrees of freedom.
    const double vb = mb.var / double(mb.n), vc = mc.var / double(mc.n);
    const double se = std::sqrt(vb + vc);
    const double df =
        se > 0 ? (vb + vc) * (vb + vc) / (vb * vb / double(mb.n - 1) + vc * vc / double(mc.n - 1))
               : 1;
    const double h = se > 0 ? t_quantile(level, df) * se : 0;
    out.test = ChangeTest::kWelch;
    out.low = diff - h;
    out.high = diff + h;
    return out;
  }
  // One side ran once: its value is taken as exact, the other side's spread is the noise.
  const Moments& many = mb.n >= 2 ? mb : mc;
  const double h = t_quantile(level, double(many.n - 1)) * std::sqrt(many.var / double(many.n));
  out.test = ChangeTest::kOneSample;
  out.low = diff - h;
  out.high = diff + h;
  return out;
}

CheckVerdict judge(const Tolerance& t, const ChangeInterval& c) {
  if (c.test == ChangeTest::kSingle || std::isnan(c.baseline) || std::isnan(c.current)) {
    return judge(t, c.baseline, c.current);
  }
  const double delta = t.relative ? t.amount / 100 * std::abs(c.baseline) : t.amount;
  // A regression only when the whole interval is beyond the tolerance in the bad direction.
  const bool worse = t.rise_is_bad ? c.low > delta : c.high < -delta;
  const bool better = t.rise_is_bad ? c.high < -delta : c.low > delta;
  if (worse) return CheckVerdict::kRegressed;
  if (better) return CheckVerdict::kImproved;
  return CheckVerdict::kOk;
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
  if (node && node->is_boolean()) return node->get<bool>() ? 1 : 0;
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

namespace {

std::vector<double> values_of(const Replicates& r, const std::string& metric) {
  std::vector<double> v;
  for (const ordered_json& s : r.summaries)
    v.push_back(lookup(s, metric));
  return v;
}

// The built-in overload line: a scenario overloaded in most seeds now, and not before, fails.
CheckLine overload_line(const std::string& name, const Replicates& baseline,
                        const Replicates& current) {
  auto count = [](const Replicates& r) {
    size_t n = 0;
    for (const ordered_json& s : r.summaries)
      n += lookup(s, "overloaded.overloaded") == 1 ? 1 : 0;
    return n;
  };
  const size_t b = count(baseline), c = count(current);
  const double sb = baseline.empty() ? NAN : double(b) / double(baseline.summaries.size());
  const double sc = double(c) / double(current.summaries.size());
  CheckLine l;
  l.scenario = name;
  l.metric = "overloaded";
  l.tolerance = "no";
  l.interval.baseline = sb;
  l.interval.current = sc;
  l.change = NAN;
  if (baseline.empty()) {
    l.verdict = CheckVerdict::kNew;
  } else if (sc > 0.5 && !(sb > 0.5)) {
    l.verdict = CheckVerdict::kRegressed;
  }
  if (c > 0) {
    l.note = format(
        "overloaded in %zu of %zu runs (baseline %zu of %zu): the queue grew for as "
        "long as requests arrived, so its latencies measure the run's length",
        c, current.summaries.size(), b, baseline.summaries.size());
  }
  return l;
}

}  // namespace

std::vector<CheckLine> check_scenario(const CheckSpec& spec, const std::string& name,
                                      const Replicates& baseline, const Replicates& current) {
  for (const ordered_json& s : current.summaries)
    check_tolerance_metrics(spec, s);
  std::vector<CheckLine> lines;
  for (const Tolerance& t : spec.tolerances) {
    CheckLine l;
    l.scenario = name;
    l.metric = t.metric;
    l.tolerance = t.text;
    l.interval = change_interval(baseline.seeds, values_of(baseline, t.metric), current.seeds,
                                 values_of(current, t.metric), spec.confidence);
    const ChangeInterval& i = l.interval;
    l.change = i.baseline != 0 ? (i.current / i.baseline - 1) * 100 : NAN;
    l.verdict = baseline.empty() ? CheckVerdict::kNew : judge(t, l.interval);
    if (t.metric == kRejectedShare && is_regression(l.verdict)) {
      l.note = rejected_note(baseline.summaries.front(), current.summaries.front());
    }
    lines.push_back(l);
  }
  // A latency that improved because the slow requests were rejected is no improvement.
  const bool rejections_rose = std::any_of(lines.begin(), lines.end(), [](const CheckLine& l) {
    return l.metric == kRejectedShare && is_regression(l.verdict);
  });
  for (CheckLine& l : lines) {
    if (rejections_rose && l.verdict == CheckVerdict::kImproved) {
      l.verdict = CheckVerdict::kFewerRequests;
    }
  }
  lines.push_back(overload_line(name, baseline, current));
  return lines;
}

}  // namespace servesim
