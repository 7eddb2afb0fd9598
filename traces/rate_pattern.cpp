#include "traces/rate_pattern.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <vector>

#include "util/error.hpp"

namespace servesim {

namespace {

// SPEC's fields after the kind, as numbers (Error naming FIELD).
std::vector<double> numbers(const std::string& spec, const std::string& field) {
  std::vector<double> out;
  std::istringstream in(spec);
  std::string item;
  std::getline(in, item, ':');  // the kind
  while (std::getline(in, item, ':')) {
    size_t used = 0;
    double v = NAN;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || !std::isfinite(v)) {
      throw Error(field, "'" + spec + "': '" + item + "' is not a number");
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace

RatePattern RatePattern::parse(const std::string& spec, const std::string& field) {
  RatePattern p;
  p.spec = spec;
  const std::string kind = spec.substr(0, spec.find(':'));
  const std::vector<double> v = numbers(spec, field);
  if (kind == "constant" && v.empty()) return p;
  if (kind == "diurnal" && v.size() <= 3) {
    p.kind = Kind::kDiurnal;
    if (v.size() > 0) p.amplitude = v[0];
    if (v.size() > 1) p.period_s = v[1];
    p.peak_s = v.size() > 2 ? v[2] : p.period_s * 7 / 12;
    if (!(p.amplitude >= 0 && p.amplitude < 1)) {
      throw Error(field, "'" + spec + "': the amplitude must be in [0, 1)");
    }
    if (!(p.period_s > 0 && p.period_s <= 1e9)) {
      throw Error(field, "'" + spec + "': the period must be in (0, 1e9] seconds");
    }
    if (!(std::abs(p.peak_s) <= 1e9)) throw Error(field, "'" + spec + "': the peak is too far");
    return p;
  }
  if (kind == "spike" && v.size() == 3) {
    p.kind = Kind::kSpike;
    p.at_s = v[0];
    p.duration_s = v[1];
    p.factor = v[2];
    if (!(p.at_s >= 0 && p.at_s <= 1e9 && p.duration_s > 0 && p.duration_s <= 1e9)) {
      throw Error(field, "'" + spec + "': needs AT_S >= 0 and DURATION_S > 0 (at most 1e9)");
    }
    if (!(p.factor > 0 && p.factor <= 1e4)) {
      throw Error(field, "'" + spec + "': the factor must be in (0, 10000]");
    }
    return p;
  }
  throw Error(field, "'" + spec +
                         "': expected constant | diurnal[:AMPLITUDE[:PERIOD_S[:PEAK_S]]] | "
                         "spike:AT_S:DURATION_S:FACTOR");
}

double RatePattern::shape(double t) const {
  switch (kind) {
    case Kind::kDiurnal:
      return 1 + amplitude * std::cos(2 * std::numbers::pi * (t - peak_s) / period_s);
    case Kind::kSpike:
      return t >= at_s && t < at_s + duration_s ? factor : 1.0;
    default:
      return 1;
  }
}

double RatePattern::cumulative(double t) const {
  switch (kind) {
    case Kind::kDiurnal: {
      const double w = 2 * std::numbers::pi / period_s;
      return t + amplitude / w * (std::sin(w * (t - peak_s)) - std::sin(-w * peak_s));
    }
    case Kind::kSpike: {
      const double in = std::clamp(t - at_s, 0.0, duration_s);
      return t + (factor - 1) * in;
    }
    default:
      return t;
  }
}

void apply_rate_pattern(Workload& w, const RatePattern& p) {
  if (p.kind == RatePattern::Kind::kConstant) return;
  // cumulative() is increasing (shape > 0): bisection from a bracket around U.
  const double low_shape =
      p.kind == RatePattern::Kind::kDiurnal ? 1 - p.amplitude : std::min(1.0, p.factor);
  double prev = 0;
  for (RequestSpec& r : w) {
    const double u = r.arrival_s;
    double lo = prev, hi = std::max(prev, u / low_shape) + 1;
    while (p.cumulative(hi) < u)
      hi *= 2;
    for (int k = 0; k < 200 && hi - lo > 1e-9 * std::max(1.0, hi); ++k) {
      const double mid = (lo + hi) / 2;
      (p.cumulative(mid) < u ? lo : hi) = mid;
    }
    r.arrival_s = std::max(prev, hi);
    prev = r.arrival_s;
  }
}

}  // namespace servesim
