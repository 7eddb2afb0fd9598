// Capacity: the highest request rate a configuration sustains under a service-level objective,
// found by bisection on the arrival rate of the same requests (same trace or generator and seed:
// the same requests, arriving faster).
//  - An SLO is bounds on summary metrics (`ttft_p50_ms=2000,itl_p99_ms=100`; latencies are upper
//    bounds, OTPS and throughput lower bounds, or say <= / >=), Sarathi-Serve's form among them
//    (queue_p50_ms plus a P99 TBT bound), and/or DistServe's goodput: at least a share of all
//    requests meets per-request TTFT and TPOT bounds (rejected requests miss).
//  - search(): from --rate-start, double or halve to a bracket (--rate-max itself is tried), then
//    bisect until the bracket is within --rel-tol of its top.
// Promises: the reported capacity met the SLO when simulated; a configuration that rejects
// requests (too long for its context, budget or KV cache) does not serve the workload at any
// rate, and is reported so, never as a capacity.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/run_spec.hpp"
#include "analysis/sweep.hpp"

namespace servesim {

struct Bound {
  std::string text, metric;  // as written, and the summary_metrics column
  double limit = 0;
  bool upper = true;  // value <= limit (else >=)
};

// "ttft_p50_ms" / "ttft_ms_p50" / "ttft_ms.p50" -> "ttft_ms_p50"; other names unchanged.
std::string metric_column(std::string name);

// "ttft_p50_ms=2000,otps_p50>=40": Error naming --slo on a bad term or unknown metric.
std::vector<Bound> parse_slo(const std::string& text);

struct CapacitySpec {
  std::vector<Bound> bounds;
  double attainment = 0, ttft_ms = INFINITY, tpot_ms = INFINITY;
  double rate_start = 1, rate_max = 100000, rel_tol = 0.02;
};

// The share of all requests meeting the per-request SLOs (rejected requests miss).
double attainment(const RunResult& r, double ttft_ms, double tpot_ms);

// One simulation at one rate, and whether it met the SLO.
struct Probe {
  bool ok = false;
  double rate = 0, attained = NAN;
  RunSummary summary;
  std::string label, policy;
  int64_t budget = 0;
};

struct CapacityResult {
  std::string label, policy;
  int64_t budget = 0;
  double capacity = 0;
  bool above_max = false, below_min = false;
  uint64_t rejected = 0;  // requests the configuration refuses at any rate
  int iterations = 0;
  Probe at;  // the probe at the capacity (the highest rate that met the SLO)
};

// The capacity of BASE (whose request rate is what the search sets).
CapacityResult search(const RunSpec& base, const CapacitySpec& spec, Inputs& inputs);

// Why a result is not a plain capacity ("" when it is).
std::string capacity_note(const CapacityResult& c);

// Replicas that serve TARGET req/s at capacity C under ideal spreading; 0 without a target or
// a capacity.
int64_t replicas_for(double target, const CapacityResult& c);

// The capacity table (`capacity --out/--csv`): one row per configuration.
SweepTable capacity_table(const std::vector<CapacityResult>& results, double target,
                          const std::string& slo_text);

}  // namespace servesim
