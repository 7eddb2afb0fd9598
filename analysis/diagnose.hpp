// Diagnosing a latency change between two request logs (BASELINE, CURRENT) the way Amazon
// Bedrock's OTPS guidance reads its identity
//     InvocationLatency_ms = TimeToFirstToken_ms + OutputTokenCount / OTPS x 1000
// as a decision rule: TTFT up while OTPS holds is input length or queueing before generation;
// OTPS down is the host generating slower (the alarm-worthy case); latency up with both stable
// is more output tokens per request (a workload change, for cost and UX review).
//  - LogStats: p50 and p95 of InvocationLatency, TTFT and OutputTokenCount over the completed
//    requests, and OTPS the CloudWatch way at each percentile q:
//        OTPS_q = OTC_q / (IL_q - TTFT_q) x 1000,
//    so IL_q = TTFT_q + OTC_q / OTPS_q x 1000 holds for each q (up to rounding).
//  - Decomposition: the change of IL_q split into the TTFT part and the decode part
//    d(OTC_q / OTPS_q x 1000), the decode part split again into an output-length part
//    dOTC / OTPS_base x 1000 and a speed part OTC_cur x (1/OTPS_cur - 1/OTPS_base) x 1000.
//    The parts sum to dIL (to rounding).
//  - decide(): the verdict on the p50s, in this precedence: OTPS down, TTFT up, latency up with
//    more output tokens, no significant change (documented at Finding).
//  - evaluate_alarm(): CloudWatch's "M out of N" evaluation of a static-threshold alarm on a series
//    of per-period OTPS datapoints, with treatMissingData = missing.
//  - read_request_log_csv(): a real request log (or `servesim run --requests-csv`) as a
//    RequestLog, columns found by header name.
// Promises: pure functions of their inputs; bad input files throw Error(file, line, field, why).
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/windows.hpp"

namespace servesim {

// The CloudWatch statistics of one log at one percentile (NaN when undefined).
struct LatencyPoint {
  double il_ms = NAN;    // InvocationLatency
  double ttft_ms = NAN;  // TimeToFirstToken
  double otc = NAN;      // OutputTokenCount
  double otps = NAN;     // OTC / (IL - TTFT) x 1000
  // OTC / OTPS x 1000: the decode time the identity attributes to generation.
  double decode_ms() const;
};

struct LogStats {
  std::string source;
  int64_t requests = 0, completed = 0;
  LatencyPoint p50, p95;
  double input_tokens_p50 = NAN, queue_ms_p50 = NAN;  // NaN when the log does not say
  double start_s = 0, end_s = 0;                      // first arrival, last completion
};

LogStats log_stats(const RequestLog& log);

// The change of InvocationLatency at one percentile, in ms: il = ttft + decode and
// decode = output + speed (each to rounding). output and speed are NaN when an OTPS is undefined.
struct Decomposition {
  double il = NAN, ttft = NAN, decode = NAN, output = NAN, speed = NAN;
};

Decomposition decompose(const LatencyPoint& baseline, const LatencyPoint& current);

// (CURRENT - BASELINE) / BASELINE; NaN unless BASELINE > 0 and both are finite.
double relative_change(double baseline, double current);

struct DiagnoseOptions {
  double tolerance = 0.1;       // a relative change beyond this is significant
  double period_s = 300;        // CloudWatch period of the OTPS alarm
  double alarm_fraction = 0.8;  // threshold = fraction x baseline p50 OTPS
  int datapoints = 3;           // M: breaching datapoints to alarm ...
  int evaluation_periods = 5;   // N: ... among the last N periods
};

// Throws Error naming the flag (--tolerance, --period, ...) when an option is out of range.
void validate(const DiagnoseOptions& o);

// What the p50s say, first match wins:
//  1. kThroughput:   OTPS p50 fell by more than the tolerance (whatever TTFT did): the host
//                    generates slower. First because it is the one change to page for, and
//                    because slower generation also delays queued requests' first tokens.
//  2. kTtft:         TTFT p50 rose by more than the tolerance while OTPS held: input length or
//                    queueing before generation.
//  3. kOutputLength: InvocationLatency p50 rose by more than the tolerance, TTFT and OTPS
//                    within it, and OutputTokenCount p50 rose by more than the tolerance: more
//                    output tokens per request, a workload change.
//  4. kNone:         none of the above (improvements and sub-tolerance drifts are noted).
enum class Finding { kThroughput, kTtft, kOutputLength, kNone };

const char* finding_name(Finding f);  // "throughput", "ttft", "output_length", "none"

struct Verdict {
  Finding finding = Finding::kNone;
  std::string headline;              // one line
  std::vector<std::string> details;  // the numbers behind it, one line each
};

Verdict decide(const LogStats& baseline, const LogStats& current, double tolerance);

// CloudWatch alarm states (an alarm starts in INSUFFICIENT_DATA).
enum class AlarmState { kInsufficientData, kOk, kAlarm };

const char* alarm_state_name(AlarmState s);  // "INSUFFICIENT_DATA", "OK", "ALARM"

// The state after each datapoint of OTPS (one per period, NaN = missing) of an alarm
// "OTPS < THRESHOLD for DATAPOINTS out of the last PERIODS datapoints" with treatMissingData =
// missing: at datapoint k the evaluation range is datapoints k-PERIODS+1 .. k (those before the
// series are missing); ALARM when at least DATAPOINTS of them breach, INSUFFICIENT_DATA when all
// are missing, OK otherwise. A missing datapoint counts as neither breaching nor OK. The range is
// exactly PERIODS datapoints: unlike CloudWatch, it never reaches further back to make up for
// missing ones. 1 <= DATAPOINTS <= PERIODS.
std::vector<AlarmState> evaluate_alarm(const std::vector<double>& otps, double threshold,
                                       int datapoints, int periods);

// A run of consecutive ALARM states: windows FIRST..LAST. ENDED: the alarm left ALARM (for OK or
// INSUFFICIENT_DATA, the state of window LAST + 1) before the log ended.
struct AlarmEpisode {
  size_t first = 0, last = 0;
  bool ended = false;
};

std::vector<AlarmEpisode> alarm_episodes(const std::vector<AlarmState>& states);

struct Diagnosis {
  DiagnoseOptions options;
  LogStats baseline, current;
  Decomposition p50, p95;
  Verdict verdict;
  double alarm_threshold = NAN;       // tokens/s; NaN when the baseline OTPS is undefined
  std::vector<Window> windows;        // CURRENT's periods (sim/windows.hpp)
  std::vector<AlarmState> alarm;      // the state after each window
  std::vector<AlarmEpisode> firings;  // when the alarm was in ALARM
};

// Throws Error when either log has no completed request or an option is out of range.
Diagnosis diagnose(const RequestLog& baseline, const RequestLog& current,
                   const DiagnoseOptions& options);

// The table, the decomposition, the verdict and the alarm; WINDOWS adds one row per period.
void print_diagnosis(std::ostream& out, const Diagnosis& d, bool windows = false);
nlohmann::ordered_json diagnosis_json(const Diagnosis& d);

// Where a request log CSV keeps each field (header names) and in which units.
struct CsvLogColumns {
  std::string arrival = "arrival_s", ttft = "ttft_ms", latency = "e2e_ms", output = "output_tokens",
              input = "input_tokens", queue = "queue_ms";
  bool input_required = false, queue_required = false;  // else absent = unknown
  double time_to_s = 1;                                 // arrival x this = seconds (1e-3 for ms)
  double latency_to_ms = 1;  // TTFT, latency and queue x this = ms (1e3 for s)
};

// One row per request. Arrival must be a finite number on every row (epoch seconds are fine);
// an empty TTFT or latency marks a request that did not complete (its output and input tokens
// may then be empty too). Latency must be >= TTFT >= 0. Throws Error(file, line, column, why).
RequestLog read_request_log_csv(const std::string& path, const CsvLogColumns& columns);

}  // namespace servesim
