// `servesim capacity`: the highest request rate each configuration (scheduler x token budget)
// sustains under an SLO (analysis/capacity.hpp), searched in parallel.
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/capacity.hpp"
#include "cli/commands.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"
#include "util/parallel.hpp"

namespace servesim::cli {

namespace {

const char* kCapacityHelp =
    "usage: servesim capacity [run flags] (--slo LIST | --attainment F --slo-ttft-ms X "
    "[--slo-tpot-ms Y]) [options]\n"
    "\n"
    "The highest request rate (req/s) each configuration sustains under the SLO, by bisection on\n"
    "--request-rate over the same trace or generator (same seed: the same requests, arriving\n"
    "faster). --scheduler and --max-num-batched-tokens may be lists: one capacity per policy and\n"
    "token budget.\n"
    "\n"
    "  --slo LIST           bounds on summary metrics, e.g. ttft_p50_ms=2000,itl_p99_ms=100;\n"
    "                       latencies are upper bounds, otps_*/throughput lower bounds (or\n"
    "                       write <= / >=). Sarathi-Serve's capacity: queue_p50_ms=2000 plus a\n"
    "                       P99 TBT bound itl_p99_ms=...\n"
    "  --attainment F       goodput (DistServe, vLLM benchmark_serving --goodput): at least this\n"
    "                       share (0 < F <= 1) of all requests meets every per-request SLO below\n"
    "                       (rejected requests miss)\n"
    "  --slo-ttft-ms X      per-request TTFT bound\n"
    "  --slo-tpot-ms Y      per-request TPOT bound (one-token answers meet it)\n"
    "  --target-rate R      also print the replicas of each configuration that serve R req/s,\n"
    "                       assuming ideal spreading (each replica sees R/replicas)\n"
    "  --rate-start R       first rate tried (default 1); it doubles or halves to a bracket\n"
    "  --rate-max R         the highest rate tried (default 100000)\n"
    "  --rel-tol F          stop when the bracket is within F of its top (default 0.02)\n"
    "  --jobs N             configurations searched in parallel (default: all cores)\n"
    "  --out FILE.h5, --csv FILE.csv   the capacity table\n"
    "  --config FILE        read flags from an INI file; the command line wins\n";

const std::set<std::string> kCapacityOwn = {
    "slo",      "attainment", "slo-ttft-ms", "slo-tpot-ms", "target-rate", "rate-start",
    "rate-max", "rel-tol",    "jobs",        "out",         "csv",         "config"};

// The SLO and search bounds of the command line, and --target-rate into TARGET; Error naming the
// option on a bad one.
CapacitySpec capacity_spec(std::map<std::string, std::string>& own, double& target) {
  CapacitySpec spec;
  if (own.count("slo")) spec.bounds = parse_slo(own["slo"]);
  spec.attainment = get_number(own, "attainment", 0);
  spec.ttft_ms = get_number(own, "slo-ttft-ms", INFINITY);
  spec.tpot_ms = get_number(own, "slo-tpot-ms", INFINITY);
  spec.rate_start = get_number(own, "rate-start", 1);
  spec.rate_max = get_number(own, "rate-max", 100000);
  spec.rel_tol = get_number(own, "rel-tol", 0.02);
  target = get_number(own, "target-rate", 0);
  if (own.count("attainment") && !(spec.attainment > 0 && spec.attainment <= 1)) {
    throw Error("attainment", "must be in (0, 1]");
  }
  if (own.count("attainment") && !own.count("slo-ttft-ms") && !own.count("slo-tpot-ms")) {
    throw Error("attainment", "needs --slo-ttft-ms and/or --slo-tpot-ms");
  }
  if ((own.count("slo-ttft-ms") || own.count("slo-tpot-ms")) && !own.count("attainment")) {
    throw Error("slo-ttft-ms", "per-request SLOs need --attainment (e.g. 0.9)");
  }
  if (spec.bounds.empty() && spec.attainment == 0) {
    throw Error("slo", "capacity needs --slo or --attainment (see servesim capacity --help)");
  }
  if (!(spec.rate_start > 0) || !(spec.rate_max >= spec.rate_start)) {
    throw Error("rate-start", "need 0 < --rate-start <= --rate-max");
  }
  if (!(spec.rel_tol > 0 && spec.rel_tol < 1)) throw Error("rel-tol", "must be in (0, 1)");
  if (target < 0) throw Error("target-rate", "must be >= 0");
  return spec;
}

// One configuration to search: its flags (for messages) and its RunSpec.
struct Configuration {
  std::vector<std::pair<std::string, std::string>> flags;
  RunSpec spec;
};

// One configuration per scheduler x token budget; every other flag is shared. Each is checked
// before any search starts.
std::vector<Configuration> configurations(const SplitArgs& s, Inputs& inputs) {
  std::vector<std::string> schedulers = {""}, budgets = {""};
  std::vector<std::pair<std::string, std::string>> base;
  for (const auto& [flag, value] : s.run) {
    if (flag == "request-rate") {
      throw Error("request-rate", "is what capacity searches; see --rate-start and --rate-max");
    }
    if (flag == "scheduler") {
      schedulers = expand_values(flag, value, false);
    } else if (flag == "max-num-batched-tokens") {
      budgets = expand_values(flag, value, true);
    } else {
      base.emplace_back(flag, value);
    }
  }
  std::vector<Configuration> out;
  for (const std::string& sch : schedulers) {
    for (const std::string& b : budgets) {
      Configuration c{base, {}};
      if (!sch.empty()) c.flags.emplace_back("scheduler", sch);
      if (!b.empty()) c.flags.emplace_back("max-num-batched-tokens", b);
      c.spec = spec_from_flags(c.flags);
      check_point(c.spec, inputs);
      out.push_back(std::move(c));
    }
  }
  return out;
}

// The SLO as the header line says it.
std::string slo_text(const std::map<std::string, std::string>& own, const CapacitySpec& spec) {
  std::string text = get(own, "slo");
  if (spec.attainment > 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%.0f%% of requests with TTFT <= %g ms and TPOT <= %g ms",
                  text.empty() ? "" : " and ", spec.attainment * 100, spec.ttft_ms, spec.tpot_ms);
    text += buf;
  }
  return text;
}

void print_capacity(std::ostream& out, const std::vector<CapacityResult>& results, double target,
                    const std::string& slo) {
  out << "servesim capacity: the highest request rate meeting " << slo << "\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-18s %12s %9s %9s %9s %9s %6s%s\n", "scheduler", "capacity_rps",
                "TTFT p50", "ITL p99", "TPOT p50", "OTPS p50", "probes",
                target > 0 ? "  replicas" : "");
  out << buf;
  for (const CapacityResult& c : results) {
    std::snprintf(buf, sizeof buf, "%-18s %12.3f %9.1f %9.1f %9.1f %9.1f %6d", c.label.c_str(),
                  c.capacity, c.at.summary.ttft_ms.p50, c.at.summary.itl_ms.p99,
                  c.at.summary.tpot_ms.p50, c.at.summary.otps.p50, c.iterations);
    out << buf;
    if (target > 0) {
      out << "  " << (c.capacity > 0 ? std::to_string(replicas_for(target, c)) : "n/a");
    }
    const std::string note = capacity_note(c);
    if (!note.empty()) out << "  (" << note << ")";
    out << "\n";
  }
  if (target > 0) {
    out << "replicas serve --target-rate " << target
        << " req/s assuming ideal spreading: each replica sees target/replicas req/s with the "
           "same arrival pattern (no router imbalance).\n";
  }
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
  Inputs inputs;
  const std::vector<Configuration> configs = configurations(s, inputs);
  std::vector<CapacityResult> results(configs.size());
  parallel_for(
      configs.size(), jobs, "capacity",
      [&](size_t i) {
        try {
          results[i] = search(configs[i].spec, spec, inputs);
        } catch (const Error& e) {
          throw Error("capacity",
                      "configuration '" + flags_text(configs[i].flags) + "': " + e.what());
        }
      },
      [](size_t) {});
  const std::string slo = slo_text(s.own, spec);
  print_capacity(out, results, target, slo);
  const SweepTable t = capacity_table(results, target, slo);
  const std::string h5_out = get(s.own, "out"), csv_out = get(s.own, "csv");
  if (!h5_out.empty()) {
    write_table_h5(h5_out, t, "servesim-capacity", "capacity",
                   {{"slo", slo}, {"target_rate", std::to_string(target)}});
  }
  if (!csv_out.empty()) write_sweep_csv(csv_out, t);
  return 0;
}

}  // namespace servesim::cli
