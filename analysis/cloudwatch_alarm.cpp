// CloudWatch's "M out of N" alarm evaluation and its ALARM episodes
// (analysis/cloudwatch_alarm.hpp).
#include "analysis/cloudwatch_alarm.hpp"

#include <cassert>
#include <cmath>

namespace servesim {

const char* alarm_state_name(AlarmState s) {
  switch (s) {
    case AlarmState::kOk:
      return "OK";
    case AlarmState::kAlarm:
      return "ALARM";
    case AlarmState::kInsufficientData:
      break;
  }
  return "INSUFFICIENT_DATA";
}

std::vector<AlarmState> evaluate_alarm(const std::vector<double>& otps, double threshold,
                                       int datapoints, int periods) {
  assert(datapoints >= 1 && datapoints <= periods);
  std::vector<AlarmState> out(otps.size(), AlarmState::kInsufficientData);
  // Counts over the last PERIODS datapoints, slid one period at a time (missing: neither
  // breaching nor OK).
  int present = 0, breaching = 0;
  for (size_t k = 0; k < otps.size(); ++k) {
    if (std::isfinite(otps[k])) {
      ++present;
      breaching += otps[k] < threshold;
    }
    if (k >= size_t(periods)) {
      const double gone = otps[k - size_t(periods)];
      if (std::isfinite(gone)) {
        --present;
        breaching -= gone < threshold;
      }
    }
    out[k] = breaching >= datapoints ? AlarmState::kAlarm
             : present == 0          ? AlarmState::kInsufficientData
                                     : AlarmState::kOk;
  }
  return out;
}

std::vector<AlarmEpisode> alarm_episodes(const std::vector<AlarmState>& states) {
  std::vector<AlarmEpisode> out;
  for (size_t k = 0; k < states.size(); ++k) {
    if (states[k] != AlarmState::kAlarm) continue;
    if (k > 0 && states[k - 1] == AlarmState::kAlarm) {
      out.back().last = k;
      continue;
    }
    out.push_back({k, k, false});
  }
  for (AlarmEpisode& e : out)
    e.ended = e.last + 1 < states.size();
  return out;
}

}  // namespace servesim
