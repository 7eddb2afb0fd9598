// Metrics: what a run measured, with vLLM benchmark_serving.py's definitions and the
// Bedrock/CloudWatch decomposition of latency.
//  - TTFT = first token - arrival; E2E (InvocationLatency) = last token - arrival;
//    queueing delay = first scheduled - arrival (vLLM's time_in_queue);
//  - ITL: every gap between consecutive tokens of a request, pooled over requests;
//  - TPOT = (E2E - TTFT) / (output - 1), for requests with more than one output token;
//  - OTPS = output / (E2E - TTFT) in tokens per second, so that for every request
//    E2E_ms = TTFT_ms + output / OTPS x 1000 (Bedrock's identity). A one-token request has no
//    decode time: its OTPS is undefined (null in JSON, empty in CSV, left out of OTPS statistics)
//    and E2E = TTFT;
//  - run level: the Stats of each, OTPS's p50 ratio as CloudWatch computes it
//    (p50 OutputTokenCount / (p50 InvocationLatency - p50 TTFT) x 1000), throughput, GPU busy
//    fraction, MFU and MBU (achieved FLOP/s and HBM bytes/s over the TP group's peak, over the
//    makespan), KV usage.
// Promises: memory is O(requests): inter-token gaps go to a LogHistogram, never a per-token list.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "models/cost_model.hpp"
#include "scheduler/batch.hpp"
#include "scheduler/sequence.hpp"
#include "traces/request.hpp"
#include "util/histogram.hpp"
#include "util/stats.hpp"

namespace servesim {

// When things happened to one request, in simulated seconds (-1: not yet).
struct RequestTimes {
  double arrival_s = 0;
  double first_scheduled_s = -1;
  double first_token_s = -1;
  double last_token_s = -1;
  double max_itl_s = 0;
};

// One request at the end of a run: its scheduler state (lengths, status, preemptions; the one
// owner of those) and its times.
struct RequestRecord : SeqState, RequestTimes {
  bool finished() const { return status == SeqStatus::kFinished; }
  double ttft_s() const { return first_token_s - arrival_s; }
  double e2e_s() const { return last_token_s - arrival_s; }
  double queue_s() const { return first_scheduled_s - arrival_s; }
  bool has_decode() const { return output_tokens > 1; }
  double tpot_s() const { return (last_token_s - first_token_s) / (output_tokens - 1); }
  double otps() const { return output_tokens / (last_token_s - first_token_s); }
};

// One step as the host ran it (kept when asked for: results files' per-step table).
struct StepRecord {
  double start_s = 0, duration_s = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0, batch_size = 0, kv_blocks_used = 0;
  double flops = 0, bytes = 0;
};

struct RunSummary {
  uint64_t total = 0, completed = 0, rejected = 0;
  uint64_t rejected_by_reason[kNumRejectReasons] = {};  // indexed by RejectReason
  Stats ttft_ms, itl_ms, tpot_ms, e2e_ms, queue_ms, otps;
  double otps_p50_ratio = 0;  // CloudWatch: p50(out) / (p50(E2E) - p50(TTFT)) x 1000
  double requests_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0;
  double busy_fraction = 0, mfu = 0, mbu = 0, kv_usage_mean = 0, kv_usage_max = 0;
  uint64_t preemptions = 0;
  uint64_t steps = 0, prefill_only_steps = 0, decode_only_steps = 0, mixed_steps = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0;  // computed by steps (recomputation included)
  double makespan_s = 0, busy_s = 0, flops = 0, bytes = 0;
};

// CloudWatch's OTPS from p50s: tokens / (latency - TTFT) x 1000; NaN when undefined.
double cloudwatch_otps(double output_tokens_p50, double e2e_ms_p50, double ttft_ms_p50);

// Collects a run's measurements as the host reports them. Per request it keeps times only; the
// requests' lengths and status are the scheduler's, joined in at the end (records()).
class MetricsCollector {
 public:
  // KEEP_STEPS: record every step (memory grows with steps; off for sweeps).
  explicit MetricsCollector(const Workload& w, bool keep_steps = false);
  MetricsCollector(const MetricsCollector&) = delete;
  MetricsCollector& operator=(const MetricsCollector&) = delete;

  void on_reject(double t) { end_s_ = std::max(end_s_, t); }
  // REQUIRES: ID was admitted from `waiting` in the step starting at T.
  void on_scheduled(uint32_t id, double t) {
    double& first = times_[id].first_scheduled_s;
    if (first < 0) first = t;
  }
  // REQUIRES: FIRST exactly for the request's first token.
  void on_token(uint32_t id, double t, bool first) {
    RequestTimes& r = times_[id];
    if (first) {
      r.first_token_s = t;
    } else {
      const double gap = t - r.last_token_s;
      itl_s_.add(gap);
      if (gap > r.max_itl_s) r.max_itl_s = gap;
    }
    r.last_token_s = t;
  }
  void on_step(double t, const StepCost& cost, const Batch& batch, int64_t kv_used_blocks);

  // The run's requests: SEQS (the scheduler's states, by id) with their times.
  // REQUIRES: SEQS has one state per request of the workload.
  std::vector<RequestRecord> records(std::span<const SeqState> seqs) const;

  // Summarises the finished run of REQUESTS (records()) on a replica with TP_PEAK_FLOPS and
  // TP_PEAK_BYTES_PER_S (the whole TP group) and TOTAL_KV_BLOCKS.
  RunSummary summary(const std::vector<RequestRecord>& requests, double peak_flops,
                     double peak_bytes_per_s, int64_t total_kv_blocks) const;

  std::vector<StepRecord> take_steps() { return std::move(step_records_); }
  const LogHistogram& itl_s() const { return itl_s_; }

 private:
  std::vector<RequestTimes> times_;
  std::vector<StepRecord> step_records_;
  bool keep_steps_ = false;
  LogHistogram itl_s_;
  double first_arrival_s_ = 0;
  double end_s_ = 0;
  double busy_s_ = 0, flops_ = 0, bytes_ = 0, kv_block_seconds_ = 0;
  int64_t kv_max_blocks_ = 0;
  uint64_t steps_ = 0, prefill_only_ = 0, decode_only_ = 0, mixed_ = 0;
  int64_t prefill_tokens_ = 0, decode_tokens_ = 0;
};

}  // namespace servesim
