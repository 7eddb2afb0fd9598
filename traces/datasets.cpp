#include "traces/datasets.hpp"

#include <algorithm>
#include <boost/random/exponential_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "util/error.hpp"
#include "util/format.hpp"
#include "util/hash.hpp"

namespace servesim {

namespace {

// Engine seeds of the streams generate_synthetic does not have, mixed with the seed so that they
// never meet its 3 x seed + k engines.
constexpr uint64_t kShuffleStream = 0x73687566666c65ULL;  // "shuffle"
constexpr uint64_t kThinkStream = 0x7468696e6bULL;        // "think"

void check_count(int64_t v, int64_t min, int64_t max, const char* flag) {
  if (v < min || v > max) {
    throw Error(flag, format("must be in [%lld, %lld], got %lld", (long long)min, (long long)max,
                             (long long)v));
  }
}

void check_num_requests(int64_t n) {
  check_count(n, 1, kMaxSyntheticRequests, "num-requests");
}

// Fisher-Yates with Boost's uniform_int_distribution: the same order on every machine
// (std::shuffle's algorithm is the library's choice).
template <class T>
void shuffle(std::vector<T>& v, uint64_t seed) {
  boost::random::mt19937_64 rng(seed);
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = boost::random::uniform_int_distribution<size_t>(0, i - 1)(rng);
    std::swap(v[i - 1], v[j]);
  }
}

void check(const PrefixRepetitionOptions& o) {
  check_num_requests(o.num_requests);
  check_count(o.prefix_len, 1, INT32_MAX, "prefix-repetition-prefix-len");
  check_count(o.suffix_len, 0, INT32_MAX - o.prefix_len, "prefix-repetition-suffix-len");
  check_count(o.output_len, 1, INT32_MAX, "prefix-repetition-output-len");
  check_count(o.num_prefixes, 1, kMaxSyntheticRequests, "prefix-repetition-num-prefixes");
  if (o.num_requests < o.num_prefixes) {  // vLLM: "num_requests ... must be greater than or equal"
    throw Error("prefix-repetition-num-prefixes",
                format("%lld prefixes need at least as many requests, got %lld (--num-requests)",
                       (long long)o.num_prefixes, (long long)o.num_requests));
  }
}

}  // namespace

Workload generate_prefix_repetition(const PrefixRepetitionOptions& opt) {
  check(opt);
  // vLLM's order before the shuffle: prefix by prefix, num_requests // num_prefixes each.
  const int64_t per_prefix = opt.num_requests / opt.num_prefixes;
  std::vector<uint32_t> prefix_of(size_t(opt.num_made()));
  for (size_t i = 0; i < prefix_of.size(); ++i)
    prefix_of[i] = uint32_t(int64_t(i) / per_prefix);
  shuffle(prefix_of, hash_combine(opt.seed, kShuffleStream));
  const std::vector<double> arrivals =
      generate_arrivals(prefix_of.size(), opt.request_rate, opt.burstiness, opt.seed);
  Workload w(prefix_of.size());
  w.spans.reserve(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    RequestSpec& r = w[i];
    r.id = uint32_t(i);
    r.arrival_s = arrivals[i];
    r.input_tokens = int32_t(opt.prefix_len + opt.suffix_len);
    r.output_tokens = int32_t(opt.output_len);
    r.first_span = uint32_t(w.spans.size());
    r.num_spans = 1;
    const uint64_t prefix = hash_combine(opt.seed, prefix_of[i]);
    w.spans.push_back({stream_id(StreamKind::kPrefix, prefix), 0, 0, int32_t(opt.prefix_len)});
  }
  return w;
}

namespace {

struct Turn {
  double arrival_s;
  int32_t input_tokens, output_tokens;
  uint32_t session;
};

void check(const MultiTurnOptions& o) {
  check_num_requests(o.base.num_requests);
  check_count(o.num_turns, 1, kMaxSyntheticRequests, "num-turns");
  if (!(o.think_time_s >= 0 && std::isfinite(o.think_time_s))) {
    throw Error("think-time-s", "must be a finite number of seconds >= 0");
  }
}

// The turns of every session in generation order (session by session), arrival times unsorted.
std::vector<Turn> session_turns(const MultiTurnOptions& o) {
  const SyntheticOptions& b = o.base;
  const size_t n = size_t(b.num_requests), turns = size_t(o.num_turns);
  const size_t sessions = (n + turns - 1) / turns;
  const std::vector<double> starts =
      generate_arrivals(sessions, b.request_rate / double(turns), b.burstiness, b.seed);
  const std::vector<int32_t> fresh = draw_lengths(b.input_len, n, b.seed * 3 + 1);
  const std::vector<int32_t> answers = draw_lengths(b.output_len, n, b.seed * 3 + 2);
  boost::random::mt19937_64 rng(hash_combine(b.seed, kThinkStream));
  boost::random::exponential_distribution<double> think(o.think_time_s > 0 ? 1 / o.think_time_s
                                                                           : 1.0);
  std::vector<Turn> out;
  out.reserve(n);
  for (size_t s = 0; s < sessions; ++s) {
    double at = starts[s];
    int64_t input = 0;
    for (size_t t = 0; t < turns && out.size() < n; ++t) {
      const size_t k = out.size();
      if (t > 0) {
        at += o.think_time_s > 0 ? think(rng) : 0.0;
        input += out.back().output_tokens;
      }
      input += fresh[k];
      if (input > INT32_MAX) {
        throw Error("num-turns", format("turn %zu of a session would bring %lld prompt tokens, "
                                        "more than 2^31-1",
                                        t + 1, (long long)input));
      }
      if (!std::isfinite(at)) throw Error("think-time-s", "too large: arrival times overflow");
      out.push_back({at, int32_t(input), answers[k], uint32_t(s)});
    }
  }
  return out;
}

}  // namespace

Workload generate_multi_turn(const MultiTurnOptions& opt) {
  check(opt);
  std::vector<Turn> turns = session_turns(opt);
  std::stable_sort(turns.begin(), turns.end(),
                   [](const Turn& a, const Turn& b) { return a.arrival_s < b.arrival_s; });
  Workload w(turns.size());
  w.spans.reserve(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    RequestSpec& r = w[i];
    r.id = uint32_t(i);
    r.arrival_s = turns[i].arrival_s;
    r.input_tokens = turns[i].input_tokens;
    r.output_tokens = turns[i].output_tokens;
    r.first_span = uint32_t(w.spans.size());
    r.num_spans = 1;
    r.output_continues = true;
    const uint64_t session = hash_combine(opt.base.seed, turns[i].session);
    w.spans.push_back({stream_id(StreamKind::kSession, session), 0, 0, r.input_tokens});
  }
  return w;
}

}  // namespace servesim
