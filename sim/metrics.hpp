// Metrics: what a run measured, with vLLM benchmark_serving.py's definitions and the
// Bedrock/CloudWatch decomposition of latency.
//  - TTFT = first token - arrival; E2E (InvocationLatency) = last token - arrival;
//    queueing delay = first scheduled - arrival (vLLM's time_in_queue);
//  - ITL: every gap between consecutive tokens of a request, pooled over requests; tokens that
//    arrive together (speculative decoding's accepted drafts) are one chunk, one gap, as vLLM
//    bench measures ITL per streamed chunk;
//  - TPOT = (E2E - TTFT) / (output - 1), for requests with more than one output token;
//  - OTPS = output / (E2E - TTFT) in tokens per second, so that for every request
//    E2E_ms = TTFT_ms + output / OTPS x 1000 (Bedrock's identity). A one-token request has no
//    decode time: its OTPS is undefined (null in JSON, empty in CSV, left out of OTPS statistics)
//    and E2E = TTFT;
//  - run level: the Stats of each (null when no request defines it), OTPS's p50 ratio as
//    CloudWatch computes it (p50 OutputTokenCount / (p50 InvocationLatency - p50 TTFT) x 1000),
//    throughput, vLLM's goodput (requests meeting every --goodput SLO per second), the share of
//    the run with a step in flight (not saturation: a single decode keeps a step in flight),
//    MFU and MBU (achieved FLOP/s and HBM bytes/s over the TP group's peak, over the makespan),
//    and time-weighted percentiles of KV usage and of the waiting queue;
//  - overload: whether the replica kept up with its arrivals (see Overload).
// Promises: memory is O(requests): inter-token gaps go to a LogHistogram and queue lengths and KV
// usage to TimeHistograms, never a per-token or per-step list (unless steps are kept).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "models/cost_model.hpp"
#include "models/power.hpp"
#include "scheduler/batch.hpp"
#include "scheduler/kv_offload.hpp"
#include "scheduler/sequence.hpp"
#include "scheduler/spec_decode.hpp"
#include "traces/request.hpp"
#include "util/histogram.hpp"
#include "util/stats.hpp"

namespace servesim {

// When things happened to one request, in simulated seconds (-1: not yet).
struct RequestTimes {
  double arrival_s = 0;
  // When the scheduler first took it (vLLM's scheduled timestamp): under async scheduling, a step
  // before that step starts.
  double first_scheduled_s = -1;
  double first_token_s = -1;
  double last_token_s = -1;
  double max_itl_s = 0;
  // KV offload: the seconds its KV took to load from the CPU tier (each load, from the start of
  // the step that carried it to done), and the tokens loaded.
  double kv_load_s = 0;
  int32_t kv_loaded_tokens = 0;
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
  int64_t cached_tokens = 0;  // prompt tokens this step's new requests found in the prefix cache
  double flops = 0, bytes = 0;
  uint32_t replica = 0;  // in a fleet, the replica that ran it
  double power_w = NAN;  // what the replica's GPUs drew through it (NaN: power unknown)
};

// The prefix cache as vLLM reports it (vllm/v1/metrics/stats.py PrefixCacheStats): tokens queried
// and hit at each look-up of a waiting request, apart for requests preempted before; evictions
// of cached blocks. All zero when the cache is off.
struct PrefixCacheSummary {
  bool enabled = false;
  int64_t queries = 0, hits = 0, preempted_queries = 0, preempted_hits = 0, evictions = 0;
  int64_t cached_prompt_tokens = 0;  // sum over requests of their hit at first scheduling
  // vLLM's prefix cache hit rate: hits / queries (requests not preempted); NaN when none.
  double hit_rate() const { return queries > 0 ? double(hits) / double(queries) : NAN; }
};

// Speculative decoding as vLLM's SpecDecodingLogging reports it (vllm/v1/spec_decode/
// metrics.py): verifications (num_drafts), drafts verified and accepted, accepted per position.
// Disabled without a drafter.
struct SpecDecodeSummary {
  bool enabled = false;
  SpecMethod method = SpecMethod::kNone;
  int num_speculative_tokens = 0;
  SpecDecodeStats counts;
  // "Mean acceptance length": 1 + accepted / verifications (the 1 is the sampled token); NaN
  // when nothing was verified.
  double mean_acceptance_length() const {
    return counts.num_drafts > 0
               ? 1.0 + double(counts.num_accepted_tokens) / double(counts.num_drafts)
               : NAN;
  }
  // "Avg Draft acceptance rate": accepted / drafted.
  double acceptance_rate() const {
    return counts.num_draft_tokens > 0
               ? double(counts.num_accepted_tokens) / double(counts.num_draft_tokens)
               : NAN;
  }
  // "Per-position acceptance rate" of position I (0-based): accepted there / verifications.
  double position_rate(int i) const {
    return counts.num_drafts > 0
               ? double(counts.accepted_per_pos[size_t(i)]) / double(counts.num_drafts)
               : NAN;
  }
};

// KV offload to the CPU tier (scheduler/kv_offload.hpp) as vLLM counts it: tokens looked up in the
// tier after the GPU's prefix cache missed them and found there (connector_prefix_cache_stats,
// "External prefix cache hit rate"), loads and stores with their bytes per GPU, and the tier's
// evictions; each load's time (from the start of the step that carried it to done) over the
// requests that loaded. Disabled without a tier.
struct KvOffloadSummary {
  bool enabled = false;
  OffloadBackend backend = OffloadBackend::kNone;
  int64_t cpu_blocks = 0, block_tokens = 0;
  double cpu_bytes = 0;  // the tier, all GPUs of a replica
  KvOffloadConnector::Stats counts;
  int64_t evictions = 0;
  double link_busy_s = 0;  // the host links' copy time (both directions)
  Stats load_ms;           // per request that loaded, its loads' time summed
  // The CPU tier's hit rate: tokens found / looked up (requests not preempted); NaN when none.
  double hit_rate() const {
    return counts.queries > 0 ? double(counts.hits) / double(counts.queries) : NAN;
  }
};

// LoRA adapters (vLLM --enable-lora): the requests that asked for one and how many distinct ones,
// the waiting requests passed over because their adapter would have exceeded max_loras in a step
// (counted at each pass), the adapters read from disk and copied into GPU slots with the time the
// steps waited for them, and the adapters' kernels' time. Disabled without --enable-lora.
struct LoraSummary {
  bool enabled = false;
  int max_loras = 0, max_cpu_loras = 0, rank = 0;
  int64_t requests = 0, adapters = 0;
  int64_t skips = 0, disk_loads = 0, activations = 0;
  double load_s = 0, kernel_s = 0;
};

// Whether a replica kept up with its arrivals: one definition, used by run's warning, the
// results' flags, capacity's probes, check's `overloaded` line and validate's mark. Requests in
// the system (offered and neither finished nor rejected: waiting at the client or the replica,
// and running) stay near a level when the server keeps up, and grow for as long as requests
// arrive when it does not. vLLM V0 overloads in its waiting queue; V1 admits up to max_num_seqs
// (1,024 on an H100) while KV lasts, so it overloads first in `running`, with slowing steps and an
// empty waiting queue. Judged at the last arrival from what happened by then, on two legs:
//  - in the system: over the later half of the arrivals (from the median arrival to the last),
//    requests left (completed or rejected) at under 95% of the rate they arrived, i.e. the
//    requests in the system grew by more than kOverloadDeficit x the arrivals of that half, and
//    by more than the noise of a steady system, max(8, 4 x sqrt(N)) with N the requests in the
//    system at the median arrival (a steady M/G/inf-like system's count is about Poisson: the
//    change between two instants far apart has a standard deviation near sqrt(2N); near
//    saturation it is larger, hence the next point).
//  - waiting (as servesim judged V0's queue before): more than max(8, 1% of the admitted
//    requests) waiting at the last arrival, and at least 1.5 times as many as at the median
//    arrival or completions over the makespan under 90% of the arrival rate.
// The first leg resolves a 5% shortfall only when kOverloadDeficit x the later half's arrivals
// is at least the noise floor. In a run where it does not, a growth past the threshold and past
// 2 x the noise floor still counts (overloaded, likely), and the verdict is firm (judgeable)
// only past 3 x the noise floor or on the waiting leg: near saturation the count wanders two or
// three times more than a Poisson count would. Capacity's probes whose verdict is not firm are
// run longer. A workload that arrives all at once (rate inf) has no arrival process to keep up
// with: never overloaded.
inline constexpr double kOverloadDeficit = 0.05;
struct Overload {
  bool overloaded = false;
  // The verdict is firm: the run is long enough to show a kOverloadDeficit shortfall, or the
  // overload is unmistakable (ArrivalCounts::judgeable).
  bool judgeable = true;
  double arrival_rate_req_s = NAN;     // offered requests per second, first to last arrival
  double completion_rate_req_s = NAN;  // completed requests per second over the makespan
  int64_t waiting_at_median_arrival = 0, waiting_at_last_arrival = 0;
  // Requests in the system at the median and the last arrival; the arrivals after the median
  // one, and the requests that left (completed or rejected) over the same span.
  int64_t in_system_at_median_arrival = 0, in_system_at_last_arrival = 0;
  int64_t late_arrivals = 0, late_departures = 0;
  double growth_threshold = 0;  // the growth of in_system the first leg needed
  double drain_s = 0;           // from the last arrival to the end of the run
  // SimulateOptions::stop_when_overloaded: the run ended at its last arrival, judged overloaded,
  // with this many requests neither finished nor rejected (their tails not simulated).
  bool stopped_at_last_arrival = false;
  uint64_t unfinished = 0;
  // Over the later half of the arrivals: departures / arrivals (1 when none arrived).
  double late_completion_ratio() const {
    return late_arrivals > 0 ? double(late_departures) / double(late_arrivals) : 1.0;
  }
};

// What a run's arrivals saw, from which Overload's rule judges it (the collector counts them as
// requests are offered; analysis/validate.cpp counts a stage's from its request records).
struct ArrivalCounts {
  double span_s = 0;          // first to last arrival
  int64_t late_arrivals = 0;  // arrivals after the median one, the last included
  int64_t in_system_at_median = 0, in_system_at_last = 0;
  int64_t waiting_at_median = 0, waiting_at_last = 0;
  double admitted = 0;  // requests admitted (the waiting leg's 1% threshold)
  bool slow = false;    // completions over the makespan under 90% of the arrival rate

  // The in-system leg: the noise of a steady system, max(8, 4 sqrt(N at the median arrival)),
  // and the growth it needs, max(noise, kOverloadDeficit x late arrivals).
  double noise_floor() const;
  double growth_threshold() const;
  double growth() const { return double(in_system_at_last - in_system_at_median); }
  // The late arrivals can show a kOverloadDeficit shortfall over the noise.
  bool resolves_deficit() const;
  // Past the threshold in a run that resolves it, or past 2 x the noise floor in any run.
  bool in_system_overloaded() const;
  // The waiting leg: more than max(8, 1% of admitted) waiting at the last arrival, 1.5 times as
  // many as at the median or slow.
  bool waiting_overloaded() const;
  // Overload's verdict, and whether it is firm: the run resolves a kOverloadDeficit shortfall,
  // the waiting leg fired or the growth is past 3 x the noise floor.
  bool overloaded() const;
  bool judgeable() const;
};

// vLLM benchmark_serving.py --goodput: a request is good when it completed within every SLO
// given (TTFT, TPOT and end-to-end latency, in ms; infinity = no bound on that term).
struct GoodputSlo {
  double ttft_ms = INFINITY, tpot_ms = INFINITY, e2el_ms = INFINITY;
  bool any() const {
    return std::isfinite(ttft_ms) || std::isfinite(tpot_ms) || std::isfinite(e2el_ms);
  }
};

// What a run reports beyond the fixed statistics.
struct MetricOptions {
  std::vector<double> percentiles;  // vLLM --metric-percentiles, in [0, 100]
  GoodputSlo goodput;
  // With steps kept, only those overlapping [from, to] seconds (a timeline's window: its memory
  // is the window's, not the run's).
  double keep_steps_from_s = -INFINITY, keep_steps_to_s = INFINITY;
};

// A run's GPU energy (models/power.hpp): every GPU of the replica or fleet, from the first
// arrival to the last token, idle time included. NaN where some GPU's power is unknown (a GPU
// file without tdp_w) or the run did nothing.
struct EnergySummary {
  double energy_j = NAN;
  double idle_power_w = NAN;  // all the GPUs drawing idle
  double mean_power_w = NAN;  // energy over the makespan
  // The highest mean power over a window of the run: windows of kPowerWindowS from the first
  // arrival, the last part-window joined to the one before it (a sustained draw, not a step's;
  // a run shorter than a window: its mean).
  double peak_power_w = NAN;
  double j_per_output_token = NAN, j_per_request = NAN;  // of the completed requests
};
inline constexpr double kPowerWindowS = 1.0;

struct RunSummary {
  uint64_t total = 0, completed = 0, rejected = 0;
  uint64_t rejected_by_reason[kNumRejectReasons] = {};  // indexed by RejectReason
  int64_t input_tokens = 0, output_tokens = 0;          // of the completed requests
  Stats ttft_ms, itl_ms, tpot_ms, e2e_ms, queue_ms, otps;
  double otps_p50_ratio = NAN;  // CloudWatch: p50(out) / (p50(E2E) - p50(TTFT)) x 1000
  double requests_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0;
  double goodput_req_s = NAN;  // NaN without a --goodput SLO
  double step_time_fraction = 0, mfu = 0, mbu = 0, kv_usage_mean = 0, kv_usage_max = 0;
  double kv_usage_p50 = NAN, kv_usage_p99 = NAN;  // time-weighted over the steps
  Stats queue_len;  // requests waiting to start, time-weighted over the steps (count = steps)
  Overload overload;
  uint64_t preemptions = 0;
  PrefixCacheSummary prefix_cache;
  SpecDecodeSummary spec_decode;
  KvOffloadSummary kv_offload;
  LoraSummary lora;
  uint64_t steps = 0, prefill_only_steps = 0, decode_only_steps = 0, mixed_steps = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0;  // computed by steps (recomputation included)
  double makespan_s = 0, busy_s = 0, flops = 0, bytes = 0;
  EnergySummary energy;

  double rejected_share() const { return total ? double(rejected) / double(total) : 0.0; }
};

// S is of a run that SimulateOptions::stop_when_overloaded ended at its last arrival.
inline void mark_stopped_at_last_arrival(RunSummary& s) {
  s.overload.stopped_at_last_arrival = true;
  s.overload.unfinished = s.total - s.completed - s.rejected;
}

// S's energy (a fleet replica's) with its GPUs drawing idle until the fleet's run ends at
// MAKESPAN_S (>= S's own); its mean power and per-token figures over that span.
void idle_until(RunSummary& s, double makespan_s);

// S's energy with idle drawn by a share of its GPUs: MEAN_SHARE of them over the run and
// PEAK_SHARE through the peak window (an autoscaled fleet's slots that exist).
void scale_idle(RunSummary& s, double mean_share, double peak_share);

// CloudWatch's OTPS from p50s: tokens / (latency - TTFT) x 1000; NaN when undefined.
double cloudwatch_otps(double output_tokens_p50, double e2e_ms_p50, double ttft_ms_p50);

// Collects a run's measurements as the host reports them. Per request it keeps times only; the
// requests' lengths and status are the scheduler's, joined in at the end (records()).
class MetricsCollector {
 public:
  // KEEP_STEPS: record every step (memory grows with steps; off for sweeps).
  explicit MetricsCollector(const Workload& w, bool keep_steps = false,
                            const MetricOptions& options = {});
  // A fleet replica's collector: its requests are numbered as they reach it (on_arrival with the
  // next id grows it, once per request) and its run starts at FIRST_ARRIVAL_S.
  MetricsCollector(double first_arrival_s, size_t expected_requests);
  MetricsCollector(const MetricsCollector&) = delete;
  MetricsCollector& operator=(const MetricsCollector&) = delete;

  // A request of the workload is offered at T (its time in the workload); WAITING requests now
  // wait to start, at the replica or held by a closed-loop client, and IN_SYSTEM have been
  // offered and have neither finished nor been rejected (this one included).
  void on_offered(double t, size_t waiting, size_t in_system);
  // Request ID reached the replica at T, its arrival time from now on (a closed-loop client sends
  // it when a slot frees, after its offered time); ADMITTED unless rejected.
  void on_arrival(uint32_t id, double t, bool admitted);
  // REQUIRES: ID was admitted from `waiting` in the step starting at T.
  void on_scheduled(uint32_t id, double t) {
    double& first = times_[id].first_scheduled_s;
    if (first < 0) first = t;
  }
  // REQUIRES: FIRST exactly for the request's first token. Returns the inter-token gap (0 for a
  // first token).
  double on_token(uint32_t id, double t, bool first) {
    TokenTimes& r = tokens_[id];
    double gap = 0;
    if (first) {
      times_[id].first_token_s = t;
    } else {
      gap = t - r.last_token_s;
      itl_s_.add(gap);
      if (gap > r.max_itl_s) r.max_itl_s = gap;
    }
    r.last_token_s = t;
    return gap;
  }
  // A fleet's collector, told of a token of a request whose replica's collector keeps its
  // times: only its inter-token gap GAP (0 for a first token: none). The fleet's records take
  // the token times from the replica's collector (with_token_times); the fleet's ITL histogram
  // adds the gaps in the same order as if told on_token.
  void on_gap(double gap_s, bool first) {
    if (!first) itl_s_.add(gap_s);
  }
  // REC (this collector's record of a request told only on_gap) with the token times of OWN
  // (the record of the collector that was told on_token).
  static void with_token_times(RequestRecord& rec, const RequestRecord& own) {
    rec.first_token_s = own.first_token_s;
    rec.last_token_s = own.last_token_s;
    rec.max_itl_s = own.max_itl_s;
  }
  // Request ID's KV, TOKENS tokens of it, took SECONDS to load from the CPU tier.
  void on_kv_load(uint32_t id, double seconds, int32_t tokens) {
    OnceTimes& o = times_[id];
    o.kv_load_s += seconds;
    o.kv_loaded_tokens += tokens;
  }
  // A fleet of replicas with KV caches of different sizes (a mixed fleet): each replica's used
  // blocks count as SCALE[replica] blocks of the fleet's reference replica, so that the KV usage
  // mean, percentiles and max (over the reference's blocks) are of each replica's own fraction,
  // time-weighted over every replica's steps. Step records keep the replica's own blocks.
  void set_kv_scale(std::vector<double> scale) { kv_scale_ = std::move(scale); }
  // What each replica's GPUs draw (by replica index; one for a replica's own collector): the
  // summary's energy. Unset, or with any model unknown, the energy is NaN.
  void set_power(std::vector<PowerModel> by_replica);
  // A step of BATCH starts at T while KV_USED_BLOCKS are in use and WAITING requests wait.
  void on_step(double t, const StepCost& cost, const Batch& batch, int64_t kv_used_blocks,
               size_t waiting, int64_t cached_tokens = 0, uint32_t replica = 0);

  // The run's requests: SEQS (the scheduler's states, by id) with their times.
  // REQUIRES: SEQS has one state per request of the workload.
  std::vector<RequestRecord> records(std::span<const SeqState> seqs) const;
  // One request's record: its scheduler state SEQ with its times.
  RequestRecord record(uint32_t id, const SeqState& seq) const {
    const OnceTimes& o = times_[id];
    const TokenTimes& k = tokens_[id];
    return {seq, RequestTimes{o.arrival_s, o.first_scheduled_s, o.first_token_s, k.last_token_s,
                              k.max_itl_s, o.kv_load_s, o.kv_loaded_tokens}};
  }

  // Summarises the finished run of REQUESTS (records()) on a replica with TP_PEAK_FLOPS and
  // TP_PEAK_BYTES_PER_S (the whole TP group) and TOTAL_KV_BLOCKS.
  RunSummary summary(const std::vector<RequestRecord>& requests, double peak_flops,
                     double peak_bytes_per_s, int64_t total_kv_blocks) const;

  // As the last of TOTAL requests is offered: whether the run will be judged overloaded whatever
  // happens next (the in-system leg, or the waiting leg's backlog and growth with the threshold
  // of TOTAL admitted requests, the most there can be).
  bool overload_certain(size_t total) const {
    ArrivalCounts c = counts();
    c.admitted = double(total);
    return c.overloaded();
  }

  std::vector<StepRecord> take_steps() { return std::move(step_records_); }
  const LogHistogram& itl_s() const { return itl_s_; }

 private:
  void summarize_requests(const std::vector<RequestRecord>& requests, RunSummary& s) const;
  void summarize_use(double peak_flops, double peak_bytes_per_s, int64_t total_kv_blocks,
                     RunSummary& s) const;
  void summarize_energy(RunSummary& s) const;
  // A step from T for SECONDS drew EXCESS_J above idle: into the power windows.
  void add_excess(double t, double seconds, double excess_j);
  Overload judge_overload(const RunSummary& s) const;
  // What the arrivals saw so far (slow: false; judge_overload sets it).
  ArrivalCounts counts() const;

  // A request's RequestTimes, kept apart by how often they change: the times set once, and those
  // every token updates (16 bytes a request, so that a step's pass over its running requests
  // touches a quarter of a cache line each).
  struct OnceTimes {
    double arrival_s = 0, first_scheduled_s = -1, first_token_s = -1;
    double kv_load_s = 0;
    int32_t kv_loaded_tokens = 0;
  };
  struct TokenTimes {
    double last_token_s = -1, max_itl_s = 0;
  };
  std::vector<OnceTimes> times_;
  std::vector<TokenTimes> tokens_;
  std::vector<StepRecord> step_records_;
  bool keep_steps_ = false;
  MetricOptions options_;
  LogHistogram itl_s_;
  TimeHistogram waiting_, kv_blocks_;
  std::vector<double> kv_scale_;  // per replica (set_kv_scale); empty: 1
  size_t offered_ = 0, admitted_ = 0;
  double first_offered_s_ = NAN, last_offered_s_ = 0;
  int64_t waiting_at_median_ = 0, waiting_at_last_ = 0;
  int64_t in_system_at_median_ = 0, in_system_at_last_ = 0;
  size_t median_offered_ = 0;  // requests offered up to the median arrival
  double first_arrival_s_ = 0;
  double end_s_ = 0;
  double busy_s_ = 0, flops_ = 0, bytes_ = 0, kv_block_seconds_ = 0;
  int64_t kv_max_blocks_ = 0;
  std::vector<PowerModel> power_;  // by replica; empty: no energy
  bool power_known_ = false;
  double excess_j_ = 0;  // the steps' energy above idle
  // The same by power window (kPowerWindowS from the first arrival), only the windows steps ran
  // in, by index: steps come nearly in order, so memory grows with busy windows, not the span.
  std::vector<std::pair<int64_t, double>> excess_windows_;
  uint64_t steps_ = 0, prefill_only_ = 0, decode_only_ = 0, mixed_ = 0;
  int64_t prefill_tokens_ = 0, decode_tokens_ = 0;
};

}  // namespace servesim
