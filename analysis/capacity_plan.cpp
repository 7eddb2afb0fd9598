#include "analysis/capacity_plan.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/report.hpp"
#include "util/error.hpp"
#include "util/field_path.hpp"
#include "util/format.hpp"
#include "util/parallel.hpp"
#include "util/stats.hpp"

namespace servesim {

namespace {

constexpr size_t kMaxPlanWindows = 10000;

// The summary metrics a day run's window is judged on: what its requests' records give.
bool judged_per_window(const std::string& metric) {
  for (const char* p : {"ttft_ms_", "itl_ms_", "tpot_ms_", "e2e_ms_", "queue_ms_", "otps_"}) {
    if (metric.rfind(p, 0) == 0) return true;
  }
  return metric == "completed" || metric == "rejected" || metric == "rejected_share";
}

// BASE without its autoscaler: a fixed fleet of N replicas.
RunSpec fixed_fleet(const RunSpec& base, int n) {
  RunSpec s = base;
  s.autoscale.clear();
  s.autoscale_schedule.clear();
  for (Given<double>* g :
       {&s.autoscale_target, &s.autoscale_period_s, &s.scale_up_window_s, &s.scale_down_window_s})
    g->forget();
  s.min_replicas.forget();
  s.max_replicas.forget();
  s.num_replicas = n;
  s.data_parallel_size.forget();
  return s;
}

// BASE's requests arriving in [START, END) of its timeline (after BASE's own --window).
RunSpec window_of(const RunSpec& base, double start, double end) {
  RunSpec s = base;
  const double offset = base.what_if.has_window ? base.what_if.window_start_s : 0;
  s.what_if.has_window = true;
  s.what_if.window_start_s = offset + start;
  s.what_if.window_end_s =
      std::min(offset + end, base.what_if.has_window ? base.what_if.window_end_s : INFINITY);
  return s;
}

// The fewest replicas meeting SPEC on window W's requests.
void size_window(const RunSpec& base, const CapacitySpec& spec, int limit, PlanWindow& w,
                 Inputs& inputs) {
  if (w.requests == 0) {
    w.replicas = std::max(1, *base.min_replicas);
    return;
  }
  std::map<int, Probe> tried;
  auto meets = [&](int n) {
    ++w.probes;
    const Probe p = judge_run(window_of(fixed_fleet(base, n), w.start_s, w.end_s), spec, inputs);
    tried[n] = p;
    return p.ok;
  };
  int hi = std::max(1, *base.min_replicas), lo = hi - 1;  // LO fails (or is below the floor)
  while (!meets(hi)) {
    lo = hi;
    if (hi >= limit) {
      w.replicas = limit;
      w.met = false;
      w.failed = tried[hi].failed;
      return;
    }
    hi = std::min(limit, hi * 2);
  }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (meets(mid) ? hi : lo) = mid;
  }
  w.replicas = hi;
  if (tried.count(lo)) w.failed = tried[lo].failed;
}

// The summary of R's requests arriving in [START, END), from their records (ITL as TPOT).
RunSummary window_summary(const RunResult& r, double start, double end) {
  RunSummary s;
  std::vector<double> ttft, tpot, e2e, queue, otps;
  for (const RequestRecord& q : r.requests) {
    if (q.arrival_s < start || q.arrival_s >= end) continue;
    ++s.total;
    if (!q.finished()) {
      ++s.rejected;
      continue;
    }
    ++s.completed;
    ttft.push_back(q.ttft_s() * 1e3);
    e2e.push_back(q.e2e_s() * 1e3);
    queue.push_back(q.queue_s() * 1e3);
    if (q.has_decode()) {
      tpot.push_back(q.tpot_s() * 1e3);
      otps.push_back(q.otps());
    }
  }
  s.ttft_ms = summarize(ttft);
  s.e2e_ms = summarize(e2e);
  s.queue_ms = summarize(queue);
  s.otps = summarize(otps);
  std::vector<double> itl = tpot;
  s.tpot_ms = summarize(tpot);
  s.itl_ms = summarize(itl);
  return s;
}

// The tightest upper limit among SPEC's bounds on metrics starting with one of PREFIXES.
double tightest(const CapacitySpec& spec, std::initializer_list<const char*> prefixes) {
  double limit = INFINITY;
  for (const Bound& b : spec.bounds) {
    for (const char* p : prefixes) {
      if (b.upper && b.metric.rfind(p, 0) == 0) limit = std::min(limit, b.limit);
    }
  }
  return limit;
}

// Day run D of BASE-like spec S, judged per window of P.
DayRun run_day(const std::string& name, const RunSpec& s, const CapacitySpec& spec,
               const DayPlan& p, double usd_per_replica_h, Inputs& inputs) {
  const PointRun run = run_point(s, inputs);
  const RunResult& r = run.run;
  DayRun d;
  d.name = name;
  d.summary = r.summary;
  d.scale = r.fleet.autoscale;
  double first = INFINITY, end = 0;
  for (const RequestRecord& q : r.requests) {
    first = std::min(first, q.arrival_s);
    end = std::max(end, std::max(q.arrival_s, q.last_token_s));
  }
  if (d.scale.enabled) {
    d.peak_replicas = d.scale.peak_replicas;
    d.replica_hours = d.scale.replica_hours;
  } else {
    d.peak_replicas = r.fleet.num_replicas;
    d.replica_hours = std::isfinite(first) ? double(d.peak_replicas) * (end - first) / 3600 : 0;
  }
  d.gpu_hours = d.replica_hours * p.gpus_per_replica;
  d.usd = d.replica_hours * usd_per_replica_h;
  CapacitySpec judged = spec;
  judged.bounds.clear();
  for (const Bound& b : spec.bounds) {
    if (judged_per_window(b.metric)) judged.bounds.push_back(b);
  }
  std::map<std::string, int> failures;
  for (const PlanWindow& w : p.windows) {
    if (w.requests == 0) continue;
    ++d.windows_judged;
    const RunSummary ws = window_summary(r, w.start_s, w.end_s);
    double attained = NAN;
    if (spec.attainment > 0) {
      size_t good = 0;
      for (const RequestRecord& q : r.requests) {
        if (q.arrival_s < w.start_s || q.arrival_s >= w.end_s || !q.finished()) continue;
        if (q.ttft_s() * 1e3 <= spec.ttft_ms &&
            (!q.has_decode() || q.tpot_s() * 1e3 <= spec.tpot_ms)) {
          ++good;
        }
      }
      attained = double(good) / double(std::max<uint64_t>(1, ws.total));
    }
    const std::string failed = slo_failure(judged, ws, attained);
    if (failed.empty()) {
      ++d.windows_met;
    } else {
      ++failures[failed];
    }
  }
  int most = 0;
  for (const auto& [term, n] : failures) {
    if (n > most) {
      most = n;
      d.worst_term = term;
    }
  }
  d.request_attainment = attainment(r, p.ttft_ms, p.tpot_ms);
  return d;
}

}  // namespace

DayPlan plan_day(const RunSpec& base, const CapacitySpec& spec, double window_s, int max_replicas,
                 int jobs, Inputs& inputs) {
  if (!(window_s >= 1 && window_s <= 1e7)) {
    throw Error(field::kOverTime, "the window must be in [1, 1e7] seconds");
  }
  DayPlan p;
  p.window_s = window_s;
  p.max_replicas = max_replicas;
  const LoadedWorkload all = load_workload(fixed_fleet(base, 1), inputs);
  if (all.requests.empty())
    throw Error(field::kOverTime, "the workload has no requests to plan for");
  const double first = all.requests.front().arrival_s, last = all.requests.back().arrival_s;
  p.span_s = last - first;
  const double start = std::floor(first / window_s) * window_s;
  const size_t count = size_t(std::floor((last - start) / window_s)) + 1;
  if (count > kMaxPlanWindows) {
    throw Error(field::kOverTime, format("%zu windows of %g s: at most %zu (a longer window)",
                                         count, window_s, kMaxPlanWindows));
  }
  p.windows.resize(count);
  for (size_t k = 0; k < count; ++k) {
    p.windows[k].start_s = start + double(k) * window_s;
    p.windows[k].end_s = p.windows[k].start_s + window_s;
  }
  for (const RequestSpec& r : all.requests) {
    const size_t k = std::min(count - 1, size_t((r.arrival_s - start) / window_s));
    ++p.windows[k].requests;
  }
  p.ttft_ms = spec.attainment > 0 ? spec.ttft_ms : tightest(spec, {"ttft_ms_"});
  p.tpot_ms = spec.attainment > 0 ? spec.tpot_ms : tightest(spec, {"itl_ms_", "tpot_ms_"});
  parallel_for(
      count, jobs, "over-time",
      [&](size_t k) { size_window(base, spec, max_replicas, p.windows[k], inputs); },
      [](size_t) {});

  // The three fleets over the whole day, priced per replica-hour.
  const PointRun one = run_point(window_of(fixed_fleet(base, 1), first, first + 1e-6), inputs);
  p.tp = one.run.config.tp;
  p.gpus_per_replica = one.run.config.gpus();
  std::vector<GpuPool> pools = one.pools;
  for (GpuPool& g : pools)
    g.replicas = 1;
  const FleetPrice price = price_pools(pools, spec.cost);
  p.usd_per_gpu_h = price.gpus > 0 ? price.usd_per_h / double(price.gpus) : NAN;
  int peak = 1;
  RunSpec plan = fixed_fleet(base, 1);
  plan.num_replicas.forget();
  for (const PlanWindow& w : p.windows) {
    peak = std::max(peak, w.replicas);
    if (plan.autoscale_schedule.empty() || plan.autoscale_schedule.back().second != w.replicas) {
      plan.autoscale_schedule.emplace_back(w.start_s, w.replicas);
    }
  }
  std::vector<std::pair<std::string, RunSpec>> fleets = {{"fixed", fixed_fleet(base, peak)},
                                                         {"plan", plan}};
  if (!base.autoscale.empty()) fleets.emplace_back("autoscaler", base);
  p.runs.resize(fleets.size());
  parallel_for(
      fleets.size(), jobs, "over-time",
      [&](size_t i) {
        p.runs[i] = run_day(fleets[i].first, fleets[i].second, spec, p, price.usd_per_h, inputs);
      },
      [](size_t) {});
  return p;
}

namespace {

// "with TTFT <= 2000 ms and TPOT <= 50 ms", the bounds given only ("TPOT <= inf ms" when none was,
// issue 44); "finished" with neither.
std::string met_bounds(double ttft_ms, double tpot_ms) {
  std::string s;
  if (std::isfinite(ttft_ms)) s = format("TTFT <= %g ms", ttft_ms);
  if (std::isfinite(tpot_ms)) s += format("%sTPOT <= %g ms", s.empty() ? "" : " and ", tpot_ms);
  return s.empty() ? "finished" : "with " + s;
}

}  // namespace

std::string day_plan_text(const DayPlan& p) {
  std::string out = format(
      "%zu windows of %g s over %.0f s of arrivals; per window, the fewest replicas "
      "meeting the SLO (its requests alone, from an empty fleet; at most %d):\n",
      p.windows.size(), p.window_s, p.span_s, p.max_replicas);
  out += format("%10s %10s %9s %9s %9s  %s\n", "start_s", "end_s", "requests", "rate_rps",
                "replicas", "failed_with_one_fewer");
  for (const PlanWindow& w : p.windows) {
    out += format("%10.0f %10.0f %9lld %9.3g %8d%s  %s\n", w.start_s, w.end_s,
                  static_cast<long long>(w.requests), double(w.requests) / p.window_s, w.replicas,
                  w.met ? " " : "!", w.failed.c_str());
  }
  if (std::any_of(p.windows.begin(), p.windows.end(), [](const PlanWindow& w) { return !w.met; })) {
    out += "! even the limit failed the SLO in that window (raise --max-replicas)\n";
  }
  const int pp = p.gpus_per_replica / p.tp;
  out += format("\nthe day under each fleet, simulated over every request (TP %d%s per replica):\n",
                p.tp, pp > 1 ? format(" x PP%d", pp).c_str() : "");
  out += format("%-10s %5s %10s %9s %9s %12s %13s %9s %9s\n", "fleet", "peak", "replica_h", "gpu_h",
                "usd", "windows_met", "requests_met", "ttft_p99", "itl_p99");
  for (const DayRun& d : p.runs) {
    out += format("%-10s %5d %10.2f %9.2f %9s %5d/%-6d %12.1f%% %9.0f %9.1f%s\n", d.name.c_str(),
                  d.peak_replicas, d.replica_hours, d.gpu_hours,
                  std::isnan(d.usd) ? "-" : format("%.2f", d.usd).c_str(), d.windows_met,
                  d.windows_judged, d.request_attainment * 100, d.summary.ttft_ms.p99,
                  d.summary.itl_ms.p99,
                  d.worst_term.empty() ? "" : ("  (most failed: " + d.worst_term + ")").c_str());
  }
  out += format(
      "windows_met: windows whose requests meet the SLO's latency terms in the day run (ITL "
      "terms judged on each request's TPOT); requests_met: requests %s. fixed: the most any "
      "window needs, all day; plan: the per-window counts, each window's new replicas started a "
      "provisioning time ahead; replica_h: billed from start or provisioning to stop.\n",
      met_bounds(p.ttft_ms, p.tpot_ms).c_str());
  return out;
}

SweepTable day_plan_table(const DayPlan& p) {
  SweepTable t;
  t.text_columns = {"failed_with_one_fewer"};
  t.int_columns = {"requests", "replicas", "met", "probes"};
  t.real_columns = {"start_s", "end_s", "rate_req_s"};
  t.points_total = p.windows.size();
  t.grid = format("over-time %g s", p.window_s);
  for (size_t i = 0; i < p.windows.size(); ++i) {
    const PlanWindow& w = p.windows[i];
    SweepRow row;
    row.point = int64_t(i);
    row.text = {w.failed};
    row.ints = {w.requests, w.replicas, w.met ? 1 : 0, w.probes};
    row.reals = {w.start_s, w.end_s, double(w.requests) / p.window_s};
    t.rows.push_back(std::move(row));
  }
  return t;
}

SweepTable day_fleets_table(const DayPlan& p) {
  SweepTable t;
  t.text_columns = {"fleet", "most_failed_term"};
  t.int_columns = {"peak_replicas", "windows_met", "windows_judged"};
  t.real_columns = {"replica_hours", "gpu_hours",  "usd",       "request_attainment",
                    "ttft_ms_p99",   "itl_ms_p99", "completed", "rejected"};
  t.points_total = p.runs.size();
  t.grid = format("over-time %g s", p.window_s);
  for (size_t i = 0; i < p.runs.size(); ++i) {
    const DayRun& d = p.runs[i];
    SweepRow row;
    row.point = int64_t(i);
    row.text = {d.name, d.worst_term};
    row.ints = {d.peak_replicas, d.windows_met, d.windows_judged};
    row.reals = {d.replica_hours,
                 d.gpu_hours,
                 d.usd,
                 d.request_attainment,
                 d.summary.ttft_ms.p99,
                 d.summary.itl_ms.p99,
                 double(d.summary.completed),
                 double(d.summary.rejected)};
    t.rows.push_back(std::move(row));
  }
  return t;
}

SweepTable day_fleet_size_table(const DayPlan& p) {
  SweepTable t;
  t.text_columns = {"fleet"};
  t.int_columns = {"ready", "starting", "draining", "desired"};
  t.real_columns = {"time_s"};
  for (const DayRun& d : p.runs) {
    for (const ScaleEvent& e : d.scale.timeline) {
      SweepRow row;
      row.point = int64_t(t.rows.size());
      row.text = {d.name};
      row.ints = {e.ready, e.starting, e.draining, e.desired};
      row.reals = {e.time_s};
      t.rows.push_back(std::move(row));
    }
  }
  t.points_total = t.rows.size();
  return t;
}

}  // namespace servesim
