// `servesim capacity`: the highest request rate each configuration (every combination of the
// listed schedulers, token budgets, GPUs, models and TP degrees) sustains under an SLO
// (analysis/capacity.hpp), searched in parallel, with the value of each SLO term at capacity,
// the binding term and the cost per million output tokens.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/capacity.hpp"
#include "analysis/capacity_plan.hpp"
#include "analysis/intervals.hpp"
#include "analysis/report.hpp"
#include "cli/commands.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "util/distributed.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/parallel.hpp"

namespace servesim::cli {

namespace {

const char* kCapacityHelp =
    "usage: servesim capacity [run flags] (--slo LIST | --attainment F --slo-ttft-ms X "
    "[--slo-tpot-ms Y]) [options]\n"
    "\n"
    "The highest request rate (req/s) each configuration sustains under the SLO, by bisection on\n"
    "--request-rate over the same trace or generator (same seed: the same requests, arriving\n"
    "faster). --scheduler, --max-num-batched-tokens, --gpu, --gpu-file, --model, --model-file,\n"
    "--tp and --tensor-parallel-size may be lists (a,b,c; numbers also LO:HI:STEP): one capacity\n"
    "per combination, the first listed flag varying slowest. Every configuration is checked\n"
    "before any search starts.\n"
    "\n"
    "  --slo LIST           bounds on summary metrics, e.g. ttft_p99_ms=2000,itl_p99_ms=100;\n"
    "                       latencies are upper bounds, otps_*/throughput lower bounds (or\n"
    "                       write <= / >=). Sarathi-Serve's capacity: queue_p50_ms=2000 plus a\n"
    "                       P99 TBT bound itl_p99_ms=...\n"
    "  --attainment F       goodput (DistServe, vLLM benchmark_serving --goodput): at least this\n"
    "                       share (0 < F <= 1) of all requests meets every per-request SLO below\n"
    "                       (rejected requests miss); the term `attainment`\n"
    "  --slo-ttft-ms X      per-request TTFT bound\n"
    "  --slo-tpot-ms Y      per-request TPOT bound (one-token answers meet it)\n"
    "  --confidence LEVEL   also size so that every bound holds at the pessimistic end of its\n"
    "                       LEVEL prediction interval (run --interval; e.g. 0.9, at most 0.967;\n"
    "                       none: off): percentiles and throughputs borrow the nearest figure\n"
    "                       the held-out runs measured (docs/validation.md), a probe past the\n"
    "                       fitted range gets the widest interval, and --attainment's\n"
    "                       per-request bounds shrink by TTFT p90's and TPOT's factors. The\n"
    "                       table shows the point answer (point_rps) and the confident one\n"
    "                       (confident_rps), which the replicas, fleet and costs are sized by\n"
    "  --max-rejected-share F  a configuration may reject (too long for its context, budget or\n"
    "                       KV) at most this share of the requests, 0 <= F < 1 (default 0); above\n"
    "                       it, it has no capacity. The note counts the rejected requests.\n"
    "  --gpu-hour-cost X    dollars per GPU-hour: one number, or NAME=X per GPU (a100-80g=1.8,\n"
    "                       h100-sxm=3.2; a number too applies to the GPUs not named). Without\n"
    "                       it, a --gpu-file's cost_per_hour. Gives "
    "cost_per_million_output_tokens\n"
    "                       = X * tp / (output_tokens_per_s at capacity * 3600) * 1e6\n"
    "  --target-rate R      also print the replicas of each configuration that serve R req/s,\n"
    "                       assuming ideal spreading (each replica sees R/replicas), and their\n"
    "                       cost per hour when the GPU's price is known\n"
    "  --over-time S        a day, not a rate: on a timed workload (a trace, or a generator with\n"
    "                       --rate-pattern diurnal and --request-rate as its mean), the fewest\n"
    "                       replicas meeting the SLO in each window of S seconds, then the day\n"
    "                       simulated under a fixed fleet (the most any window needs), the plan\n"
    "                       (those counts as a schedule) and, with --autoscale, the autoscaler:\n"
    "                       peak, replica- and GPU-hours, cost, windows and requests meeting\n"
    "                       the SLO. --max-replicas bounds a window (default 64); --router and\n"
    "                       the autoscaler's flags apply; one configuration\n"
    "  --target-scale X     --over-time: the workload at X times its rate, its shape over the\n"
    "                       day kept (a trace's rows superposed or thinned; a generator's\n"
    "                       requests and rate times X)\n"
    "  --size-group GPU     with --replica-gpus and --target-rate: size that group's count only,\n"
    "                       the other groups as given (fleet_replicas is its count)\n"
    "  --rate-start R       the bracket is between doublings of R (default 1), found from the\n"
    "                       top down after a run of every request at once at --rate-max;\n"
    "                       below R, it halves\n"
    "  --rate-max R         the highest rate tried (default 100000)\n"
    "  --rel-tol F          stop when the bracket is within F of its top (default 0.02)\n"
    "  --jobs N             configurations searched in parallel (default: all cores)\n"
    "  --out FILE.h5, --csv FILE.csv   the capacity table: gpu, model, tp, the capacity, the\n"
    "                       summary metrics at capacity (each SLO term's value among them),\n"
    "                       `binding` and the costs\n"
    "  --config FILE        read flags from an INI file; the command line wins\n"
    "\n"
    "The table shows each SLO term's value at capacity; `*` marks the binding term: the one that\n"
    "failed at the lowest failing rate tried (by the widest relative margin if several did).\n"
    "A probe whose requests in the system grew over the later half of its arrivals (completions\n"
    "under 95% of arrivals: docs/manual/run-and-compare.md, Overload) fails as `overloaded`;\n"
    "one too short to tell a 5% shortfall from noise is run again with twice the requests, up\n"
    "to 16 times, or fails as `too_short` (a whole trace cannot be lengthened).\n"
    "When stderr is a terminal, a progress line counts the probes and configurations done.\n";

const std::set<std::string> kCapacityOwn = {
    "slo",           "attainment",  "slo-ttft-ms", "slo-tpot-ms", "max-rejected-share",
    "gpu-hour-cost", "target-rate", "rate-start",  "rate-max",    "rel-tol",
    "jobs",          "out",         "csv",         "config",      "over-time",
    "target-scale",  "size-group",  "confidence"};

// The run flags that may be lists: one configuration per combination.
const std::set<std::string> kListFlags = {
    "scheduler", "max-num-batched-tokens", "gpu", "gpu-file", "model", "model-file",
    "tp",        "tensor-parallel-size"};
constexpr size_t kMaxConfigurations = 10000;

// The goodput form's options into SPEC; Error naming the option on a bad one.
void goodput_spec(std::map<std::string, std::string>& own, CapacitySpec& spec) {
  spec.attainment = get_number(own, "attainment", 0);
  spec.ttft_ms = get_number(own, "slo-ttft-ms", INFINITY);
  spec.tpot_ms = get_number(own, "slo-tpot-ms", INFINITY);
  if (own.count("attainment") && !(spec.attainment > 0 && spec.attainment <= 1)) {
    throw Error("attainment", "must be in (0, 1]");
  }
  if (own.count("attainment") && !own.count("slo-ttft-ms") && !own.count("slo-tpot-ms")) {
    throw Error("attainment", "needs --slo-ttft-ms and/or --slo-tpot-ms");
  }
  if ((own.count("slo-ttft-ms") || own.count("slo-tpot-ms")) && !own.count("attainment")) {
    throw Error("slo-ttft-ms", "per-request SLOs need --attainment (e.g. 0.9)");
  }
}

// The SLO, search bounds, rejection share and prices of the command line, and --target-rate
// into TARGET; Error naming the option on a bad one.
CapacitySpec capacity_spec(std::map<std::string, std::string>& own, double& target) {
  CapacitySpec spec;
  if (own.count("slo")) spec.bounds = parse_slo(own["slo"]);
  goodput_spec(own, spec);
  if (spec.bounds.empty() && spec.attainment == 0) {
    throw Error("slo", "capacity needs --slo or --attainment (see servesim capacity --help)");
  }
  spec.max_rejected_share = get_number(own, "max-rejected-share", 0);
  if (!(spec.max_rejected_share >= 0 && spec.max_rejected_share < 1)) {
    throw Error("max-rejected-share", "must be in [0, 1)");
  }
  if (own.count("gpu-hour-cost")) spec.cost = parse_gpu_hour_cost(own["gpu-hour-cost"]);
  spec.rate_start = get_number(own, "rate-start", 1);
  spec.rate_max = get_number(own, "rate-max", 100000);
  spec.rel_tol = get_number(own, "rel-tol", 0.02);
  target = get_number(own, "target-rate", 0);
  if (!(spec.rate_start > 0) || !(spec.rate_max >= spec.rate_start)) {
    throw Error("rate-start", "need 0 < --rate-start <= --rate-max");
  }
  if (!(spec.rel_tol > 0 && spec.rel_tol < 1)) throw Error("rel-tol", "must be in (0, 1)");
  if (!(target >= 0 && target <= 1e9)) {
    throw Error("target-rate", "must be a rate in [0, 1e9] requests per second");
  }
  if (own.count("confidence")) {
    spec.confidence = parse_interval_level(own["confidence"], "confidence");
    if (own.count("over-time") && spec.confidence > 0) {
      throw Error("confidence", "does not plan --over-time yet: give one or the other");
    }
  }
  spec.size_group = get(own, "size-group");
  if (own.count("size-group") && target == 0) {
    throw Error("size-group", "sizes a group for --target-rate R: give it");
  }
  return spec;
}

// One configuration to search: its flags (for messages) and its RunSpec.
struct Configuration {
  std::vector<std::pair<std::string, std::string>> flags;
  RunSpec spec;
};

// The flags of RUN: shared ones in the first configuration, and each list flag's values (in
// command-line order) in AXES.
std::vector<Configuration> expand(
    const std::vector<std::pair<std::string, std::string>>& run,
    std::vector<std::pair<std::string, std::vector<std::string>>>& axes) {
  Configuration shared;
  size_t count = 1;
  for (const auto& [flag, value] : run) {
    if (flag == "request-rate") {
      throw Error("request-rate", "is what capacity searches; see --rate-start and --rate-max");
    }
    if (flag == "time-scale") {  // the search's rate rescales the arrivals after it (issue 25)
      throw Error("time-scale",
                  "has no effect on capacity: each probe rescales the arrivals to its own rate "
                  "(the trace's shape is kept)");
    }
    if (!kListFlags.count(flag) || value.empty()) {
      shared.flags.emplace_back(flag, value);
      continue;
    }
    axes.emplace_back(
        flag, expand_values(flag, value, run_flag_is_numeric(flag), run_flag_separator(flag)));
    count *= std::min(axes.back().second.size(), kMaxConfigurations + 1);
    if (count > kMaxConfigurations) {
      throw Error(flag, "the lists make more than " + std::to_string(kMaxConfigurations) +
                            " configurations: split the search");
    }
  }
  return {shared};
}

// One configuration per combination of the list flags, the first listed varying slowest; every
// other flag is shared. Each is checked before any search starts.
std::vector<Configuration> configurations(const SplitArgs& s, Inputs& inputs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  std::vector<Configuration> out = expand(s.run, axes);
  for (const auto& [flag, values] : axes) {
    std::vector<Configuration> next;
    for (const Configuration& c : out) {
      for (const std::string& v : values) {
        next.push_back(c);
        next.back().flags.emplace_back(flag, v);
      }
    }
    out = std::move(next);
  }
  for (Configuration& c : out) {
    c.spec = spec_from_flags(c.flags);
    // Checked as a probe runs it, at a rate: a length-only trace (ShareGPT, Vidur's arXiv CSV)
    // has no arrivals of its own, and each probe gives it Gamma arrivals at the probe's rate
    // (issue 25: it was refused for lacking the --request-rate that capacity itself refuses).
    RunSpec probe = one_replica(c.spec);
    probe.request_rate = 1;
    check_point(probe, inputs);
  }
  return out;
}

// Every GPU that --gpu-hour-cost prices by name is a GPU of CONFIGS (Error naming the flag).
void check_prices(const GpuHourCost& cost, const std::vector<Configuration>& configs,
                  Inputs& inputs) {
  std::set<std::string> gpus;
  for (const Configuration& c : configs) {
    gpus.insert(inputs.gpu(c.spec.gpu, c.spec.gpu_file).name);
    // The pools' GPUs: a mixed fleet's groups, the prefill and decode pools (issue 25).
    for (const GpuCount& g : c.spec.replica_gpus)
      gpus.insert(inputs.gpu(g.gpu, "").name);
    for (const std::string& pool : {c.spec.prefill_gpu, c.spec.decode_gpu}) {
      if (!pool.empty()) gpus.insert(inputs.gpu(pool, "").name);
    }
  }
  std::string known;
  for (const std::string& g : gpus)
    known.append(known.empty() ? "" : ", ").append(g);
  for (const auto& [gpu, price] : cost.by_gpu) {
    if (!gpus.count(gpu)) {
      throw Error("gpu-hour-cost",
                  "'" + gpu + "' is not a GPU of the configurations (" + known + ")");
    }
  }
}

// The SLO as the header line says it.
std::string slo_text(const std::map<std::string, std::string>& own, const CapacitySpec& spec) {
  std::string text = get(own, "slo");
  if (spec.attainment > 0) {
    // Only the bounds given: an absent one is infinite, and "TPOT <= inf ms" says nothing.
    std::string bounds;
    if (std::isfinite(spec.ttft_ms)) bounds += format("TTFT <= %g ms", spec.ttft_ms);
    if (std::isfinite(spec.tpot_ms)) {
      bounds += format("%sTPOT <= %g ms", bounds.empty() ? "" : " and ", spec.tpot_ms);
    }
    text += format("%s%.0f%% of requests with %s", text.empty() ? "" : " and ",
                   spec.attainment * 100, bounds.c_str());
  }
  return text;
}

// The progress line of the searches: probes simulated, configurations done, time spent.
struct SearchProgress {
  std::atomic<size_t> probes{0}, done{0};
  size_t total = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  std::string text() const {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char buf[128];
    std::snprintf(buf, sizeof buf, "capacity: %zu/%zu configurations, %zu probes, %.0f s",
                  done.load(), total, probes.load(), s);
    return buf;
  }
};

// The capacity of CONFIG; an Error names the configuration.
CapacityResult search_one(const Configuration& config, const CapacitySpec& spec, Inputs& inputs,
                          const ProbeHook& on_probe = {}) {
  try {
    return search(config.spec, spec, inputs, on_probe);
  } catch (const Error& e) {
    throw Error("capacity", "configuration '" + flags_text(config.flags) + "': " + e.what());
  }
}

// Searches every configuration on JOBS threads, in configuration order.
std::vector<CapacityResult> search_all(const std::vector<Configuration>& configs,
                                       const CapacitySpec& spec, int jobs, Inputs& inputs) {
  std::vector<CapacityResult> results(configs.size());
  SearchProgress progress;
  progress.total = configs.size();
  const ProbeHook count = [&](const Probe&) { ++progress.probes; };
  parallel_for(
      configs.size(), jobs, "capacity",
      [&](size_t i) {
        results[i] = search_one(configs[i], spec, inputs, count);
        ++progress.done;
      },
      [](size_t) {}, [&] { return progress.text(); });
  return results;
}

// A number for the table: "-" for NaN, fewer decimals for larger values.
std::string cell(double v) {
  if (std::isnan(v)) return "-";
  char buf[48];
  const double a = std::abs(v);
  std::snprintf(buf, sizeof buf, a >= 1000 ? "%.0f" : a >= 10 ? "%.1f" : "%.3g", v);
  return buf;
}

// The SLO's terms as table columns: summary-metric columns, then `attainment`.
std::vector<std::string> term_names(const CapacitySpec& spec) {
  std::vector<std::string> names;
  for (const Bound& b : spec.bounds) {
    if (std::find(names.begin(), names.end(), b.metric) == names.end()) names.push_back(b.metric);
  }
  if (spec.attainment > 0) names.push_back("attainment");
  return names;
}

// TERM's value at C's capacity ("-" without one), starred when it binds.
std::string term_cell(const CapacityResult& c, const std::string& term) {
  double v = NAN;
  if (c.capacity > 0 && term == "attainment") v = c.at.attained;
  for (const auto& [name, value] : summary_metrics(c.at.summary)) {
    if (c.capacity > 0 && name == term) v = value;
  }
  return cell(v) + (c.binding == term ? "*" : " ");
}

// A text table: left-aligned text columns first (LEFT of them), right-aligned numbers after.
struct TextTable {
  std::vector<std::string> header;
  size_t left = 0;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> tails;  // after each row

  void print(std::ostream& out) const {
    std::vector<size_t> width(header.size());
    for (size_t k = 0; k < header.size(); ++k) {
      width[k] = header[k].size();
      for (const auto& r : rows)
        width[k] = std::max(width[k], r[k].size());
    }
    auto line = [&](const std::vector<std::string>& r, const std::string& tail) {
      std::string s;
      for (size_t k = 0; k < r.size(); ++k) {
        const std::string pad(width[k] - r[k].size(), ' ');
        s += (k ? "  " : "") + (k < left ? r[k] + pad : pad + r[k]);
      }
      if (!tail.empty()) s += "  " + tail;
      while (!s.empty() && s.back() == ' ')
        s.pop_back();
      out << s << "\n";
    };
    line(header, "");
    for (size_t i = 0; i < rows.size(); ++i)
      line(rows[i], tails[i]);
  }
};

// What the table shows beyond the capacity: the cost columns when a price is known, the
// replicas with --target-rate.
struct Shown {
  std::vector<std::string> terms;
  bool cost = false;
  double target = 0;
  bool quantization = false;  // a row is quantized
  double confidence = 0;      // --confidence: point and confident capacities
};

std::vector<std::string> table_row(const CapacityResult& c, const Shown& shown) {
  std::vector<std::string> r = {c.label, c.fleet.empty() ? c.gpu : c.fleet, c.model,
                                std::to_string(c.tp), std::to_string(c.gpus)};
  if (shown.quantization) r.push_back(c.quantization);
  if (shown.confidence > 0) {
    r.push_back(cell(c.point_capacity) +
                (c.point_binding.empty() ? "" : " (" + c.point_binding + ")"));
  }
  r.push_back(cell(c.capacity));
  for (const std::string& t : shown.terms)
    r.push_back(term_cell(c, t));
  r.push_back(std::to_string(c.iterations));
  if (shown.cost) r.push_back(cell(cost_per_million_output_tokens(c)));
  if (shown.target > 0) {
    r.push_back(c.capacity > 0 ? std::to_string(replicas_for(shown.target, c)) : "n/a");
    std::string fleet = c.fleet_replicas > 0   ? std::to_string(c.fleet_replicas)
                        : c.fleet_replicas < 0 ? "none"
                                               : "n/a";
    if (!c.fleet_split.empty()) fleet += " (" + c.fleet_split + ")";
    r.push_back(fleet);
    r.push_back(c.capacity > 0 ? std::to_string(fleet_gpu_count(shown.target, c)) : "n/a");
    if (shown.cost) r.push_back(cell(fleet_cost_per_hour(shown.target, c)));
  }
  return r;
}

TextTable capacity_text_table(const std::vector<CapacityResult>& results, const Shown& shown) {
  TextTable t;
  t.header = {"scheduler", "fleet", "model", "tp", "gpus"};
  if (shown.quantization) t.header.push_back("quantization");
  if (shown.confidence > 0) {
    t.header.push_back("point_rps");
    t.header.push_back(format("confident_rps@%g%%", shown.confidence * 100));
  } else {
    t.header.push_back("capacity_rps");
  }
  t.left = 3;
  for (const std::string& term : shown.terms)
    t.header.push_back(term + " ");
  t.header.push_back("probes");
  if (shown.cost) t.header.push_back("usd_per_Mtok");
  if (shown.target > 0) {
    t.header.push_back("replicas");
    t.header.push_back("fleet_replicas");
    t.header.push_back("fleet_gpus");
  }
  if (shown.target > 0 && shown.cost) t.header.push_back("fleet_usd_per_h");
  for (const CapacityResult& c : results) {
    t.rows.push_back(table_row(c, shown));
    const std::string note = capacity_note(c);
    t.tails.push_back(note.empty() ? "" : "(" + note + ")");
  }
  return t;
}

void print_footer(std::ostream& out, const std::vector<CapacityResult>& results,
                  const Shown& shown) {
  const bool starred = std::any_of(results.begin(), results.end(), [&](const CapacityResult& c) {
    return std::count(shown.terms.begin(), shown.terms.end(), c.binding) > 0;
  });
  if (starred) {
    out << "* the binding term: it failed at the lowest failing rate tried (by the widest "
           "margin)\n";
  }
  int stopped = 0;
  uint64_t unfinished = 0;
  for (const CapacityResult& c : results) {
    stopped += c.probes_stopped;
    unfinished += c.requests_unfinished;
  }
  if (shown.confidence > 0) {
    out << format(
        "point_rps: the capacity at servesim's point predictions (its binding term in brackets); "
        "confident_rps@%g%%: the highest rate meeting every bound at the pessimistic end of its "
        "%g%% prediction interval (held-out error on real vLLM runs; a probe outside the fitted "
        "range at the widest). Terms, replicas, fleet and costs are at the confident rate.\n",
        shown.confidence * 100, shown.confidence * 100);
  }
  if (stopped > 0) {
    out << stopped << " probe" << (stopped == 1 ? "" : "s")
        << " stopped at the last arrival, judged overloaded (failing the SLO whatever came "
           "next), leaving "
        << unfinished << " queued requests unsimulated\n";
  }
  if (shown.cost) {
    out << "usd_per_Mtok: dollars per million output tokens at capacity = the configuration's "
           "$/h (every GPU: replicas * tp of each pool) / (output_tokens_per_s * 3600) * 1e6 "
           "(per million total tokens in --csv/--out)\n";
  }
  if (shown.target > 0) {
    out << "replicas serve --target-rate " << shown.target
        << " req/s assuming ideal spreading: each replica sees target/replicas req/s with the "
           "same arrival pattern (no router imbalance)"
        << (shown.cost ? "; fleet_usd_per_h prices the fleet_replicas fleet as simulated (its "
                         "gpus), else replicas copies"
                       : "")
        << ".\n"
        << "fleet_replicas: the fewest replicas meeting the SLO at the target when simulated as "
           "one fleet behind --router "
        << (results.empty() || results.front().router.empty() ? std::string("round-robin")
                                                              : results.front().router)
        << " (none: not within 4 x replicas + 8); disaggregated, the fewest replicas in all with "
           "the cheapest prefill+decode split that meets it"
        << (results.empty() || results.front().fleet_split.empty() ||
                    results.front().fleet_split.find(':') == std::string::npos
                ? std::string()
                : "; with --size-group, that group's count (the fleet in brackets)")
        << ".\n";
  }
}

// Whether the run flags RUN name no scheduler: every configuration is vllm-v1, the default.
bool default_scheduler_flags(const std::vector<std::pair<std::string, std::string>>& run) {
  return std::none_of(run.begin(), run.end(), [](const auto& f) {
    return f.first == "scheduler" || f.first == "enable-chunked-prefill";
  });
}

void print_capacity(std::ostream& out, const std::vector<CapacityResult>& results,
                    const CapacitySpec& spec, double target, const std::string& slo,
                    bool default_scheduler) {
  out << "servesim capacity: the highest request rate meeting " << slo;
  if (spec.max_rejected_share > 0) {
    out << ", with at most " << spec.max_rejected_share * 100 << "% of requests rejected";
  }
  out << "\n";
  if (default_scheduler) out << kDefaultSchedulerNote << "\n";
  Shown shown{term_names(spec), false, target};
  shown.confidence = spec.confidence;
  shown.quantization = std::any_of(results.begin(), results.end(), [](const CapacityResult& c) {
    return !c.quantization.empty() && c.quantization != "none";
  });
  shown.cost = std::any_of(results.begin(), results.end(),
                           [](const CapacityResult& c) { return !std::isnan(c.gpu_hour_cost); });
  capacity_text_table(results, shown).print(out);
  print_footer(out, results, shown);
}

// capacity --over-time: one configuration's day plan (analysis/capacity_plan.hpp).
int over_time(SplitArgs& s, const CapacitySpec& spec, int jobs, std::ostream& out,
              const std::string& slo) {
  for (const char* own : {"target-rate", "rate-start", "rate-max", "rel-tol"}) {
    if (s.own.count(own)) {
      throw Error(own, "searches a rate; --over-time sizes each window at the workload's rate");
    }
  }
  for (const auto& [flag, value] : s.run) {
    if (kListFlags.count(flag) && value.find(',') != std::string::npos) {
      throw Error(flag, "--over-time plans one configuration: give one value");
    }
    if (flag == "time-scale") {
      throw Error("time-scale", "changes the day's length; --target-scale scales its rate");
    }
  }
  const double window_s = get_number(s.own, "over-time", 0);
  const double scale = get_number(s.own, "target-scale", 1);
  if (!(scale > 0 && scale <= 1000)) throw Error("target-scale", "must be in (0, 1000]");
  RunSpec base = spec_from_flags(s.run);
  base.rate_scale = scale;
  if (!base.replica_gpus.empty() || base.prefill_replicas > 0 || base.decode_replicas > 0) {
    throw Error("over-time",
                "plans replicas of one configuration (not --replica-gpus or prefill/decode "
                "pools)");
  }
  // Without an autoscaler --max-replicas is the plan's limit per window only.
  int limit = 64;
  if (base.max_replicas.given()) {
    limit = base.max_replicas;
    if (!(limit >= 1 && limit <= 2048)) throw Error("max-replicas", "must be in [1, 2048]");
    if (base.autoscale.empty()) base.max_replicas.forget();
  }
  Inputs inputs;
  check_point(base, inputs);
  const DayPlan plan = plan_day(base, spec, window_s, limit, jobs, inputs);
  out << "servesim capacity --over-time: the replicas meeting " << slo << " window by window";
  if (scale != 1) out << format(", at %g x the workload's rate", scale);
  out << "\n";
  if (default_scheduler_flags(s.run)) out << kDefaultSchedulerNote << "\n";
  out << day_plan_text(plan);
  const SweepTable t = day_plan_table(plan);
  const std::string h5_out = get(s.own, "out"), csv_out = get(s.own, "csv");
  if (!h5_out.empty()) {
    write_table_h5(h5_out, t, "servesim-capacity-plan", "windows",
                   {{"slo", slo}, {"window_s", format("%g", window_s)}});
  }
  if (!csv_out.empty()) write_sweep_csv(csv_out, t);
  return 0;
}

}  // namespace

int cmd_capacity(int argc, const char* const* argv, std::ostream& out) {
  SplitArgs s = split_args(argc, argv, kCapacityOwn, {"help"});
  if (s.own.count("help")) {
    out << kCapacityHelp;
    return 0;
  }
  if (!s.positional.empty()) {
    throw Error("capacity", "unexpected argument '" + s.positional[0] + "'");
  }
  if (s.own.count("config")) {
    add_ini_run_flags(s.own["config"], "", kCapacityOwn, s.run, s.own, true);
  }
  double target = 0;
  const CapacitySpec spec = capacity_spec(s.own, target);
  const int jobs = get_jobs(s.own);
  if (s.own.count("over-time")) {
    PathPlan paths;
    add_flag_inputs(paths, s.run, s.own);
    paths.output("out", get(s.own, "out"));
    paths.output("csv", get(s.own, "csv"));
    paths.check();
    return over_time(s, spec, jobs, out, slo_text(s.own, spec));
  }
  if (s.own.count("target-scale")) throw Error("target-scale", "goes with --over-time");
  bool fleet = target > 0;
  for (const auto& [flag, value] : s.run) {
    fleet = fleet || flag == "num-replicas" || flag == "data-parallel-size" ||
            flag == "prefill-replicas" || flag == "decode-replicas" || flag == "replica-gpus";
  }
  for (const auto& [flag, value] : s.run) {
    if (!fleet && (flag == "router" || flag == "router-signal-delay-s")) {
      throw Error(flag, "routes a fleet: give --target-rate R (or --num-replicas N)");
    }
  }
  PathPlan paths;
  add_flag_inputs(paths, s.run, s.own);
  paths.output("out", get(s.own, "out"));
  paths.output("csv", get(s.own, "csv"));
  paths.check();
  Inputs inputs;
  const std::vector<Configuration> configs = configurations(s, inputs);
  check_prices(spec.cost, configs, inputs);
  for (const Configuration& c : configs) {
    if (!spec.size_group.empty() && c.spec.replica_gpus.empty()) {
      throw Error("size-group", "sizes one group of a mixed fleet: give --replica-gpus");
    }
  }
  std::vector<CapacityResult> results;
  if (mpi::world().distributed()) {
    // Under mpirun: rank 0 hands the configurations out, the other ranks search (and size) them
    // on their threads and send each result back whole; only rank 0 prints and writes.
    results.resize(configs.size());
    mpi::Batch all(configs.size());
    for (size_t i = 0; i < all.size(); ++i)
      all[i] = i;
    const auto compute = [&](uint64_t i) {
      CapacityResult r = search_one(configs[i], spec, inputs);
      if (target > 0) size_fleet(configs[i].spec, spec, target, r, inputs);
      return capacity_result_bytes(r);
    };
    mpi::work_queue(all, jobs, compute, [&](uint64_t i, const std::string& bytes) {
      results[size_t(i)] = capacity_result_from_bytes(bytes);
    });
    if (mpi::world().rank != 0) return 0;
  } else {
    results = search_all(configs, spec, jobs, inputs);
    if (target > 0) {
      parallel_for(
          configs.size(), jobs, "capacity",
          [&](size_t i) { size_fleet(configs[i].spec, spec, target, results[i], inputs); },
          [](size_t) {}, [] { return std::string("sizing the fleets"); });
    }
  }
  const std::string slo = slo_text(s.own, spec);
  print_capacity(out, results, spec, target, slo, default_scheduler_flags(s.run));
  const SweepTable t = capacity_table(results, target, slo);
  const std::string h5_out = get(s.own, "out"), csv_out = get(s.own, "csv");
  if (!h5_out.empty()) {
    char share[32];
    std::snprintf(share, sizeof share, "%g", spec.max_rejected_share);
    write_table_h5(
        h5_out, t, "servesim-capacity", "capacity",
        {{"slo", slo}, {"target_rate", std::to_string(target)}, {"max_rejected_share", share}});
  }
  if (!csv_out.empty()) write_sweep_csv(csv_out, t);
  return 0;
}

}  // namespace servesim::cli
