#include "sim/autoscaler.hpp"

#include <algorithm>
#include <cmath>

#include "util/error.hpp"

namespace servesim {

namespace {
struct NamedMetric {
  ScaleMetric metric;
  const char* name;
};
constexpr NamedMetric kMetrics[] = {{ScaleMetric::kWaiting, "waiting"},
                                    {ScaleMetric::kRunning, "running"},
                                    {ScaleMetric::kKvUsage, "kv"},
                                    {ScaleMetric::kRate, "rate"},
                                    {ScaleMetric::kSchedule, "schedule"}};
}  // namespace

ScaleMetric parse_scale_metric(const std::string& name) {
  for (const NamedMetric& m : kMetrics) {
    if (name == m.name && m.metric != ScaleMetric::kSchedule) return m.metric;
  }
  throw Error(field::kAutoscale,
              "'" + name +
                  "': expected waiting (vllm:num_requests_waiting per replica) | running "
                  "(vllm:num_requests_running) | kv (vllm:kv_cache_usage_perc, 0..1) | rate "
                  "(requests per second per replica)");
}

const char* scale_metric_name(ScaleMetric m) {
  for (const NamedMetric& n : kMetrics) {
    if (m == n.metric) return n.name;
  }
  return "?";
}

void check_autoscale(const AutoscaleOptions& o) {
  if (!o.enabled) return;
  if (o.min_replicas < 1) throw Error(field::kMinReplicas, "must be at least 1");
  if (o.max_replicas < o.min_replicas || o.max_replicas > 2048) {
    throw Error(field::kMaxReplicas, "must be in [{{autoscale.min_replicas}}, 2048]");
  }
  auto seconds = [](const char* flag, double v, double lo) {
    if (!(v >= lo && v <= 86400 * 365)) {
      throw Error(flag, lo > 0 ? "must be a number of seconds > 0, at most a year (31536000)"
                               : "must be seconds >= 0, at most a year (31536000)");
    }
  };
  if (o.metric == ScaleMetric::kSchedule) {
    if (o.schedule.empty()) throw Error(field::kAutoscale, "a schedule needs at least one window");
    for (size_t i = 0; i < o.schedule.size(); ++i) {
      if (o.schedule[i].second < 1 || (i > 0 && !(o.schedule[i].first > o.schedule[i - 1].first))) {
        throw Error(field::kAutoscale,
                    "a schedule's windows need increasing starts and >= 1 replica");
      }
    }
  } else {
    const bool kv = o.metric == ScaleMetric::kKvUsage;
    if (!(o.target > 0 && o.target <= (kv ? 1.0 : 1e9))) {
      throw Error(field::kAutoscaleTarget,
                  kv ? "must be a KV usage in (0, 1]" : "must be a number > 0 per replica");
    }
    seconds(field::kAutoscalePeriodS, o.period_s, 1e-3);
    seconds(field::kScaleUpWindowS, o.up_window_s, 0);
    seconds(field::kScaleDownWindowS, o.down_window_s, 0);
    if (!(o.tolerance >= 0 && o.tolerance < 1)) {
      throw Error(field::kAutoscaleTolerance, "must be in [0, 1)");
    }
  }
  if (!std::isnan(o.provision_s)) seconds(field::kProvisionS, o.provision_s, 0);
  seconds(field::kEngineStartupS, o.startup_s, 0);
  if (!(o.load_gb_per_s > 0 && o.load_gb_per_s <= 1e4)) {
    throw Error(field::kModelLoadGbPerS, "must be in (0, 10000] GB/s");
  }
}

int autoscale_slots(const AutoscaleOptions& o) {
  int most = o.max_replicas;
  if (o.metric == ScaleMetric::kSchedule) {
    most = 0;
    for (const auto& [t, n] : o.schedule)
      most = std::max(most, n);
    return 2 * most;
  }
  return 2 * most - o.min_replicas;
}

Autoscaler::Autoscaler(const AutoscaleOptions& o, double provision_s, Fleet& fleet, int initial)
    : o_(o), provision_s_(provision_s), fleet_(fleet) {
  state_.assign(fleet.size(), State::kStopped);
  since_.assign(fleet.size(), 0);
  ready_at_.assign(fleet.size(), 0);
  if (o_.metric == ScaleMetric::kSchedule) {
    // Window j (starting T_j) needs N_j from T_j - P (so its new replicas are ready at T_j) to
    // T_{j+1}: the count at any moment is the most any window covering it needs.
    const auto& s = o_.schedule;
    std::vector<double> points;
    for (size_t j = 0; j < s.size(); ++j) {
      points.push_back(s[j].first - provision_s_);
      points.push_back(s[j].first);
    }
    std::sort(points.begin(), points.end());
    for (double t : points) {
      int n = 0;
      for (size_t j = 0; j < s.size(); ++j) {
        const double end = j + 1 < s.size() ? s[j + 1].first : INFINITY;
        if (t >= s[j].first - provision_s_ && t < end) n = std::max(n, s[j].second);
      }
      if (n > 0 && (actions_.empty() || actions_.back().second != n)) actions_.emplace_back(t, n);
    }
    initial_ = s.front().second;  // start() takes the count at the run's start
  } else {
    initial_ = std::clamp(initial, o_.min_replicas, o_.max_replicas);
  }
  initial_ = std::min<int>(initial_, int(fleet.size()));
}

int Autoscaler::count(State s) const {
  return int(std::count(state_.begin(), state_.end(), s));
}

void Autoscaler::start(EventLoop& loop, double t0) {
  t0_ = t0;
  if (o_.metric == ScaleMetric::kSchedule) {
    // The actions at or before the start are the start itself.
    while (next_action_ + 1 < actions_.size() && actions_[next_action_ + 1].first <= t0)
      ++next_action_;
    initial_ = std::min<int>(actions_[next_action_].second, int(state_.size()));
    if (actions_[next_action_].first <= t0) ++next_action_;
  }
  for (size_t i = 0; i < state_.size(); ++i) {
    const bool on = int(i) < initial_;
    fleet_.set_routable(i, on);
    if (!on) continue;
    state_[i] = State::kReady;
    since_[i] = t0;
    ready_order_.push_back(i);
  }
  peak_ = initial_;
  note(t0, initial_, 0);
  if (o_.metric == ScaleMetric::kSchedule) {
    if (next_action_ < actions_.size()) {
      loop.schedule(std::max(t0, actions_[next_action_].first), EventLoop::kWake, this, kTick);
    }
    return;
  }
  loop.schedule(t0 + o_.period_s, EventLoop::kWake, this, kTick);
}

void Autoscaler::handle(EventLoop& loop, uint32_t tag) {
  const double now = loop.now();
  if (tag >= kReadyBase) {
    const size_t slot = tag - kReadyBase;
    if (state_[slot] != State::kStarting || now < ready_at_[slot]) return;  // cancelled
    state_[slot] = State::kReady;
    ready_order_.push_back(slot);
    fleet_.set_routable(slot, true);
    note(now, count(State::kReady) + count(State::kStarting), NAN);
    return;
  }
  if (fleet_.finished()) return;
  if (o_.metric == ScaleMetric::kSchedule) {
    apply(loop, actions_[next_action_].second, NAN);
    if (++next_action_ < actions_.size()) {
      loop.schedule(actions_[next_action_].first, EventLoop::kWake, this, kTick);
    }
    return;
  }
  const double sum = read_metric(now);
  apply(loop, recommend(now, sum), sum);
  loop.schedule(now + o_.period_s, EventLoop::kWake, this, kTick);
}

double Autoscaler::read_metric(double now) {
  (void)now;
  if (o_.metric == ScaleMetric::kRate) {
    const uint64_t sent = fleet_.sent();
    const double rate = double(sent - last_sent_) / o_.period_s;
    last_sent_ = sent;
    return rate;
  }
  double sum = 0;
  for (size_t i : ready_order_) {
    const ReplicaLoad l = fleet_.load(i);
    sum += o_.metric == ScaleMetric::kWaiting   ? double(l.waiting)
           : o_.metric == ScaleMetric::kRunning ? double(l.outstanding - l.waiting)
                                                : l.kv_usage;
  }
  return sum;
}

int Autoscaler::recommend(double now, double sum) {
  const int current = count(State::kReady) + count(State::kStarting);
  // The HPA's replica calculator: unready replicas count at 0 (they are in CURRENT, not SUM).
  const double ratio = sum / (double(current) * o_.target);
  const int raw = std::abs(ratio - 1) <= o_.tolerance
                      ? current
                      : int(std::min(1e6, std::ceil(sum / o_.target - 1e-9)));
  history_.emplace_back(now, raw);
  const double keep = std::max(o_.up_window_s, o_.down_window_s);
  while (!history_.empty() && history_.front().first < now - keep - 1e-9)
    history_.erase(history_.begin());
  int up = raw, down = raw;
  for (const auto& [t, r] : history_) {
    if (t >= now - o_.up_window_s - 1e-9) up = std::min(up, r);
    if (t >= now - o_.down_window_s - 1e-9) down = std::max(down, r);
  }
  int desired = current;
  if (up > current) {
    desired = std::min(up, current + std::max(4, current));  // HPA: 4 pods or 100% per period
  } else if (down < current) {
    desired = down;
  }
  return std::clamp(desired, o_.min_replicas, o_.max_replicas);
}

void Autoscaler::apply(EventLoop& loop, int desired, double metric) {
  const double now = loop.now();
  int current = count(State::kReady) + count(State::kStarting);
  const int before = current;
  for (size_t i = 0; i < state_.size() && current < desired; ++i) {
    if (state_[i] != State::kStopped) continue;
    state_[i] = State::kStarting;
    since_[i] = now;
    ready_at_[i] = now + provision_s_;
    fleet_.restart(i);
    loop.schedule(ready_at_[i], EventLoop::kWake, this, kReadyBase + uint32_t(i));
    ++current;
    ++ups_;
  }
  // Fewer: cancel the replicas still starting (the latest first), then drain the newest ready.
  for (size_t i = state_.size(); i-- > 0 && current > desired;) {
    if (state_[i] != State::kStarting) continue;
    stop(i, now);
    --current;
    ++downs_;
  }
  while (current > desired && ready_order_.size() > 1) {
    const size_t slot = ready_order_.back();
    ready_order_.pop_back();
    fleet_.set_routable(slot, false);
    state_[slot] = State::kDraining;
    --current;
    ++downs_;
    if (fleet_.load(slot).outstanding == 0) stop(slot, now);
  }
  peak_ = std::max(peak_, current + count(State::kDraining));
  if (current != before) note(now, desired, metric);
}

void Autoscaler::stop(size_t replica, double now) {
  state_[replica] = State::kStopped;
  billed_s_ += now - since_[replica];
}

void Autoscaler::on_idle(size_t replica, double now) {
  if (state_[replica] != State::kDraining) return;
  stop(replica, now);
  note(now, count(State::kReady) + count(State::kStarting), NAN);
}

void Autoscaler::note(double now, int desired, double metric) {
  ScaleEvent e;
  e.time_s = now;
  e.ready = count(State::kReady);
  e.starting = count(State::kStarting);
  e.draining = count(State::kDraining);
  e.desired = desired;
  e.metric = metric;
  timeline_.push_back(e);
}

AutoscaleSummary Autoscaler::summary(double end_s) const {
  AutoscaleSummary s;
  s.enabled = true;
  s.metric = scale_metric_name(o_.metric);
  s.target = o_.target;
  s.provision_s = provision_s_;
  s.min_replicas = o_.min_replicas;
  s.max_replicas = o_.max_replicas;
  s.peak_replicas = peak_;
  s.scale_ups = ups_;
  s.scale_downs = downs_;
  double billed = billed_s_;
  for (size_t i = 0; i < state_.size(); ++i) {
    if (state_[i] != State::kStopped) billed += std::max(0.0, end_s - since_[i]);
  }
  s.replica_hours = billed / 3600;
  s.timeline = timeline_;
  ScaleEvent last = timeline_.empty() ? ScaleEvent{} : timeline_.back();
  last.time_s = std::max(end_s, last.time_s);
  last.metric = NAN;
  s.timeline.push_back(last);
  return s;
}

}  // namespace servesim
