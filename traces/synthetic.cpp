#include "traces/synthetic.hpp"

#include <algorithm>
#include <boost/random/gamma_distribution.hpp>
#include <boost/random/lognormal_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "util/error.hpp"
#include "util/hash.hpp"

namespace servesim {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

double number(const std::string& text, const std::string& field, const std::string& spec) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    throw Error(field, "'" + text + "' in '" + spec + "' is not a number");
  }
  return v;
}

int64_t count(const std::string& text, const std::string& field, const std::string& spec) {
  const double v = number(text, field, spec);
  if (v < 1 || v > INT32_MAX || v != std::floor(v)) {
    throw Error(field, "'" + text + "' in '" + spec + "' must be a whole number of tokens >= 1");
  }
  return static_cast<int64_t>(v);
}

}  // namespace

LengthDist LengthDist::parse(const std::string& spec, const std::string& field) {
  const auto parts = split(spec, ':');
  const std::string& kind = parts[0];
  const std::string usage =
      "expected fixed:N, uniform:LO:HI, normal:MEAN:STD[:MIN:MAX] or "
      "lognormal:MEDIAN:SIGMA[:MIN:MAX], got '" +
      spec + "'";
  LengthDist d;
  d.spec = spec;
  if (kind == "fixed" && parts.size() == 2) {
    d.kind = Kind::kFixed;
    d.min = d.max = count(parts[1], field, spec);
    d.a = double(d.min);
    return d;
  }
  if (kind == "uniform" && parts.size() == 3) {
    d.kind = Kind::kUniform;
    d.min = count(parts[1], field, spec);
    d.max = count(parts[2], field, spec);
    if (d.min > d.max) throw Error(field, "LO > HI in '" + spec + "'");
    return d;
  }
  if ((kind == "normal" || kind == "lognormal") && (parts.size() == 3 || parts.size() == 5)) {
    d.kind = kind == "normal" ? Kind::kNormal : Kind::kLognormal;
    d.a = number(parts[1], field, spec);
    d.b = number(parts[2], field, spec);
    if (d.b < 0) throw Error(field, "the spread must be >= 0 in '" + spec + "'");
    if (d.kind == Kind::kLognormal && d.a <= 0) {
      throw Error(field, "the median must be > 0 in '" + spec + "'");
    }
    if (parts.size() == 5) {
      d.min = count(parts[3], field, spec);
      d.max = count(parts[4], field, spec);
      if (d.min > d.max) throw Error(field, "MIN > MAX in '" + spec + "'");
    }
    return d;
  }
  throw Error(field, usage);
}

namespace {

// Draws lengths from one LengthDist with its own engine.
class LengthSampler {
 public:
  LengthSampler(const LengthDist& d, uint64_t seed) : d_(d), rng_(seed) {}
  int32_t operator()() {
    double v = 0;
    switch (d_.kind) {
      case LengthDist::Kind::kFixed:
        return static_cast<int32_t>(d_.min);
      case LengthDist::Kind::kUniform:
        return static_cast<int32_t>(
            boost::random::uniform_int_distribution<int64_t>(d_.min, d_.max)(rng_));
      case LengthDist::Kind::kNormal:
        v = boost::random::normal_distribution<double>(d_.a, d_.b)(rng_);
        break;
      case LengthDist::Kind::kLognormal:
        v = boost::random::lognormal_distribution<double>(std::log(d_.a), d_.b)(rng_);
        break;
    }
    const double clipped = std::clamp(std::round(v), double(d_.min), double(d_.max));
    return static_cast<int32_t>(clipped);
  }

 private:
  LengthDist d_;
  boost::random::mt19937_64 rng_;
};

}  // namespace

std::vector<int32_t> draw_lengths(const LengthDist& d, size_t n, uint64_t seed) {
  LengthSampler draw(d, seed);
  std::vector<int32_t> v(n);
  for (int32_t& x : v)
    x = draw();
  return v;
}

std::vector<double> generate_arrivals(size_t n, double rate, double burstiness, uint64_t seed) {
  if (!(rate > 0)) throw Error(field::kRequestRate, "must be > 0 (or inf)");
  if (!(burstiness >= 1e-6 && burstiness <= 1e6)) {
    throw Error(field::kBurstiness, "must be in [1e-6, 1e6]");
  }
  const bool all_at_once = std::isinf(rate);
  // benchmark_serving.py: theta = 1 / (rate * burstiness); gap ~ Gamma(burstiness, theta); the
  // first request is sent at t = 0. With rate inf the scale would be 0, which Boost's
  // gamma_distribution rejects: any valid scale does, it is never drawn from.
  const double scale = all_at_once ? 1.0 : 1.0 / (rate * burstiness);
  if (!(std::isfinite(scale) && scale > 0)) {
    throw Error(field::kRequestRate, "request rate x burstiness is out of range");
  }
  // The arrival stream's engine is seeded 3 x seed (inputs and outputs use 3 x seed + 1, + 2).
  boost::random::mt19937_64 rng(seed * 3);
  boost::random::gamma_distribution<double> gap(burstiness, scale);
  std::vector<double> t(n, 0.0);
  for (size_t i = 1; i < n && !all_at_once; ++i)
    t[i] = t[i - 1] + gap(rng);
  if (n > 0 && !(t.back() <= kMaxSimTime_s)) {
    char last[32];
    std::snprintf(last, sizeof last, "%.3g", t.back());
    throw Error(field::kRequestRate, std::string("too low: the last of ") + std::to_string(n) +
                                         " requests would arrive at " + last +
                                         " s, past the 1e9 s a simulation may span (where a double "
                                         "still resolves sub-microsecond times)");
  }
  return t;
}

void draw_priorities(Workload& w, int64_t levels, uint64_t seed) {
  if (levels < 1 || levels > 1'000'000)
    throw Error(field::kNumPriorities, "must be in [1, 1000000]");
  if (levels == 1) return;
  // Its own stream: arrivals, inputs and outputs use 3 x seed + 0, 1, 2.
  boost::random::mt19937_64 rng(seed * 3 + 0x9e3779b97f4a7c15ULL);
  boost::random::uniform_int_distribution<int32_t> draw(0, int32_t(levels - 1));
  for (RequestSpec& r : w)
    r.priority = draw(rng);
}

void draw_loras(Workload& w, int64_t adapters, double zipf, uint64_t seed) {
  if (adapters < 0 || adapters > kMaxLoras) {
    throw Error(field::kLoraAdapters, "must be in [0, " + std::to_string(kMaxLoras) + "]");
  }
  if (!(zipf >= 0 && zipf <= 10)) throw Error(field::kLoraZipf, "must be in [0, 10]");
  if (adapters == 0) return;
  std::vector<double> cdf(static_cast<size_t>(adapters));
  double sum = 0;
  for (int64_t k = 0; k < adapters; ++k)
    cdf[size_t(k)] = sum += std::pow(double(k + 1), -zipf);
  for (double& c : cdf)
    c /= sum;
  const uint64_t base = hash_combine(seed, 0x4c6f5241ULL);  // "LoRA": a stream of its own
  for (RequestSpec& r : w) {
    // A turn of a conversation draws with its conversation's stream, so all its turns agree.
    const uint64_t key = r.output_continues && r.num_spans > 0
                             ? w.spans[r.first_span + r.num_spans - 1].stream
                             : uint64_t(r.id) | (uint64_t(1) << 63);
    const double u = double(hash_combine(base, key) >> 11) * 0x1.0p-53;
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    r.lora = uint16_t(std::min<int64_t>(it - cdf.begin(), adapters - 1) + 1);
  }
}

Workload generate_synthetic(const SyntheticOptions& opt) {
  if (opt.num_requests < 1 || opt.num_requests > kMaxSyntheticRequests) {
    throw Error(field::kNumRequests,
                "must be in [1, " + std::to_string(kMaxSyntheticRequests) + "]");
  }
  // Separate streams for arrivals, inputs and outputs so that a rate sweep replays the same
  // lengths.
  const std::vector<double> arrivals =
      generate_arrivals(size_t(opt.num_requests), opt.request_rate, opt.burstiness, opt.seed);
  LengthSampler input(opt.input_len, opt.seed * 3 + 1);
  LengthSampler output(opt.output_len, opt.seed * 3 + 2);
  Workload w(arrivals.size());
  for (size_t i = 0; i < w.size(); ++i) {
    RequestSpec& r = w[i];
    r.id = static_cast<uint32_t>(i);
    r.arrival_s = arrivals[i];
    r.input_tokens = input();
    r.output_tokens = output();
  }
  return w;
}

}  // namespace servesim
