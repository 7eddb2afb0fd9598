#include "analysis/capacity.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "analysis/report.hpp"
#include "util/error.hpp"

namespace servesim {

std::string metric_column(std::string name) {
  std::replace(name.begin(), name.end(), '.', '_');
  const size_t p = name.find("_p");
  if (name.size() > 3 && name.compare(name.size() - 3, 3, "_ms") == 0 && p != std::string::npos &&
      p + 3 < name.size()) {
    const std::string base = name.substr(0, p), q = name.substr(p + 1, name.size() - 3 - p - 1);
    return base + "_ms_" + q;
  }
  for (const char* stat : {"_mean_ms", "_max_ms"}) {
    const std::string st = stat;
    if (name.size() > st.size() && name.compare(name.size() - st.size(), st.size(), st) == 0) {
      return name.substr(0, name.size() - st.size()) + "_ms_" + st.substr(1, st.size() - 4);
    }
  }
  return name;
}

namespace {

// One term of an SLO: METRIC=VALUE, METRIC<=VALUE or METRIC>=VALUE.
Bound parse_bound(const std::string& term, const std::set<std::string>& known) {
  Bound b;
  b.text = term;
  size_t op = term.find("<=");
  size_t len = 2;
  int dir = 0;
  if (op != std::string::npos) {
    dir = 1;
  } else if ((op = term.find(">=")) != std::string::npos) {
    dir = -1;
  } else {
    op = term.find('=');
    len = 1;
  }
  if (op == std::string::npos) throw Error("slo", "'" + term + "' must be METRIC=VALUE");
  b.metric = metric_column(term.substr(0, op));
  if (!known.count(b.metric)) {
    throw Error("slo", "'" + term.substr(0, op) +
                           "' is not a summary metric (e.g. ttft_p50_ms, itl_p99_ms, "
                           "e2e_p95_ms, queue_p50_ms, otps_p50, output_tokens_per_s)");
  }
  const std::string value = term.substr(op + len);
  try {
    size_t used = 0;
    b.limit = std::stod(value, &used);
    if (used != value.size() || !std::isfinite(b.limit)) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw Error("slo", "'" + term + "': '" + value + "' is not a number");
  }
  const bool higher_is_better = b.metric.rfind("otps", 0) == 0 ||
                                b.metric.find("_per_s") != std::string::npos ||
                                b.metric == "completed";
  b.upper = dir == 0 ? !higher_is_better : dir > 0;
  return b;
}

}  // namespace

std::vector<Bound> parse_slo(const std::string& text) {
  std::vector<Bound> out;
  std::set<std::string> known;
  for (const auto& [name, v] : summary_metrics(RunSummary{}))
    known.insert(name);
  std::stringstream ss(text);
  for (std::string term; std::getline(ss, term, ',');) {
    if (!term.empty()) out.push_back(parse_bound(term, known));
  }
  if (out.empty()) throw Error("slo", "no bound given");
  return out;
}

double attainment(const RunResult& r, double ttft_ms, double tpot_ms) {
  if (r.requests.empty()) return 0;
  size_t good = 0;
  for (const RequestRecord& q : r.requests) {
    if (!q.finished()) continue;
    if (q.ttft_s() * 1e3 > ttft_ms) continue;
    if (q.has_decode() && q.tpot_s() * 1e3 > tpot_ms) continue;
    ++good;
  }
  return double(good) / double(r.requests.size());
}

namespace {

// BASE at RATE, simulated and judged against SPEC.
Probe probe(const RunSpec& base, const CapacitySpec& spec, double rate, Inputs& inputs) {
  RunSpec s = base;
  s.request_rate = rate;
  s.given.insert("request-rate");
  const PointRun p = run_point(s, inputs);
  Probe pr;
  pr.rate = rate;
  pr.summary = p.run.summary;
  pr.label = run_label(p.run);
  pr.policy = policy_name(p.run.config.scheduler.policy);
  pr.budget = p.run.config.scheduler.max_num_batched_tokens;
  pr.ok = true;
  const auto metrics = summary_metrics(p.run.summary);
  for (const Bound& b : spec.bounds) {
    for (const auto& [name, v] : metrics) {
      if (name != b.metric) continue;
      if (b.upper ? !(v <= b.limit) : !(v >= b.limit)) pr.ok = false;
    }
  }
  // Rejections (request too long for the context, the token budget or the KV cache) do not
  // depend on the rate: a configuration that refuses requests does not serve the workload.
  if (p.run.summary.rejected > 0) pr.ok = false;
  if (spec.attainment > 0) {
    pr.attained = attainment(p.run, spec.ttft_ms, spec.tpot_ms);
    if (pr.attained < spec.attainment) pr.ok = false;
  }
  return pr;
}

// The search's state: the highest rate known to meet the SLO (LO, 0 = none) and the lowest
// known to fail it (HI, 0 = none).
struct Bracket {
  double lo = 0, hi = 0;
  Probe lo_probe;
};

// From a first probe that met the SLO: double up to a rate that fails; --rate-max itself is the
// last rate tried.
void bracket_up(Bracket& b, const Probe& first, const RunSpec& base, const CapacitySpec& spec,
                CapacityResult& c, Inputs& inputs) {
  b.lo = first.rate;
  b.lo_probe = first;
  while (b.lo < spec.rate_max) {
    const double r = std::min(b.lo * 2, spec.rate_max);
    Probe p = probe(base, spec, r, inputs);
    ++c.iterations;
    if (!p.ok) {
      b.hi = r;
      break;
    }
    b.lo = r;
    b.lo_probe = p;
  }
  c.above_max = b.hi == 0;
}

// From a first probe that failed: halve down to a rate that meets the SLO, at most 10 times.
void bracket_down(Bracket& b, const Probe& first, const RunSpec& base, const CapacitySpec& spec,
                  CapacityResult& c, Inputs& inputs) {
  b.hi = first.rate;
  const double floor_rate = spec.rate_start / 1024;
  for (double r = first.rate / 2; r >= floor_rate; r /= 2) {
    Probe p = probe(base, spec, r, inputs);
    ++c.iterations;
    if (p.ok) {
      b.lo = r;
      b.lo_probe = p;
      break;
    }
    b.hi = r;
  }
  c.below_min = b.lo == 0;
}

}  // namespace

CapacityResult search(const RunSpec& base, const CapacitySpec& spec, Inputs& inputs) {
  CapacityResult c;
  const Probe first = probe(base, spec, spec.rate_start, inputs);
  c.iterations = 1;
  c.label = first.label;
  c.policy = first.policy;
  c.budget = first.budget;
  if (first.summary.rejected > 0) {
    c.rejected = first.summary.rejected;
    return c;
  }
  Bracket b;
  if (first.ok) {
    bracket_up(b, first, base, spec, c, inputs);
  } else {
    bracket_down(b, first, base, spec, c, inputs);
  }
  // Bisection between a rate that meets the SLO and one that does not.
  while (!c.above_max && !c.below_min && (b.hi - b.lo) > spec.rel_tol * b.hi && c.iterations < 60) {
    const double mid = (b.lo + b.hi) / 2;
    Probe p = probe(base, spec, mid, inputs);
    ++c.iterations;
    if (p.ok) {
      b.lo = mid;
      b.lo_probe = p;
    } else {
      b.hi = mid;
    }
  }
  c.capacity = b.lo;
  c.at = b.lo_probe;
  return c;
}

std::string capacity_note(const CapacityResult& c) {
  if (c.rejected > 0) {
    return "rejects " + std::to_string(c.rejected) +
           " requests at any rate (too long for its context, budget or KV)";
  }
  if (c.above_max) return "at least: meets the SLO at --rate-max";
  if (c.below_min) return "fails the SLO at every rate tried, down to --rate-start/1024";
  return "";
}

int64_t replicas_for(double target, const CapacityResult& c) {
  return target > 0 && c.capacity > 0 ? int64_t(std::ceil(target / c.capacity - 1e-9)) : 0;
}

SweepTable capacity_table(const std::vector<CapacityResult>& results, double target,
                          const std::string& slo_text) {
  SweepTable t;
  t.text_columns = {"label", "policy", "note"};
  t.int_columns = {"max_num_batched_tokens", "replicas", "iterations"};
  t.real_columns = {"capacity_req_s", "attainment"};
  for (const auto& [name, v] : summary_metrics(RunSummary{}))
    t.real_columns.push_back(name);
  t.points_total = results.size();
  t.grid = slo_text;
  for (size_t i = 0; i < results.size(); ++i) {
    const CapacityResult& c = results[i];
    SweepRow row;
    row.point = int64_t(i);
    row.text = {c.label, c.policy, capacity_note(c)};
    row.ints = {c.budget, replicas_for(target, c), c.iterations};
    row.reals = {c.capacity, c.at.attained};
    for (const auto& [name, v] : summary_metrics(c.at.summary))
      row.reals.push_back(c.capacity > 0 ? v : NAN);
    t.rows.push_back(row);
  }
  return t;
}

}  // namespace servesim
