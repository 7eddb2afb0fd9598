#include "sim/metrics.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace servesim {

double cloudwatch_otps(double tokens_p50, double e2e_ms_p50, double ttft_ms_p50) {
  const double decode_ms = e2e_ms_p50 - ttft_ms_p50;
  if (!(decode_ms > 0) || !std::isfinite(tokens_p50)) return NAN;
  return tokens_p50 / decode_ms * 1e3;
}

MetricsCollector::MetricsCollector(const Workload& w, bool keep_steps, const MetricOptions& options)
    : times_(w.size()), tokens_(w.size()), keep_steps_(keep_steps), options_(options) {
  for (const RequestSpec& r : w)
    times_[r.id].arrival_s = r.arrival_s;
  first_arrival_s_ = w.empty() ? 0.0 : w.front().arrival_s;
  end_s_ = first_arrival_s_;
}

MetricsCollector::MetricsCollector(double first_arrival_s, size_t expected_requests)
    : first_arrival_s_(first_arrival_s), end_s_(first_arrival_s) {
  times_.reserve(expected_requests);
  tokens_.reserve(expected_requests);
}

std::vector<RequestRecord> MetricsCollector::records(std::span<const SeqState> seqs) const {
  assert(seqs.size() == times_.size());
  std::vector<RequestRecord> out;
  out.reserve(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i)
    out.push_back(record(uint32_t(i), seqs[i]));
  return out;
}

void MetricsCollector::on_offered(double t, size_t waiting, size_t in_system) {
  ++offered_;
  if (std::isnan(first_offered_s_)) first_offered_s_ = t;
  last_offered_s_ = t;
  if (offered_ == (times_.size() + 1) / 2) {
    waiting_at_median_ = int64_t(waiting);
    in_system_at_median_ = int64_t(in_system);
    median_offered_ = offered_;
  }
  if (offered_ == times_.size()) {
    waiting_at_last_ = int64_t(waiting);
    in_system_at_last_ = int64_t(in_system);
  }
}

void MetricsCollector::on_arrival(uint32_t id, double t, bool admitted) {
  if (id == times_.size()) {  // a replica's next request
    times_.emplace_back();
    tokens_.emplace_back();
  }
  times_[id].arrival_s = t;
  end_s_ = std::max(end_s_, t);
  admitted_ += admitted;
}

void MetricsCollector::on_step(double t, const StepCost& cost, const Batch& batch,
                               int64_t kv_used_blocks, size_t waiting, int64_t cached_tokens,
                               uint32_t replica) {
  ++steps_;
  waiting_.add(double(waiting), cost.seconds);
  const double kv =
      kv_scale_.empty() ? double(kv_used_blocks) : double(kv_used_blocks) * kv_scale_[replica];
  kv_blocks_.add(kv, cost.seconds);
  busy_s_ += cost.seconds;
  flops_ += cost.flops;
  bytes_ += cost.bytes;
  kv_block_seconds_ += kv * cost.seconds;
  kv_max_blocks_ = std::max(kv_max_blocks_, int64_t(std::llround(kv)));
  prefill_tokens_ += batch.prefill_tokens();
  decode_tokens_ += batch.decode_tokens();
  const bool has_prefill = batch.prefill_tokens() > 0, has_decode = batch.decode_tokens() > 0;
  if (has_prefill && has_decode) {
    ++mixed_;
  } else if (has_prefill) {
    ++prefill_only_;
  } else {
    ++decode_only_;
  }
  end_s_ = std::max(end_s_, t + cost.seconds);
  double excess_j = 0;
  if (power_known_) {
    excess_j = power_[replica].step_excess_j(cost);
    add_excess(t, cost.seconds, excess_j);
  }
  if (keep_steps_ && t <= options_.keep_steps_to_s &&
      t + cost.seconds >= options_.keep_steps_from_s) {
    step_records_.push_back({t, cost.seconds, batch.prefill_tokens(), batch.decode_tokens(),
                             int64_t(batch.size()), kv_used_blocks, cached_tokens, cost.flops,
                             cost.bytes, replica,
                             power_known_ ? power_[replica].step_w(cost, excess_j) : NAN});
  }
}

void MetricsCollector::summarize_requests(const std::vector<RequestRecord>& requests,
                                          RunSummary& s) const {
  std::vector<double> ttft, e2e, queue, tpot, otps, out_tokens;
  uint64_t good = 0;
  const GoodputSlo& slo = options_.goodput;
  for (const RequestRecord& r : requests) {
    if (r.status == SeqStatus::kRejected) {
      ++s.rejected;
      ++s.rejected_by_reason[static_cast<int>(r.reject)];
      continue;
    }
    if (!r.finished()) continue;
    ++s.completed;
    ttft.push_back(r.ttft_s() * 1e3);
    e2e.push_back(r.e2e_s() * 1e3);
    queue.push_back(r.queue_s() * 1e3);
    out_tokens.push_back(r.output_tokens);
    s.output_tokens += r.output_tokens;
    s.input_tokens += r.input_tokens;
    if (r.has_decode()) {
      tpot.push_back(r.tpot_s() * 1e3);
      otps.push_back(r.otps());
    }
    // vLLM counts a request without a TPOT (one output token) as meeting the TPOT bound.
    good += r.ttft_s() * 1e3 <= slo.ttft_ms && r.e2e_s() * 1e3 <= slo.e2el_ms &&
            (!r.has_decode() || r.tpot_s() * 1e3 <= slo.tpot_ms);
  }
  const std::vector<double>& q = options_.percentiles;
  s.ttft_ms = servesim::summarize(ttft, q);
  s.e2e_ms = servesim::summarize(e2e, q);
  s.queue_ms = servesim::summarize(queue, q);
  s.tpot_ms = servesim::summarize(tpot, q);
  s.otps = servesim::summarize(otps, q);
  s.itl_ms = scaled(servesim::summarize(itl_s_, q), 1e3);
  std::sort(out_tokens.begin(), out_tokens.end());
  s.otps_p50_ratio =
      cloudwatch_otps(percentile_sorted(out_tokens, 50), s.e2e_ms.p50, s.ttft_ms.p50);
  for (const RequestRecord& r : requests)
    s.preemptions += uint64_t(r.preemptions);
  s.makespan_s = end_s_ - first_arrival_s_;
  if (slo.any() && s.makespan_s > 0) s.goodput_req_s = double(good) / s.makespan_s;
}

void MetricsCollector::summarize_use(double peak_flops, double peak_bytes_per_s,
                                     int64_t total_kv_blocks, RunSummary& s) const {
  s.busy_s = busy_s_;
  s.flops = flops_;
  s.bytes = bytes_;
  if (s.makespan_s > 0) {
    s.requests_per_s = double(s.completed) / s.makespan_s;
    s.output_tokens_per_s = double(s.output_tokens) / s.makespan_s;
    s.total_tokens_per_s = double(s.input_tokens + s.output_tokens) / s.makespan_s;
    s.step_time_fraction = busy_s_ / s.makespan_s;
    s.mfu = flops_ / (s.makespan_s * peak_flops);
    s.mbu = bytes_ / (s.makespan_s * peak_bytes_per_s);
  }
  const double blocks = double(total_kv_blocks);
  if (busy_s_ > 0) s.kv_usage_mean = kv_block_seconds_ / busy_s_ / blocks;
  s.kv_usage_max = double(kv_max_blocks_) / blocks;
  s.kv_usage_p50 = kv_blocks_.quantile(0.50) / blocks;
  s.kv_usage_p99 = kv_blocks_.quantile(0.99) / blocks;
  if (steps_ > 0) {
    s.queue_len.count = steps_;
    s.queue_len.mean = waiting_.mean();
    s.queue_len.p50 = waiting_.quantile(0.50);
    s.queue_len.p90 = waiting_.quantile(0.90);
    s.queue_len.p95 = waiting_.quantile(0.95);
    s.queue_len.p99 = waiting_.quantile(0.99);
    s.queue_len.max = waiting_.max();
  }
  s.steps = steps_;
  s.prefill_only_steps = prefill_only_;
  s.decode_only_steps = decode_only_;
  s.mixed_steps = mixed_;
  s.prefill_tokens = prefill_tokens_;
  s.decode_tokens = decode_tokens_;
}

double ArrivalCounts::noise_floor() const {
  return std::max(8.0, 4.0 * std::sqrt(double(std::max<int64_t>(in_system_at_median, 0))));
}

double ArrivalCounts::growth_threshold() const {
  return std::max(kOverloadDeficit * double(late_arrivals), noise_floor());
}

bool ArrivalCounts::resolves_deficit() const {
  return kOverloadDeficit * double(late_arrivals) >= noise_floor();
}

bool ArrivalCounts::in_system_overloaded() const {
  return growth() > growth_threshold() && (resolves_deficit() || growth() > 2 * noise_floor());
}

bool ArrivalCounts::waiting_overloaded() const {
  return double(waiting_at_last) > std::max(8.0, 0.01 * admitted) &&
         (double(waiting_at_last) >= 1.5 * double(waiting_at_median) || slow);
}

bool ArrivalCounts::overloaded() const {
  return span_s > 0 && (in_system_overloaded() || waiting_overloaded());
}

bool ArrivalCounts::judgeable() const {
  return !(span_s > 0) || waiting_overloaded() || resolves_deficit() ||
         growth() > 3 * noise_floor();
}

ArrivalCounts MetricsCollector::counts() const {
  ArrivalCounts c;
  c.span_s = offered_ > 0 ? last_offered_s_ - first_offered_s_ : 0;
  c.late_arrivals = int64_t(offered_ - median_offered_);
  c.in_system_at_median = in_system_at_median_;
  c.in_system_at_last = in_system_at_last_;
  c.waiting_at_median = waiting_at_median_;
  c.waiting_at_last = waiting_at_last_;
  c.admitted = double(admitted_);
  return c;
}

Overload MetricsCollector::judge_overload(const RunSummary& s) const {
  Overload o;
  o.waiting_at_median_arrival = waiting_at_median_;
  o.waiting_at_last_arrival = waiting_at_last_;
  o.in_system_at_median_arrival = in_system_at_median_;
  o.in_system_at_last_arrival = in_system_at_last_;
  o.drain_s = std::max(0.0, end_s_ - last_offered_s_);
  ArrivalCounts c = counts();
  if (c.span_s > 0) o.arrival_rate_req_s = double(offered_ - 1) / c.span_s;
  if (s.makespan_s > 0) o.completion_rate_req_s = double(s.completed) / s.makespan_s;
  c.slow = o.completion_rate_req_s < 0.9 * o.arrival_rate_req_s;
  o.late_arrivals = c.late_arrivals;
  o.late_departures = c.late_arrivals - (in_system_at_last_ - in_system_at_median_);
  o.growth_threshold = c.growth_threshold();
  o.overloaded = c.overloaded();
  o.judgeable = c.judgeable();
  return o;
}

namespace {

// E's mean power over MAKESPAN_S and its energy per output token and per request of S.
void per_output(EnergySummary& e, const RunSummary& s, double makespan_s) {
  e.mean_power_w = e.energy_j / makespan_s;
  if (s.output_tokens > 0) e.j_per_output_token = e.energy_j / double(s.output_tokens);
  if (s.completed > 0) e.j_per_request = e.energy_j / double(s.completed);
}
}  // namespace

void MetricsCollector::set_power(std::vector<PowerModel> by_replica) {
  power_ = std::move(by_replica);
  power_known_ = !power_.empty() && std::all_of(power_.begin(), power_.end(),
                                                [](const PowerModel& p) { return p.known(); });
}

void MetricsCollector::add_excess(double t, double seconds, double excess_j) {
  excess_j_ += excess_j;
  if (!(seconds > 0) || !(excess_j > 0)) return;
  const double rate_w = excess_j / seconds;
  const double from = std::max(0.0, t - first_arrival_s_), to = t + seconds - first_arrival_s_;
  for (auto k = int64_t(std::floor(from / kPowerWindowS)); double(k) * kPowerWindowS < to; ++k) {
    const double joules = rate_w * (std::min(to, double(k + 1) * kPowerWindowS) -
                                    std::max(from, double(k) * kPowerWindowS));
    // The window's entry: at the back, or a few before it (pipeline stages and fleet replicas
    // report steps a little out of order).
    auto it = excess_windows_.end();
    while (it != excess_windows_.begin() && std::prev(it)->first > k)
      --it;
    if (it != excess_windows_.begin() && std::prev(it)->first == k) {
      std::prev(it)->second += joules;
    } else {
      excess_windows_.insert(it, {k, joules});
    }
  }
}

void MetricsCollector::summarize_energy(RunSummary& s) const {
  if (!power_known_) return;
  EnergySummary& e = s.energy;
  e.idle_power_w = 0;
  for (const PowerModel& p : power_)
    e.idle_power_w += p.idle_w();
  // A replica that ran nothing has its idle only (idle_until charges it the fleet's span).
  e.energy_j = e.idle_power_w * s.makespan_s + excess_j_;
  if (!(s.makespan_s > 0)) return;
  per_output(e, s, s.makespan_s);
  // Windows of kPowerWindowS from the first arrival, the last one stretched to the run's end (a
  // run shorter than a window: its mean).
  const auto windows = std::max<int64_t>(1, int64_t(s.makespan_s / kPowerWindowS));
  double peak_excess_w = 0, last_j = 0;
  for (const auto& [k, joules] : excess_windows_) {
    if (k + 1 >= windows) {
      last_j += joules;
    } else {
      peak_excess_w = std::max(peak_excess_w, joules / kPowerWindowS);
    }
  }
  const double last_s = s.makespan_s - double(windows - 1) * kPowerWindowS;
  e.peak_power_w = e.idle_power_w + std::max(peak_excess_w, last_j / last_s);
}

void idle_until(RunSummary& s, double makespan_s) {
  EnergySummary& e = s.energy;
  if (!std::isfinite(e.energy_j) || !(makespan_s > s.makespan_s)) return;
  e.energy_j += e.idle_power_w * (makespan_s - s.makespan_s);
  per_output(e, s, makespan_s);
  if (std::isnan(e.peak_power_w)) e.peak_power_w = e.idle_power_w;  // it ran nothing
}

void scale_idle(RunSummary& s, double mean_share, double peak_share) {
  EnergySummary& e = s.energy;
  e.energy_j -= e.idle_power_w * (1 - mean_share) * s.makespan_s;
  e.peak_power_w -= e.idle_power_w * (1 - peak_share);
  e.idle_power_w *= mean_share;
  per_output(e, s, s.makespan_s);
}

RunSummary MetricsCollector::summary(const std::vector<RequestRecord>& requests, double peak_flops,
                                     double peak_bytes_per_s, int64_t total_kv_blocks) const {
  RunSummary s;
  s.total = requests.size();
  summarize_requests(requests, s);
  summarize_use(peak_flops, peak_bytes_per_s, total_kv_blocks, s);
  summarize_energy(s);
  s.overload = judge_overload(s);
  return s;
}

}  // namespace servesim
