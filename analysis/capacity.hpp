// Capacity: the highest request rate a configuration sustains under a service-level objective,
// found by bisection on the arrival rate of the same requests (same trace or generator and seed:
// the same requests, arriving faster), and what serving at that rate costs.
//  - An SLO is bounds on summary metrics (`ttft_p50_ms=2000,itl_p99_ms=100`; latencies are upper
//    bounds, OTPS and throughput lower bounds, or say <= / >=), Sarathi-Serve's form among them
//    (queue_p50_ms plus a P99 TBT bound), and/or DistServe's goodput: at least a share of all
//    requests meets per-request TTFT and TPOT bounds (rejected requests miss). Each bound is a
//    term, named by its summary-metric column (ttft_ms_p99); the goodput form is the term
//    `attainment`, and a rejected share above --max-rejected-share the term `rejected_share`.
//  - search(): the bracket of doubling --rate-start up to a failing rate (--rate-max itself the
//    top rung), found from the top down: a first probe of every request at once at --rate-max
//    (run to its end: the configuration's rejections and throughput), then the first rung at or
//    above that throughput, halving down to one that meets the SLO or doubling on up; below
//    --rate-start, halving. Then bisection until the bracket is within --rel-tol of its top. A
//    probe after the first stops at its last arrival when it is certain to be overloaded.
//  - The binding term is the one that failed at the lowest failing rate of the search (the top of
//    the final bracket), by the widest relative margin when several failed there: the term that
//    stopped the capacity from being higher. None binds when the SLO held up to --rate-max.
//  - Rejections (a request too long for the context, the token budget or the KV cache) do not
//    depend on the rate. A configuration rejecting more than --max-rejected-share of the requests
//    does not serve the workload at any rate (capacity 0, binding `rejected_share`); within the
//    share, its capacity is searched as usual and the note counts the rejected requests.
//  - Cost: dollars per GPU-hour from --gpu-hour-cost (a number, or NAME=X per GPU name or alias)
//    or else the GPU file's cost_per_hour. A configuration's dollars per hour are those of every
//    GPU it simulates: replicas x TP of each pool (a fleet's copies, each group of a mixed fleet,
//    the prefill and the decode pool), priced by its GPU (price_pools, the one place that
//    computes it). Cost per million output (total) tokens at capacity = dollars per hour /
//    (output (total) tokens per s x 3600) x 1e6 of the same simulated fleet, NaN when a price is
//    unknown. The fleet serving --target-rate is priced as simulated (size_fleet), or as the
//    ideal count of copies of the configuration when it could not be sized.
// Promises: the reported capacity met the SLO when simulated; results depend only on the inputs
// (never on threads or timing).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
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

// Dollars per GPU-hour: one price for every GPU (ALL), and prices by GPU name.
struct GpuHourCost {
  double all = NAN;
  std::map<std::string, double> by_gpu;  // lower-case names

  // GPU's price: by name, else ALL, else FILE_COST (its GPU file's cost_per_hour, or NaN).
  double of(const std::string& gpu, double file_cost) const;
};

// --gpu-hour-cost "2.5", "a100-80g=1.8,h100-sxm=3.2" or both ("2.5,h100-sxm=3.2": 2.5 for the
// others): Error naming --gpu-hour-cost unless every price is a number in (0, 1e7].
GpuHourCost parse_gpu_hour_cost(const std::string& text);

// The GPUs of POOLS and their dollars per hour under COST (NaN when a pool's price is unknown).
struct FleetPrice {
  int64_t gpus = 0;
  double usd_per_h = NAN;
};
FleetPrice price_pools(const std::vector<GpuPool>& pools, const GpuHourCost& cost);
// "h100-sxm", "2x h100-sxm", "1x h100-sxm prefill + 3x h100-sxm decode", "2x a100-80g + 1x
// h100-sxm" (with "tpN" when the pools' TP differ).
std::string describe_pools(const std::vector<GpuPool>& pools);

struct CapacitySpec {
  std::vector<Bound> bounds;
  double attainment = 0, ttft_ms = INFINITY, tpot_ms = INFINITY;
  double max_rejected_share = 0;  // in [0, 1)
  double rate_start = 1, rate_max = 100000, rel_tol = 0.02;
  GpuHourCost cost;
  // --energy-cost-per-kwh (NaN: not given) and --pue: the facility's electricity, a kWh at the
  // meter, and its power usage effectiveness (facility power over the GPUs' power, >= 1).
  double energy_usd_per_kwh = NAN, pue = 1;
  bool pue_given = false;  // --pue on the command line (the energy columns shown, even at 1)
  // --size-group GPU: with --replica-gpus and --target-rate, search that group's count only.
  std::string size_group;
  // --confidence LEVEL (0: none): every bound is judged at the pessimistic end of its metric's
  // LEVEL prediction interval (intervals.hpp: pessimistic_value, at the probe's own regime, so a
  // probe past the fitted range is judged at the widest), and the goodput form's per-request
  // bounds are tightened by TTFT p90's and TPOT mean's interval factors.
  double confidence = 0;
};

// The share of all requests meeting the per-request SLOs (rejected requests miss).
double attainment(const RunResult& r, double ttft_ms, double tpot_ms);

// One simulation at one rate, and whether it met the SLO.
struct Probe {
  bool ok = false;
  std::string failed;  // the term failed by the widest margin ("" when ok)
  double rate = 0, attained = NAN;
  RunSummary summary;
  std::string label, policy, gpu, model;
  std::string cost_source;  // report.hpp's cost_source
  int tp = 1;
  int64_t budget = 0;
  double gpu_file_cost = NAN;                // the GPU file's cost_per_hour
  std::vector<GpuPool> pools;                // every GPU simulated
  std::vector<std::string> router_warnings;  // a router with nothing to act on
  bool stopped = false;                      // ended at its last arrival, overloaded
  // Requests the probe ran: more than its spec's when it was lengthened to be judged.
  uint64_t requests = 0;
  int lengthened = 0;  // doublings of its requests (probe_at)
  // With a confidence: why the probe's intervals were the widest (outside the fitted range).
  std::vector<std::string> extrapolated;
};

// S simulated as it is and judged against SPEC (its rate: S's). With STOP_WHEN_OVERLOADED, a run
// whose queue is diverging ends at its last arrival (SimulateOptions::stop_when_overloaded) and
// fails (a bound its done requests already fail, else `overloaded`).
Probe judge_run(const RunSpec& s, const CapacitySpec& spec, Inputs& inputs,
                bool stop_when_overloaded = false);
// The term of SPEC that S (and ATTAINED, the goodput share) fails by the widest margin ("" when
// it meets every term).
std::string slo_failure(const CapacitySpec& spec, const RunSummary& s, double attained);

struct CapacityResult {
  std::string label, policy, gpu, model;
  std::string cost_source;  // where the cost model's parameters came from (report.hpp)
  int tp = 1;
  int64_t budget = 0;
  double capacity = 0;
  bool above_max = false, below_min = false;
  bool refused = false;                 // rejects more than --max-rejected-share: no capacity
  uint64_t rejected = 0, requests = 0;  // rejected at every rate, of the workload's requests
  int iterations = 0;
  // Probes that ended at their last arrival, overloaded, and the requests they left unfinished
  // (queued work not simulated: the time the early stop saved).
  int probes_stopped = 0;
  uint64_t requests_unfinished = 0;
  // Probes lengthened to be judged (kMaxLengthenings), and the most requests one ran.
  int probes_lengthened = 0, probes_too_short = 0;
  uint64_t most_probe_requests = 0;
  std::string binding;              // the binding term ("" when none)
  double gpu_hour_cost = NAN;       // dollars per GPU-hour of its (first) GPU, NaN when unknown
  std::vector<GpuPool> pools;       // the configuration's GPUs
  std::string fleet, quantization;  // describe_pools(pools); the models' quantizations
  int64_t gpus = 0;                 // of the configuration
  double usd_per_h = NAN;           // of the configuration (price_pools)
  double energy_usd_per_kwh = NAN, pue = 1;  // as given (CapacitySpec)
  Probe at;  // the probe at the capacity (the highest rate that met the SLO)
  // With --target-rate: the fewest replicas that met the SLO at the target when simulated as a
  // fleet behind the router (0: not sized; -1: none up to the search's limit), and the router.
  int64_t fleet_replicas = 0;
  std::string router;
  std::string fleet_split;  // disaggregated: the cheapest "P+D" among the fewest that met it
  std::vector<std::string> router_warnings;  // of the sizing probes' router
  int64_t fleet_gpus = 0;                    // of the sized fleet (0: not sized)
  double fleet_usd_per_h = NAN;              // of the sized fleet, as simulated
  // With --confidence: the level, and the point answer (the same search without intervals; the
  // fields above are the confident one's, which the replicas, fleet and costs are sized by).
  double confidence = 0;
  double point_capacity = NAN;
  std::string point_binding;
};

// R as bytes (CBOR of its fields, NaN kept) and back, exactly: what an MPI rank sends rank 0.
std::string capacity_result_bytes(const CapacityResult& r);
CapacityResult capacity_result_from_bytes(const std::string& bytes);

// Called after each probe, from the searching thread (progress lines).
using ProbeHook = std::function<void(const Probe&)>;

// BASE as one replica's run when it asks for no replicas: --router and --router-signal-delay-s
// then serve the fleet sizing (size_fleet) only.
RunSpec one_replica(const RunSpec& base);

// The capacity of BASE (whose request rate is what the search sets), as one_replica(BASE). With
// SPEC.confidence, the confident capacity, after the point one's search (point_capacity).
CapacityResult search(const RunSpec& base, const CapacitySpec& spec, Inputs& inputs,
                      const ProbeHook& on_probe = {});

// A probe that meets the SLO but is too short to judge whether it kept up (Overload::judgeable:
// its later half's arrivals cannot show a 5% shortfall over the noise of the requests in the
// system) is run again with twice the requests, at most this many times (16x); a probe that is
// still too short, or whose workload has no more requests (a whole trace), fails with the term
// `too_short`: a rate is never taken on a run too short to tell.
inline constexpr int kMaxLengthenings = 4;

// Why a result is not a plain capacity, how many requests it rejects, and how far its probes were
// lengthened ("" when none).
std::string capacity_note(const CapacityResult& c);

// Replicas that serve TARGET req/s at capacity C under ideal spreading; 0 without a target or
// a capacity.
int64_t replicas_for(double target, const CapacityResult& c);

// The fleet behind BASE's router that serves TARGET req/s: from the ideal-spreading count, the
// fewest replicas whose fleet meets SPEC when simulated at TARGET (down while it still meets it,
// up until it does, at most 4 x ideal + 8). Sets C.fleet_replicas and C.router; adds its probes
// to C.iterations. Nothing without a target or a capacity. A mixed fleet (--replica-gpus) grows
// in proportion: K copies of every group, K the count (its capacity is the whole fleet's, so the
// ideal count is of copies). A disaggregated BASE is sized by its
// P:D split instead: the fewest replicas in all for which some split meets SPEC at TARGET (every
// split of each total tried, from 2 up to twice the ideal count of BASE's fleets + 8, at most
// 64), and among those splits the cheapest (GPU-hours by --gpu-hour-cost, else GPUs).
void size_fleet(const RunSpec& base, const CapacitySpec& spec, double target, CapacityResult& c,
                Inputs& inputs);

// Dollars per million output (total) tokens at the capacity, over every GPU of the configuration;
// NaN without a capacity or a price.
double cost_per_million_output_tokens(const CapacityResult& c);
double cost_per_million_total_tokens(const CapacityResult& c);
// The facility's kW (the GPUs' mean power at the capacity x PUE), its dollars per hour at
// --energy-cost-per-kwh, dollars and kWh per million output tokens at the capacity; NaN when
// unknown (no capacity, no GPU power, no price).
double facility_kw(const CapacityResult& c);
double energy_cost_per_hour(const CapacityResult& c);
double energy_cost_per_million_output_tokens(const CapacityResult& c);
double kwh_per_million_output_tokens(const CapacityResult& c);
// Dollars per hour of the fleet that serves TARGET: as simulated by size_fleet, else the ideal
// count of copies of the configuration; NaN when unknown.
double fleet_cost_per_hour(double target, const CapacityResult& c);
// GPUs of that fleet (the same way); 0 when unknown.
int64_t fleet_gpu_count(double target, const CapacityResult& c);

// The capacity table (`capacity --out/--csv`): one row per configuration.
SweepTable capacity_table(const std::vector<CapacityResult>& results, double target,
                          const std::string& slo_text);

}  // namespace servesim
