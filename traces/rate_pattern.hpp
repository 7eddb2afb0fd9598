// Rate patterns for generated workloads: a day's traffic or a burst, to try autoscaling and
// per-window capacity plans on (issue 25). The generator draws its arrivals at mean rate R as
// usual (Gamma gaps, --burstiness); a pattern then warps time so that the rate at t is R x
// shape(t), keeping every request and the local burstiness:
//  - diurnal[:AMPLITUDE[:PERIOD_S[:PEAK_S]]]: shape(t) = 1 + A cos(2 pi (t - PEAK) / PERIOD), the
//    mean rate R over a period, (1 + A) R at the peak and (1 - A) R at the trough (defaults 0.6,
//    86400 s, and the peak at 14:00 of a day starting at midnight: 7/12 of the period);
//  - spike:AT_S:DURATION_S:FACTOR: R, and FACTOR x R from AT_S for DURATION_S seconds.
// Promises: a pure function of the arrivals; arrival order and count unchanged; t = 0 maps to 0.
#pragma once

#include <string>

#include "traces/request.hpp"

namespace servesim {

struct RatePattern {
  enum class Kind { kConstant, kDiurnal, kSpike } kind = Kind::kConstant;
  double amplitude = 0.6, period_s = 86400, peak_s = 50400;
  double at_s = 0, duration_s = 0, factor = 1;
  std::string spec;

  // Throws Error naming FIELD (the flag) on a malformed spec.
  static RatePattern parse(const std::string& spec, const std::string& field);
  // The rate at T over the base rate.
  double shape(double t) const;
  // The integral of shape from 0 to T (the base-rate seconds that elapse by T).
  double cumulative(double t) const;
};

// Moves each arrival from U (base-rate time) to the T with cumulative(T) = U.
void apply_rate_pattern(Workload& w, const RatePattern& p);

}  // namespace servesim
