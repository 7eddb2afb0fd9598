// Autoscaler: replicas added and removed during a fleet run, as Kubernetes' HorizontalPodAutoscaler
// (autoscaling/v2) scales a vLLM Deployment on one of vLLM's Prometheus metrics (the KEDA /
// llm-d recipes: vllm:num_requests_waiting, vllm:num_requests_running, vllm:kv_cache_usage_perc,
// or the request rate), or as a planned schedule sets the count per window.
//  - Every PERIOD_S (HPA's --horizontal-pod-autoscaler-sync-period, 15 s) the metric is read off
//    the ready replicas and summed; the raw recommendation is ceil(sum / TARGET) (the HPA's
//    ceil(current x value / target), replicas still starting counted at 0, as the HPA counts
//    unready pods on a scale-up), or the current count when sum / (current x target) is within
//    TOLERANCE (0.1) of 1.
//  - Stabilisation (behavior.scaleUp/scaleDown.stabilizationWindowSeconds, 0 s and 300 s): a
//    scale-up goes to the lowest recommendation of the last UP_WINDOW_S, a scale-down to the
//    highest of the last DOWN_WINDOW_S. A scale-up adds at most max(4, 100%) per period (the
//    HPA's default scaleUp policies); the count stays in [MIN, MAX].
//  - A new replica is billed from the decision and takes PROVISION_S to serve (weights loaded at a
//    storage bandwidth plus the engine's start-up: CUDA graphs, compilation); it starts with an
//    empty prefix cache. A scale-down first cancels replicas still starting, then drains the most
//    recently started ready ones: the router stops sending them requests, and each is billed
//    until its last request finishes (a preStop hook that waits for in-flight requests).
//  - A schedule (capacity --over-time's plan): counts per window, each window's extra replicas
//    started PROVISION_S ahead of it so that they are ready at its start, and removed (drained)
//    at the start of a window that needs fewer.
// Promises: deterministic; the router never sees an empty fleet (MIN >= 1, and a replica drains
// only while at least the count asked for are ready or starting, ready ones first kept).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/event_loop.hpp"
#include "sim/router.hpp"

namespace servesim {

enum class ScaleMetric { kWaiting, kRunning, kKvUsage, kRate, kSchedule };

// "waiting", "running", "kv", "rate"; Error naming --autoscale otherwise.
ScaleMetric parse_scale_metric(const std::string& name);
const char* scale_metric_name(ScaleMetric m);

struct AutoscaleOptions {
  bool enabled = false;
  ScaleMetric metric = ScaleMetric::kWaiting;
  // Per replica: waiting or running requests, KV usage (0..1) or requests per second.
  double target = 0;
  int min_replicas = 1, max_replicas = 1;
  double period_s = 15, tolerance = 0.1;
  double up_window_s = 0, down_window_s = 300;
  // Seconds from the decision to serving; NaN: STARTUP_S + the model's weights (bytes, all GPUs of
  // a replica) / LOAD_GB_PER_S.
  double provision_s = NAN;
  double startup_s = 60, load_gb_per_s = 2;
  // kSchedule: (window start, replicas), by start; the first window's count is the fleet's start.
  std::vector<std::pair<double, int>> schedule;
};

// Throws Error naming the flag when an option is out of range.
void check_autoscale(const AutoscaleOptions& o);

// The fleet's size at a moment: replicas serving, starting and draining, and what the policy
// wanted (the recommendation after stabilisation and bounds) and read (the metric summed).
struct ScaleEvent {
  double time_s = 0;
  int ready = 0, starting = 0, draining = 0, desired = 0;
  double metric = 0;
};

struct AutoscaleSummary {
  bool enabled = false;
  std::string metric;
  double target = 0, provision_s = 0;
  int min_replicas = 0, max_replicas = 0, peak_replicas = 0;
  int scale_ups = 0, scale_downs = 0;  // replicas started, replicas removed
  double replica_hours = 0;            // billed: from start (or the run's start) to stop
  std::vector<ScaleEvent> timeline;    // at every decision that changed something, and the ends
};

class Autoscaler final : public EventLoop::Process {
 public:
  // The replicas as the autoscaler acts on them (slots 0..size-1; the first INITIAL serve from
  // the start).
  class Fleet {
   public:
    virtual size_t size() const = 0;
    virtual ReplicaLoad load(size_t replica) const = 0;
    virtual void set_routable(size_t replica, bool routable) = 0;
    // A replica started afresh: its prefix cache emptied.
    virtual void restart(size_t replica) = 0;
    virtual uint64_t sent() const = 0;  // requests sent so far
    virtual bool finished() const = 0;  // every request finished or rejected

   protected:
    ~Fleet() = default;
  };

  // INITIAL: replicas serving at the start (clamped to [min, max]; a schedule's first count
  // instead).
  Autoscaler(const AutoscaleOptions& o, double provision_s, Fleet& fleet, int initial);
  int initial() const { return initial_; }
  // Starts at T0 (the first arrival).
  void start(EventLoop& loop, double t0);
  void handle(EventLoop& loop, uint32_t tag) override;
  // REPLICA has no request left (told by the gateway): a draining replica stops.
  void on_idle(size_t replica, double now);
  // The summary, the run ending at END_S.
  AutoscaleSummary summary(double end_s) const;

 private:
  enum class State : uint8_t { kStopped, kStarting, kReady, kDraining };
  static constexpr uint32_t kTick = 0, kReadyBase = 1;
  int count(State s) const;
  double read_metric(double now);
  int recommend(double now, double sum);
  void apply(EventLoop& loop, int desired, double metric);
  void stop(size_t replica, double now);
  void note(double now, int desired, double metric);

  AutoscaleOptions o_;
  double provision_s_;
  Fleet& fleet_;
  int initial_ = 1;
  std::vector<State> state_;
  std::vector<double> since_;        // when each slot was started (billing)
  std::vector<double> ready_at_;     // when a starting slot serves (a cancelled start's is stale)
  std::vector<size_t> ready_order_;  // ready replicas, oldest first
  std::vector<std::pair<double, int>> history_;  // (time, raw recommendation)
  std::vector<std::pair<double, int>> actions_;  // kSchedule: (time, count)
  size_t next_action_ = 0;
  uint64_t last_sent_ = 0;
  double t0_ = 0, billed_s_ = 0;
  int peak_ = 0, ups_ = 0, downs_ = 0;
  std::vector<ScaleEvent> timeline_;
};

// The fleet slots a run under O needs: at most MAX serving or starting, plus those still
// draining (at most MAX - MIN).
int autoscale_slots(const AutoscaleOptions& o);

}  // namespace servesim
