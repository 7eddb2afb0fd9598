// `servesim capacity`: the highest request rate each configuration (every combination of the
// listed schedulers, token budgets, GPUs, models and TP degrees) sustains under an SLO
// (analysis/capacity.hpp), searched in parallel, with the value of each SLO term at capacity,
// the binding term and the cost per million output tokens.
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/capacity.hpp"
#include "analysis/capacity_configs.hpp"
#include "analysis/capacity_plan.hpp"
#include "analysis/capacity_table.hpp"
#include "analysis/intervals.hpp"
#include "cli/commands.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim::cli {

namespace {

const char* kCapacityHelp =
    "usage: servesim capacity [run flags] (--slo LIST | --attainment F --slo-ttft-ms X "
    "[--slo-tpot-ms Y]) [options]\n"
    "\n"
    "The highest request rate (req/s) each configuration sustains under the SLO, by bisection on\n"
    "--request-rate over the same trace or generator (same seed: the same requests, arriving\n"
    "faster). --scheduler, --max-num-batched-tokens, --gpu, --gpu-file, --model, --model-file,\n"
    "--tp, --tensor-parallel-size, --pp, --pipeline-parallel-size and --data-parallel-size may be\n"
    "lists (a,b,c; numbers also LO:HI:STEP): one capacity per combination, the first listed flag\n"
    "varying slowest. Every configuration is checked before any search starts; with --tp, --pp or\n"
    "--data-parallel-size a list, the layouts vLLM refuses at start-up are left out and named.\n"
    "With --enable-expert-parallel a capacity is that of the data-parallel ranks sharing the\n"
    "experts (--data-parallel-size: one group of TP x DP GPUs); compare groups with\n"
    "--data-parallel-size LIST (copies of a group behind a router are not modelled: no\n"
    "--target-rate or --over-time).\n"
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
    "  --energy-cost-per-kwh X  dollars per kWh of electricity: adds energy_usd_per_Mtok, the\n"
    "                       electricity per million output tokens at capacity (the GPUs' mean\n"
    "                       power in the capacity probe, idle included, times --pue)\n"
    "  --pue X              the facility's power usage effectiveness, 1 <= X <= 5 (default 1:\n"
    "                       the GPUs alone); with either flag the table shows kWh_per_Mtok\n"
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

const std::set<std::string> kCapacityOwn = {"slo",
                                            "attainment",
                                            "slo-ttft-ms",
                                            "slo-tpot-ms",
                                            "max-rejected-share",
                                            "gpu-hour-cost",
                                            "target-rate",
                                            "rate-start",
                                            "rate-max",
                                            "rel-tol",
                                            "jobs",
                                            "out",
                                            "csv",
                                            "config",
                                            "over-time",
                                            "target-scale",
                                            "size-group",
                                            "confidence",
                                            "energy-cost-per-kwh",
                                            "pue"};

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
  spec.energy_usd_per_kwh = get_number(own, "energy-cost-per-kwh", NAN);
  if (own.count("energy-cost-per-kwh") &&
      !(spec.energy_usd_per_kwh > 0 && spec.energy_usd_per_kwh <= 1e3)) {
    throw Error("energy-cost-per-kwh", "dollars per kWh: a number in (0, 1000]");
  }
  spec.pue = get_number(own, "pue", 1);
  spec.pue_given = own.count("pue") > 0;
  if (!(spec.pue >= 1 && spec.pue <= 5)) {
    throw Error("pue", "power usage effectiveness (facility over IT power): a number in [1, 5]");
  }
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

// Whether the run flags RUN name no scheduler: every configuration is vllm-v1, the default.
bool default_scheduler_flags(const std::vector<std::pair<std::string, std::string>>& run) {
  return std::none_of(run.begin(), run.end(), [](const auto& f) {
    return f.first == "scheduler" || f.first == "enable-chunked-prefill";
  });
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
    if (capacity_list_flag(flag) && value.find(',') != std::string::npos) {
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
  if (base.enable_expert_parallel) {
    // servesim's expert-parallel group is the whole fleet: copies of it are not modelled.
    throw Error("over-time",
                "plans copies of a configuration window by window; copies of an "
                "expert-parallel group are not modelled (compare --data-parallel-size LIST)");
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
                   {{"slo", slo}, {"window_s", format("%g", window_s)}}, [&plan](H5::H5File& f) {
                     write_table_group(f, "fleets", day_fleets_table(plan));
                     write_table_group(f, "fleet_size", day_fleet_size_table(plan));
                   });
  }
  if (!csv_out.empty()) write_sweep_csv(csv_out, t);
  return 0;
}

// How capacity reads run flags: the run flags' table (run_flags.hpp, grid_args.hpp).
RunFlagReading run_flag_reading() {
  RunFlagReading read;
  read.values = [](const std::string& flag, const std::string& value) {
    return expand_values(flag, value, run_flag_is_numeric(flag), run_flag_separator(flag));
  };
  read.spec = spec_from_flags;
  read.text = flags_text;
  return read;
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
    return over_time(s, spec, jobs, out, capacity_slo_text(get(s.own, "slo"), spec));
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
  std::vector<std::string> refused;
  // servesim's expert-parallel group is the whole fleet: a fleet of copies of it (each behind its
  // own experts) is not modelled, nor is growing one group's ranks the same question. Refused
  // before any configuration is checked.
  const bool expert_parallel = std::any_of(s.run.begin(), s.run.end(), [](const auto& flag) {
    return flag.first == "enable-expert-parallel" && flag.second != "false" &&
           flag.second != "no" && flag.second != "off" && flag.second != "0";
  });
  if (target > 0 && expert_parallel) {
    throw Error(field::kTargetRate,
                "sizes copies of a configuration; copies of an expert-parallel group are not "
                "modelled: compare groups with --data-parallel-size LIST");
  }
  const std::vector<CapacityConfiguration> configs =
      capacity_configurations(s.run, run_flag_reading(), inputs, &refused);
  check_capacity_configurations(spec, configs, inputs);
  const CapacitySearchOutcome searched = search_configurations(configs, spec, target, jobs, inputs);
  if (searched.worker) return 0;
  const std::vector<CapacityResult>& results = searched.results;
  const std::string slo = capacity_slo_text(get(s.own, "slo"), spec);
  out << capacity_text(results, spec, target, slo, default_scheduler_flags(s.run));
  if (!refused.empty()) {
    out << "\nlayouts left out, as vLLM refuses them at start-up:\n";
    for (const std::string& r : refused)
      out << "  " << r << "\n";
  }
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
