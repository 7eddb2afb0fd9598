// A day, not a rate (capacity --over-time, issue 25): on a timed workload (a trace, or a generator
// with a --rate-pattern), the replicas each window of WINDOW_S seconds needs to hold the SLO, and
// what the day costs under three fleets, each simulated over the whole workload:
//  - fixed: the most any window needs, all day;
//  - plan: the per-window counts as a schedule (sim/autoscaler.hpp's kSchedule: a window's extra
//    replicas started one provisioning time ahead, drained at the start of a window needing
//    fewer);
//  - autoscaler: the run's --autoscale policy (when given).
// Per window: the window's requests alone (--window START:END), at 1, 2, 4, ... replicas until the
// SLO holds, then bisected to the fewest (each window starts from an empty fleet: its backlog
// from the window before is not carried, so a count is a floor when the previous window
// overloaded). Windows are searched in parallel; an empty window needs --min-replicas.
// Each day run is judged per window on its requests (arrival in the window): TTFT, TPOT, E2E,
// queue and OTPS terms from the requests' records; ITL terms on the requests' TPOT (a day run
// keeps no per-token times: the mean gap of each request, which a P99 ITL bound judges more
// leniently than the per-window searches did). SLO attainment is the share of windows meeting
// every term, and the share of requests meeting the per-request bounds (--slo-ttft-ms /
// --slo-tpot-ms, else the tightest TTFT and ITL/TPOT limits of --slo).
// Cost: replica-hours as billed (from start or provisioning to stop; fixed: the whole span) x TP
// x the GPU's price.
// Promises: deterministic for any number of threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/capacity.hpp"

namespace servesim {

struct PlanWindow {
  double start_s = 0, end_s = 0;
  int64_t requests = 0;
  int replicas = 0;    // the fewest that met the SLO (or the limit, when none did)
  bool met = true;     // false: even the limit failed
  std::string failed;  // the term one replica fewer failed ("" when one replica met it)
  int probes = 0;
};

struct DayRun {
  std::string name;  // fixed | plan | autoscaler
  int peak_replicas = 0;
  double replica_hours = 0, gpu_hours = 0, usd = NAN;
  int windows_met = 0, windows_judged = 0;
  std::string worst_term;  // the term failed most often over the windows ("" when none failed)
  double request_attainment = NAN;
  RunSummary summary;
  AutoscaleSummary scale;  // plan and autoscaler: the fleet's size over time
};

struct DayPlan {
  double window_s = 0, span_s = 0;
  int tp = 1, gpus_per_replica = 1;  // a replica's TP degree, and its GPUs (TP x PP)
  double usd_per_gpu_h = NAN;
  double ttft_ms = INFINITY, tpot_ms = INFINITY;  // the per-request bounds of request_attainment
  int max_replicas = 0;                           // the search's limit per window
  std::vector<PlanWindow> windows;
  std::vector<DayRun> runs;
};

// BASE's day cut into windows of WINDOW_S: the plan, the fixed fleet, and BASE's autoscaler when
// it has one. Error naming --over-time when the workload has no arrivals to cut or too many
// windows (more than 10,000).
DayPlan plan_day(const RunSpec& base, const CapacitySpec& spec, double window_s, int max_replicas,
                 int jobs, Inputs& inputs);

// The plan as a text report (per-window table, then the fleets side by side).
std::string day_plan_text(const DayPlan& p);

// The per-window table (`capacity --over-time --csv/--out`).
SweepTable day_plan_table(const DayPlan& p);
// The day under each fleet (fixed, plan, autoscaler), one row each, as the text's second table
// (`--out`'s group fleets).
SweepTable day_fleets_table(const DayPlan& p);
// The plan's and the autoscaler's size over the day, one row a change (`--out`'s group
// fleet_size; the fixed fleet has none: its peak all day).
SweepTable day_fleet_size_table(const DayPlan& p);

}  // namespace servesim
