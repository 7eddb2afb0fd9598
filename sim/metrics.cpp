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

MetricsCollector::MetricsCollector(const Workload& w, bool keep_steps)
    : times_(w.size()), keep_steps_(keep_steps) {
  for (const RequestSpec& r : w)
    times_[r.id].arrival_s = r.arrival_s;
  first_arrival_s_ = w.empty() ? 0.0 : w.front().arrival_s;
  end_s_ = first_arrival_s_;
}

std::vector<RequestRecord> MetricsCollector::records(std::span<const SeqState> seqs) const {
  assert(seqs.size() == times_.size());
  std::vector<RequestRecord> out;
  out.reserve(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i)
    out.push_back(RequestRecord{seqs[i], times_[i]});
  return out;
}

void MetricsCollector::on_step(double t, const StepCost& cost, const Batch& batch,
                               int64_t kv_used_blocks) {
  ++steps_;
  busy_s_ += cost.seconds;
  flops_ += cost.flops;
  bytes_ += cost.bytes;
  kv_block_seconds_ += double(kv_used_blocks) * cost.seconds;
  kv_max_blocks_ = std::max(kv_max_blocks_, kv_used_blocks);
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
  if (keep_steps_) {
    step_records_.push_back({t, cost.seconds, batch.prefill_tokens(), batch.decode_tokens(),
                             int64_t(batch.size()), kv_used_blocks, cost.flops, cost.bytes});
  }
}

RunSummary MetricsCollector::summary(const std::vector<RequestRecord>& requests, double peak_flops,
                                     double peak_bytes_per_s, int64_t total_kv_blocks) const {
  RunSummary s;
  s.total = requests.size();
  std::vector<double> ttft, e2e, queue, tpot, otps, out_tokens;
  int64_t out_sum = 0, in_sum = 0;
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
    out_sum += r.output_tokens;
    in_sum += r.input_tokens;
    if (r.has_decode()) {
      tpot.push_back(r.tpot_s() * 1e3);
      otps.push_back(r.otps());
    }
  }
  s.ttft_ms = servesim::summarize(ttft);
  s.e2e_ms = servesim::summarize(e2e);
  s.queue_ms = servesim::summarize(queue);
  s.tpot_ms = servesim::summarize(tpot);
  s.otps = servesim::summarize(otps);
  s.itl_ms = scaled(servesim::summarize(itl_s_), 1e3);
  std::sort(out_tokens.begin(), out_tokens.end());
  const double ratio =
      cloudwatch_otps(percentile_sorted(out_tokens, 50), s.e2e_ms.p50, s.ttft_ms.p50);
  s.otps_p50_ratio = std::isnan(ratio) ? 0.0 : ratio;

  s.makespan_s = end_s_ - first_arrival_s_;
  s.busy_s = busy_s_;
  s.flops = flops_;
  s.bytes = bytes_;
  if (s.makespan_s > 0) {
    s.requests_per_s = double(s.completed) / s.makespan_s;
    s.output_tokens_per_s = double(out_sum) / s.makespan_s;
    s.total_tokens_per_s = double(in_sum + out_sum) / s.makespan_s;
    s.busy_fraction = busy_s_ / s.makespan_s;
    s.mfu = flops_ / (s.makespan_s * peak_flops);
    s.mbu = bytes_ / (s.makespan_s * peak_bytes_per_s);
  }
  if (busy_s_ > 0) s.kv_usage_mean = kv_block_seconds_ / busy_s_ / double(total_kv_blocks);
  s.kv_usage_max = double(kv_max_blocks_) / double(total_kv_blocks);
  for (const RequestRecord& r : requests)
    s.preemptions += uint64_t(r.preemptions);
  s.steps = steps_;
  s.prefill_only_steps = prefill_only_;
  s.decode_only_steps = decode_only_;
  s.mixed_steps = mixed_;
  s.prefill_tokens = prefill_tokens_;
  s.decode_tokens = decode_tokens_;
  return s;
}

}  // namespace servesim
