// Diagnosing a latency change between two request logs (BASELINE, CURRENT) the way Amazon
// Bedrock's OTPS guidance reads its identity
//     InvocationLatency_ms = TimeToFirstToken_ms + OutputTokenCount / OTPS x 1000
// as a decision rule, and replaying the CloudWatch OTPS alarm over the current log. The parts:
//  - analysis/diagnose_stats.hpp: LogStats (p50, p95 and OTPS of a log, and the prefill speed
//    of its fastest prefills) and the Decomposition of a latency change into TTFT, output length
//    and generation speed, or, when the prompts changed, input length, output length and speed.
//  - analysis/diagnose_verdict.hpp: decide(), the Verdict on the p50s (the Finding and the
//    numbers and flags behind it); analysis/diagnose_verdict_text.hpp puts it in words.
//  - analysis/cloudwatch_alarm.hpp: the "M out of N" alarm evaluation.
//  - analysis/request_log_csv.hpp: a request log CSV as a RequestLog.
// This header: diagnose() runs them all on two logs into a Diagnosis; print_diagnosis() and
// diagnosis_json() report it (the text and JSON of `servesim diagnose`).
// Promises: pure functions of their inputs; bad options or input throw Error.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/cloudwatch_alarm.hpp"
#include "analysis/diagnose_stats.hpp"
#include "analysis/diagnose_verdict.hpp"
#include "analysis/request_log_csv.hpp"
#include "analysis/windows.hpp"

namespace servesim {

struct DiagnoseOptions {
  double tolerance = 0.1;       // a relative change beyond this is significant
  double period_s = 300;        // CloudWatch period of the OTPS alarm
  double alarm_fraction = 0.8;  // threshold = fraction x baseline p50 OTPS
  int datapoints = 3;           // M: breaching datapoints to alarm ...
  int evaluation_periods = 5;   // N: ... among the last N periods
};

// Throws Error naming the flag (--tolerance, --period, ...) when an option is out of range.
void validate(const DiagnoseOptions& o);

struct Diagnosis {
  DiagnoseOptions options;
  LogStats baseline, current;
  Decomposition p50, p95;             // both split as verdict.p50 is (the finding's split)
  Verdict verdict;                    // on the p50s, with options.tolerance
  double alarm_threshold = NAN;       // tokens/s; NaN when the baseline OTPS is undefined
  std::vector<Window> windows;        // CURRENT's periods (analysis/windows.hpp)
  std::vector<AlarmState> alarm;      // the state after each window
  std::vector<AlarmEpisode> firings;  // when the alarm was in ALARM

  // The alarm fired, but the verdict puts the OTPS drop on the workload (input or output
  // lengths, the rate) or on noise, not on the service: the article's alarm is for service-side
  // throughput changes, so `--fail-on-alarm` (and check's fail-on-alarm) do not fail on it
  // unless asked to fail on any firing (--fail-on-any-alarm, fail-on-alarm = any).
  bool alarm_excused() const;
  // Whether the alarm fails a pipeline: it fired, and (ANY) it is not excused.
  bool alarm_fails(bool any) const { return !firings.empty() && (any || !alarm_excused()); }
};

// Throws Error when either log has no completed request or an option is out of range.
Diagnosis diagnose(const RequestLog& baseline, const RequestLog& current,
                   const DiagnoseOptions& options);

// The table, the decomposition, the verdict in words and the alarm; WINDOWS adds one row per
// period. The JSON holds the same, the verdict as its finding, headline and details.
void print_diagnosis(std::ostream& out, const Diagnosis& d, bool windows = false);

// Below this many completed requests in a log, a p50 or p95 moves with noise: the verdict is
// printed with a warning (issue 24: a 2-request log got a verdict as any other).
inline constexpr int kMinRequestsForVerdict = 30;
// The warnings of D on its sample sizes ("" none), printed first and in the JSON's "warnings".
std::vector<std::string> small_sample_warnings(const Diagnosis& d);
nlohmann::ordered_json diagnosis_json(const Diagnosis& d);

}  // namespace servesim
