// Synthetic workloads, as vLLM's benchmark_serving.py draws them: inter-arrival times from a
// Gamma distribution with shape `burstiness` and mean 1/rate (burstiness 1 = Poisson; rate inf =
// every request at t=0), and input and output lengths from a LengthDist each.
// Promises: the same options give the same requests on every machine (Boost.Random
// distributions and engines, one engine per stream so that changing the rate leaves the lengths
// unchanged); lengths are >= 1 and within the distribution's [min, max].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/request.hpp"
#include "util/field_path.hpp"

namespace servesim {

// A length distribution, parsed from `fixed:N`, `uniform:LO:HI`, `normal:MEAN:STD[:MIN:MAX]` or
// `lognormal:MEDIAN:SIGMA[:MIN:MAX]`. Draws are rounded to the nearest integer and clipped to
// [min, max] (default [1, 2^31-1]).
struct LengthDist {
  enum class Kind { kFixed, kUniform, kNormal, kLognormal } kind = Kind::kFixed;
  double a = 1, b = 0;  // N | LO,HI | MEAN,STD | MEDIAN,SIGMA
  int64_t min = 1, max = INT32_MAX;
  std::string spec;  // as given, for reports

  // Throws Error(field, reason) naming FIELD (the flag) on a malformed spec.
  static LengthDist parse(const std::string& spec, const std::string& field);
};

struct SyntheticOptions {
  int64_t num_requests = 1000;
  double request_rate = 10;  // requests per second; infinity = all at t = 0
  double burstiness = 1.0;   // Gamma shape
  LengthDist input_len = LengthDist::parse("fixed:512", field::kInputLen);
  LengthDist output_len = LengthDist::parse("fixed:256", field::kOutputLen);
  uint64_t seed = 0;
};

// N arrival times as benchmark_serving.py draws them (Gamma gaps of shape BURSTINESS and mean
// 1/RATE, the first at 0; RATE inf puts all at 0). Throws Error naming the flag when out of range.
std::vector<double> generate_arrivals(size_t n, double rate, double burstiness, uint64_t seed);

// N lengths from D, drawn with an engine seeded SEED (the same draws generate_synthetic makes
// for inputs with SEED = 3 x seed + 1 and for outputs with 3 x seed + 2).
std::vector<int32_t> draw_lengths(const LengthDist& d, size_t n, uint64_t seed);

// Gives each request of W a priority drawn uniformly from 0..LEVELS-1 (lower runs first under
// --scheduling-policy priority), from its own engine seeded from SEED, so that the arrivals and
// lengths do not change. LEVELS 1 leaves every priority 0. Throws Error naming --num-priorities
// when LEVELS is outside [1, 1000000].
void draw_priorities(Workload& w, int64_t levels, uint64_t seed);

// Gives each request of W one of ADAPTERS LoRA adapters (ids 1..ADAPTERS; 0 is the base model),
// drawn with probability proportional to 1 / rank^ZIPF (0: uniform, as vLLM bench chooses among
// --lora-modules), from a hash of SEED and the request (or, for a conversation's turn, the
// conversation: its turns share an adapter). ADAPTERS 0 leaves W as it is. Error naming
// --lora-adapters or --lora-zipf when out of range.
void draw_loras(Workload& w, int64_t adapters, double zipf, uint64_t seed);

// More requests than this is a bad flag, not a workload (ids are 32-bit; memory is ~100 B each).
inline constexpr int64_t kMaxSyntheticRequests = 100'000'000;

// Throws Error naming the flag when an option is out of range.
Workload generate_synthetic(const SyntheticOptions& opt);

}  // namespace servesim
