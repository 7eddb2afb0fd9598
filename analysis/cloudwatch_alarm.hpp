// CloudWatch's "M out of N" evaluation of a static-threshold alarm (LessThanThreshold) on a series
// of per-period datapoints, with treatMissingData = missing: diagnose replays its OTPS alarm over
// a request log's periods with it.
// Promises: pure functions of their inputs.
#pragma once

#include <cstddef>
#include <vector>

namespace servesim {

// CloudWatch alarm states (an alarm starts in INSUFFICIENT_DATA).
enum class AlarmState { kInsufficientData, kOk, kAlarm };

const char* alarm_state_name(AlarmState s);  // "INSUFFICIENT_DATA", "OK", "ALARM"

// The state after each datapoint of OTPS (one per period, NaN = missing) of an alarm
// "OTPS < THRESHOLD for DATAPOINTS out of the last PERIODS datapoints" with treatMissingData =
// missing: at datapoint k the evaluation range is datapoints k-PERIODS+1 .. k (those before the
// series are missing); ALARM when at least DATAPOINTS of them breach, INSUFFICIENT_DATA when all
// are missing, OK otherwise. A missing datapoint counts as neither breaching nor OK. The range is
// exactly PERIODS datapoints: unlike CloudWatch, it never reaches further back to make up for
// missing ones.
// REQUIRES: 1 <= DATAPOINTS <= PERIODS.
std::vector<AlarmState> evaluate_alarm(const std::vector<double>& otps, double threshold,
                                       int datapoints, int periods);

// A run of consecutive ALARM states: windows FIRST..LAST. ENDED: the alarm left ALARM (for OK or
// INSUFFICIENT_DATA, the state of window LAST + 1) before the log ended.
struct AlarmEpisode {
  size_t first = 0, last = 0;
  bool ended = false;
};

std::vector<AlarmEpisode> alarm_episodes(const std::vector<AlarmState>& states);

}  // namespace servesim
