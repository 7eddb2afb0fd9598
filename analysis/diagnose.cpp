// diagnose(): two request logs' statistics, the verdict on them and the OTPS alarm replayed over
// the current log's periods (analysis/diagnose.hpp). The report is in diagnose_report.cpp.
#include "analysis/diagnose.hpp"

#include "analysis/diagnose_util.hpp"
#include "util/error.hpp"

namespace servesim {

using diagnose_util::positive;

namespace {

void require_completed(const LogStats& s) {
  if (s.completed != 0) return;
  throw Error(s.source, 0, "",
              format("no completed request (with both TTFT and latency) among %lld: nothing to "
                     "diagnose",
                     static_cast<long long>(s.requests)));
}

// At most a million periods: a longer span is mixed clocks or units, not a real log.
void require_few_periods(const LogStats& s, double period_s) {
  if (!((s.end_s - s.start_s) / period_s > 1e6)) return;
  throw Error(field::kPeriodS,
              format("%s spans %.0f s: more than a million %g s periods (mixed clocks or "
                     "time units? see {{trace.time_unit}})",
                     s.source.c_str(), s.end_s - s.start_s, period_s));
}

// The CloudWatch OTPS alarm over CURRENT's periods: windows, states and firings.
void replay_alarm(const RequestLog& current, Diagnosis& d) {
  const DiagnoseOptions& o = d.options;
  d.windows = compute_windows(current, o.period_s);
  if (positive(d.baseline.p50.otps)) d.alarm_threshold = o.alarm_fraction * d.baseline.p50.otps;
  std::vector<double> series;
  series.reserve(d.windows.size());
  for (const Window& w : d.windows)
    series.push_back(w.otps);
  d.alarm = evaluate_alarm(series, d.alarm_threshold, o.datapoints, o.evaluation_periods);
  d.firings = alarm_episodes(d.alarm);
}

}  // namespace

bool Diagnosis::alarm_excused() const {
  if (firings.empty()) return false;
  switch (verdict.finding) {
    case Finding::kInputLength:
    case Finding::kOutputLength:
    case Finding::kRate:
    case Finding::kNoise:
      return true;
    default:
      return false;
  }
}

void validate(const DiagnoseOptions& o) {
  if (!(o.tolerance >= 0) || !std::isfinite(o.tolerance)) {
    throw Error(field::kDiagnoseTolerance,
                "must be a finite number >= 0 (a relative change, 0.1 = 10%)");
  }
  if (!positive(o.period_s)) throw Error(field::kPeriodS, "must be a number of seconds > 0");
  if (!positive(o.alarm_fraction)) throw Error(field::kAlarmFraction, "must be a number > 0");
  if (o.evaluation_periods < 1 || o.evaluation_periods > 10000) {
    throw Error(field::kEvaluationPeriods, "must be in [1, 10000]");
  }
  if (o.datapoints < 1 || o.datapoints > o.evaluation_periods) {
    throw Error(field::kDatapointsToAlarm, "must be in [1, {{diagnose.evaluation_periods}}]");
  }
}

Diagnosis diagnose(const RequestLog& baseline, const RequestLog& current,
                   const DiagnoseOptions& o) {
  validate(o);
  Diagnosis d;
  d.options = o;
  d.baseline = log_stats(baseline);
  d.current = log_stats(current);
  require_completed(d.baseline);
  require_completed(d.current);
  d.verdict = decide(d.baseline, d.current, o.tolerance);
  d.p50 = d.verdict.p50;  // split as the finding says, and p95 the same way
  d.p95 = decompose(d.baseline.p95, d.current.p95, d.p50.split);
  require_few_periods(d.current, o.period_s);
  replay_alarm(current, d);
  return d;
}

}  // namespace servesim
