// The SLO, prices and a probe judged against the SLO (capacity.hpp), and the rate search; sizing
// a fleet at --target-rate is capacity_fleet.cpp's, a result's notes, costs and table
// capacity_table.cpp's, a command's configurations and a result's bytes capacity_configs.cpp's.
#include "analysis/capacity.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "analysis/capacity_internal.hpp"
#include "analysis/intervals.hpp"
#include "analysis/report.hpp"
#include "models/gpu.hpp"
#include "util/error.hpp"
#include "util/field_path.hpp"
#include "util/format.hpp"
#include "util/lookup.hpp"
#include "util/text_input.hpp"

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
  if (op == std::string::npos) throw Error(field::kSlo, "'" + term + "' must be METRIC=VALUE");
  b.metric = metric_column(term.substr(0, op));
  if (!known.count(b.metric)) {
    throw Error(field::kSlo, "'" + term.substr(0, op) +
                                 "' is not a summary metric (e.g. ttft_p50_ms, itl_p99_ms, "
                                 "e2e_p95_ms, queue_p50_ms, otps_p50, output_tokens_per_s)");
  }
  const std::string value = term.substr(op + len);
  try {
    size_t used = 0;
    b.limit = std::stod(value, &used);
    if (used != value.size() || !std::isfinite(b.limit)) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw Error(field::kSlo, "'" + term + "': '" + value + "' is not a number");
  }
  const bool higher_is_better = b.metric.rfind("otps", 0) == 0 ||
                                b.metric.find("_per_s") != std::string::npos ||
                                b.metric == "goodput_req_s" || b.metric == "completed";
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
  if (out.empty()) throw Error(field::kSlo, "no bound given");
  return out;
}

double GpuHourCost::of(const std::string& gpu, double file_cost) const {
  const auto it = by_gpu.find(lowercase(gpu));
  if (it != by_gpu.end()) return it->second;
  return std::isnan(all) ? file_cost : all;
}

namespace {

// One price of --gpu-hour-cost: a number in (0, 1e7].
double parse_price(const std::string& item, const std::string& value) {
  double v = 0;
  if (!parse_double(value, v) || !(v > 0 && v <= 1e7)) {
    throw Error(field::kGpuHourCost,
                "'" + item + "': dollars per GPU-hour must be a number in (0, 1e7]");
  }
  return v;
}

}  // namespace

GpuHourCost parse_gpu_hour_cost(const std::string& text) {
  GpuHourCost c;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      if (!std::isnan(c.all)) throw Error(field::kGpuHourCost, "two prices for every GPU");
      c.all = parse_price(item, item);
      continue;
    }
    std::string gpu = lowercase(trim(std::string_view(item).substr(0, eq)));
    if (gpu.empty()) throw Error(field::kGpuHourCost, "'" + item + "' must be NAME=DOLLARS");
    // The aliases --gpu accepts ("H100", "A100 80GB") price their catalogue GPU; another name is
    // a GPU file's.
    try {
      gpu = lowercase(find_gpu(gpu).name);
    } catch (const Error&) {
    }
    if (!c.by_gpu.emplace(gpu, parse_price(item, item.substr(eq + 1))).second) {
      throw Error(field::kGpuHourCost, "two prices for " + gpu);
    }
  }
  if (std::isnan(c.all) && c.by_gpu.empty()) throw Error(field::kGpuHourCost, "no price given");
  return c;
}

FleetPrice price_pools(const std::vector<GpuPool>& pools, const GpuHourCost& cost) {
  FleetPrice f;
  f.usd_per_h = 0;
  for (const GpuPool& p : pools) {
    f.gpus += p.gpus();
    f.usd_per_h += double(p.gpus()) * cost.of(p.gpu, p.file_cost);  // NaN stays NaN
  }
  if (pools.empty()) f.usd_per_h = NAN;
  return f;
}

std::string describe_pools(const std::vector<GpuPool>& pools) {
  if (pools.size() == 1 && pools[0].replicas == 1) {
    return pools[0].gpu + (pools[0].pp > 1 ? " pp" + std::to_string(pools[0].pp) : "");
  }
  bool tps_differ = false;
  for (const GpuPool& p : pools)
    tps_differ = tps_differ || p.tp != pools.front().tp;
  std::string s;
  for (const GpuPool& p : pools) {
    s += (s.empty() ? "" : " + ") + std::to_string(p.replicas) + "x " + p.gpu;
    if (tps_differ) s += " tp" + std::to_string(p.tp);
    if (p.pp > 1) s += " pp" + std::to_string(p.pp);
    if (p.role != "colocated") s += " " + p.role;
  }
  return s;
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

double rejected_share(const RunSummary& s) {
  return s.total > 0 ? double(s.rejected) / double(s.total) : 0.0;
}

// How far V is past bound B, relative to its limit: > 0 when it fails, +inf when V is NaN.
double excess(const Bound& b, double v) {
  if (std::isnan(v)) return INFINITY;
  const double scale = b.limit != 0 ? std::abs(b.limit) : 1.0;
  return (b.upper ? v - b.limit : b.limit - v) / scale;
}

// The term of SPEC that S (and ATTAINED, the goodput share) fails by the widest margin; "" when
// it meets every term. Each bound reads its metric at the pessimistic end of INTERVALS (none: the
// point).
std::string worst_term(const CapacitySpec& spec, const RunSummary& s, double attained,
                       const IntervalSet& intervals = {}) {
  std::string worst;
  double most = 0;
  auto consider = [&](const std::string& term, double e) {
    if (e > most) {
      most = e;
      worst = term;
    }
  };
  if (rejected_share(s) > spec.max_rejected_share) consider("rejected_share", INFINITY);
  // A queue that grew for as long as requests arrived: its latencies measure the run's length,
  // not the configuration, so the probe fails whatever they read (issue 25: a 500-request probe
  // met the SLO while its own row said overloaded). A run stopped at its last arrival is such a
  // run; its latencies, of the requests done by then, name the bound it fails when one does.
  // It binds only when no bound failed: a failed bound says more.
  if (s.overload.overloaded) consider("overloaded", 1e-12);
  const auto metrics = summary_metrics(s);
  for (const Bound& b : spec.bounds) {
    for (const auto& [name, v] : metrics) {
      if (name == b.metric) consider(b.metric, excess(b, pessimistic_value(name, v, intervals)));
    }
  }
  if (spec.attainment > 0 && !(attained >= spec.attainment)) {
    consider("attainment",
             std::isnan(attained) ? INFINITY : (spec.attainment - attained) / spec.attainment);
  }
  return worst;
}

}  // namespace

std::string slo_failure(const CapacitySpec& spec, const RunSummary& s, double attained) {
  return worst_term(spec, s, attained);
}

Probe judge_run(const RunSpec& s, const CapacitySpec& spec, Inputs& inputs,
                bool stop_when_overloaded) {
  SimulateOptions options;
  options.stop_when_overloaded = stop_when_overloaded;
  const PointRun p = run_point(s, inputs, options);
  const SimConfig& c = p.run.config;
  Probe pr;
  pr.rate = s.request_rate;
  pr.summary = p.run.summary;
  pr.label = run_label(p.run);
  pr.policy = policy_name(c.scheduler.policy);
  pr.budget = c.scheduler.max_num_batched_tokens;
  pr.gpu = c.gpu.name;
  pr.model = c.model.name;
  pr.cost_source = cost_source(c);
  pr.tp = c.tp;
  pr.gpu_file_cost = c.gpu.cost_per_hour;
  pr.pools = p.pools;
  pr.router_warnings = p.run.fleet.router_warnings;
  IntervalSet intervals;
  if (spec.confidence > 0) {
    intervals = prediction_intervals(regime_of(p.run), spec.confidence);
    pr.extrapolated = intervals.extrapolated;
  }
  if (spec.attainment > 0) {
    // Confident: a request meets its bounds with room for the run's TTFT p90 and TPOT being
    // that much slower than predicted.
    const double ttft_f =
        intervals.level > 0 ? intervals.factor[size_t(IntervalMetric::kTtftP90)] : 1;
    const double tpot_f =
        intervals.level > 0 ? intervals.factor[size_t(IntervalMetric::kTpotMean)] : 1;
    pr.attained = attainment(p.run, spec.ttft_ms / ttft_f, spec.tpot_ms / tpot_f);
  }
  pr.failed = worst_term(spec, pr.summary, pr.attained, intervals);
  pr.ok = pr.failed.empty();
  pr.stopped = pr.summary.overload.stopped_at_last_arrival;
  pr.requests = pr.summary.total;
  return pr;
}

namespace {

// S with twice the requests of its workload: a generator's --num-requests (or --num-prompts),
// a ServeGen window's duration, a trace's --max-requests (the trace's rows bound it). False when
// there is nothing to double: a whole trace.
bool lengthen(RunSpec& s) {
  if (!s.trace.empty()) {
    if (s.what_if.max_requests <= 0) return false;
    s.what_if.max_requests *= 2;
    return true;
  }
  if (s.dataset_name == "servegen") {
    s.servegen_duration_s = 2 * *s.servegen_duration_s;
  } else if (s.num_prompts.given()) {
    s.num_prompts = 2 * *s.num_prompts;
  } else {
    s.num_requests = 2 * *s.num_requests;
  }
  return true;
}

}  // namespace

// The fewest replicas that meet the SLO by MEETS, walking from START: down while one fewer still
// meets it, else up to LIMIT; -1 when none up to LIMIT does.
int64_t fewest_meeting(int64_t start, int64_t limit, const std::function<bool(int64_t)>& meets) {
  int64_t k = start;
  if (meets(k)) {
    while (k > 1 && meets(k - 1))
      --k;
    return k;
  }
  do {
    ++k;
  } while (k <= limit && !meets(k));
  return k > limit ? -1 : k;
}

// BASE at RATE, simulated and judged against SPEC; an overloaded probe stops at its last arrival
// unless FULL (a first probe, whose rejections identify the configuration, runs to its end). A
// probe that meets the SLO but is too short to judge overload is lengthened (kMaxLengthenings)
// or fails `too_short`.
Probe probe_at(const RunSpec& base, const CapacitySpec& spec, double rate, Inputs& inputs,
               bool full) {
  RunSpec s = base;
  s.request_rate = rate;
  Probe p = judge_run(s, spec, inputs, !full);
  int lengthened = 0;
  while ((p.ok || p.failed == "overloaded" || p.summary.overload.overloaded) &&
         !p.summary.overload.judgeable) {
    const uint64_t before = p.summary.total;
    if (lengthened == kMaxLengthenings || !lengthen(s)) {
      p.ok = false;
      p.failed = "too_short";
      break;
    }
    Probe longer = judge_run(s, spec, inputs, !full);
    ++lengthened;
    if (longer.summary.total <= before) {  // the trace has no more rows
      p.ok = false;
      p.failed = "too_short";
      break;
    }
    p = std::move(longer);
  }
  p.lengthened = lengthened;
  return p;
}

// Counts P in C's probes stopped at their last arrival and lengthened to be judged.
void count_stop(const Probe& p, CapacityResult& c) {
  c.probes_stopped += p.stopped;
  c.requests_unfinished += p.summary.overload.unfinished;
  c.probes_lengthened += p.lengthened > 0;
  c.probes_too_short += p.failed == "too_short";
  c.most_probe_requests = std::max<uint64_t>(c.most_probe_requests, p.requests);
}

namespace {

// One search: the highest rate known to meet the SLO (LO, 0 = none) and the lowest known to fail
// it (HI, 0 = none), with their probes.
class Searcher {
 public:
  Searcher(const RunSpec& base, const CapacitySpec& spec, Inputs& inputs, const ProbeHook& hook)
      : base_(base), spec_(spec), inputs_(inputs), hook_(hook) {}

  CapacityResult run() {
    if (spec_.rate_start < spec_.rate_max) {
      top_down();
    } else {
      const Probe first = probe(spec_.rate_start);
      identify(first);
      c_.above_max = first.ok && !c_.refused;  // --rate-max itself met it
    }
    if (c_.refused) return c_;
    if (lo_ == 0 && !c_.above_max) down();
    // Bisection between a rate that meets the SLO and one that does not.
    while (!c_.above_max && !c_.below_min && (hi_ - lo_) > spec_.rel_tol * hi_ &&
           c_.iterations < 60) {
      probe((lo_ + hi_) / 2);
    }
    c_.capacity = lo_;
    c_.at = lo_probe_;
    c_.binding = hi_ > 0 ? hi_probe_.failed : "";
    return c_;
  }

 private:
  // A probe at RATE, counted and reported; FULL: run to its end.
  Probe simulate(double rate, bool full) {
    Probe p = probe_at(base_, spec_, rate, inputs_, full);
    ++c_.iterations;
    count_stop(p, c_);
    if (hook_) hook_(p);
    return p;
  }

  // A probe of the bracket: RATE meets the SLO (the new LO) or fails it (the new HI).
  Probe probe(double rate) {
    Probe p = simulate(rate, c_.iterations == 0);
    (p.ok ? lo_ : hi_) = rate;
    (p.ok ? lo_probe_ : hi_probe_) = p;
    return p;
  }

  // The configuration, its price and its rejections, from the first probe. Rejections
  // (requests too long for the context, the token budget or the KV cache) do not depend on the
  // rate: beyond --max-rejected-share, the configuration does not serve the workload.
  void identify(const Probe& p) {
    c_.label = p.label;
    c_.policy = p.policy;
    c_.gpu = p.gpu;
    c_.model = p.model;
    c_.cost_source = p.cost_source;
    c_.tp = p.tp;
    c_.budget = p.budget;
    c_.gpu_hour_cost = spec_.cost.of(p.gpu, p.gpu_file_cost);
    c_.pools = p.pools;
    c_.fleet = describe_pools(p.pools);
    if (base_.enable_expert_parallel) {
      // The ranks share their experts: one expert-parallel group of every GPU simulated.
      c_.fleet += " (EP" + std::to_string(price_pools(p.pools, spec_.cost).gpus) + ")";
    }
    for (const GpuPool& pool : p.pools) {
      if (c_.quantization.find(pool.quantization) == std::string::npos) {
        c_.quantization += (c_.quantization.empty() ? "" : "+") + pool.quantization;
      }
    }
    const FleetPrice price = price_pools(p.pools, spec_.cost);
    c_.gpus = price.gpus;
    c_.usd_per_h = price.usd_per_h;
    c_.energy_usd_per_kwh = spec_.energy_usd_per_kwh;
    c_.pue = spec_.pue;
    c_.rejected = p.summary.rejected;
    c_.requests = p.summary.total;
    c_.refused = rejected_share(p.summary) > spec_.max_rejected_share;
    if (c_.refused) c_.binding = "rejected_share";
  }

  // The bracket of doubling from --rate-start up to a rate that fails (--rate-max itself the
  // last rate tried), found from the top down. A low rate is the costly probe (many small steps)
  // and an overloaded one the cheap one (it stops at its last arrival), so instead of every
  // doubling from the bottom: the workload all at once at --rate-max, run to its end, identifies
  // the configuration (its rejections) and says how fast it completes requests (no sustained
  // rate above that keeps up); the search probes the first doubling at or above that throughput
  // and halves down to a rate that meets the SLO, or doubles on up from there while it meets it.
  // Under the search's own premise (a rate fails when a lower one does) the bracket, and so the
  // capacity, is that of doubling from the bottom; when --rate-start itself fails, down() halves
  // from there as before.
  void top_down() {
    const Probe all_at_once = simulate(spec_.rate_max, /*full=*/true);
    identify(all_at_once);
    if (c_.refused) return;
    std::vector<double> ladder{spec_.rate_start};  // the doubling sequence, --rate-max last
    while (ladder.back() < spec_.rate_max && ladder.size() < 64)
      ladder.push_back(std::min(ladder.back() * 2, spec_.rate_max));
    const double throughput = all_at_once.summary.requests_per_s;
    size_t k = 0;  // the first doubling at or above the throughput
    while (k + 1 < ladder.size() && ladder[k] < throughput)
      ++k;
    probe(ladder[k]);
    // Down while the rung fails.
    while (lo_ == 0 && k > 0)
      probe(ladder[--k]);
    // Up while the rung met the SLO.
    while (lo_ > 0 && hi_ == 0 && k + 1 < ladder.size())
      probe(ladder[++k]);
    c_.above_max = lo_ > 0 && hi_ == 0;
  }

  // From --rate-start, which failed: halve down to a rate that meets the SLO, at most 10 times.
  void down() {
    const double floor_rate = spec_.rate_start / 1024;
    for (double r = hi_ / 2; r >= floor_rate && lo_ == 0; r /= 2)
      probe(r);
    c_.below_min = lo_ == 0;
  }

  const RunSpec& base_;
  const CapacitySpec& spec_;
  Inputs& inputs_;
  const ProbeHook& hook_;
  CapacityResult c_;
  double lo_ = 0, hi_ = 0;
  Probe lo_probe_, hi_probe_;
};

}  // namespace

RunSpec one_replica(const RunSpec& base) {
  RunSpec s = base;
  const bool fleet = s.num_replicas.given() || s.data_parallel_size.given() ||
                     s.prefill_replicas > 0 || s.decode_replicas > 0 || !s.replica_gpus.empty();
  if (!fleet) {
    s.router.forget();
    s.router_signal_delay_s.forget();
    s.prefix_index.forget();
  }
  return s;
}

CapacityResult search(const RunSpec& base, const CapacitySpec& spec, Inputs& inputs,
                      const ProbeHook& on_probe) {
  if (spec.confidence == 0) return Searcher(one_replica(base), spec, inputs, on_probe).run();
  CapacitySpec point_spec = spec;
  point_spec.confidence = 0;
  const CapacityResult point = Searcher(one_replica(base), point_spec, inputs, on_probe).run();
  CapacityResult c = Searcher(one_replica(base), spec, inputs, on_probe).run();
  c.confidence = spec.confidence;
  c.point_capacity = point.capacity;
  c.point_binding = point.binding;
  c.iterations += point.iterations;
  c.probes_stopped += point.probes_stopped;
  c.requests_unfinished += point.requests_unfinished;
  c.probes_lengthened += point.probes_lengthened;
  c.probes_too_short += point.probes_too_short;
  return c;
}

}  // namespace servesim
