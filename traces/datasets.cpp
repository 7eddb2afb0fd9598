#include "traces/datasets.hpp"

#include <algorithm>
#include <boost/random/exponential_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "util/error.hpp"
#include "util/format.hpp"
#include "util/hash.hpp"
#include "util/text_input.hpp"

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
  check_count(n, 1, kMaxSyntheticRequests, field::kNumRequests);
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
  check_count(o.prefix_len, 1, INT32_MAX, field::kPrefixRepetitionPrefixLen);
  check_count(o.suffix_len, 0, INT32_MAX - o.prefix_len, field::kPrefixRepetitionSuffixLen);
  check_count(o.output_len, 1, INT32_MAX, field::kPrefixRepetitionOutputLen);
  check_count(o.num_prefixes, 1, kMaxSyntheticRequests, field::kPrefixRepetitionNumPrefixes);
  if (o.num_requests < o.num_prefixes) {  // vLLM: "num_requests ... must be greater than or equal"
    throw Error(field::kPrefixRepetitionNumPrefixes,
                format("%lld prefixes need at least as many requests, got %lld (%s)",
                       (long long)o.num_prefixes, (long long)o.num_requests,
                       field::ref(field::kNumRequests).c_str()));
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

Workload generate_shared_prefix(const SharedPrefixOptions& o) {
  check_count(o.num_groups, 1, 1'000'000, "prompt_groups");
  check_count(o.users_per_group, 1, 1'000'000, "users_per_group");
  check_count(o.system_prompt_len, 0, INT32_MAX / 2, "system_prompt_tokens");
  check_count(o.question_len, 0, INT32_MAX / 2, "question_tokens");
  check_count(o.output_len, 1, INT32_MAX, "output_tokens");
  if (o.system_prompt_len + o.question_len < 1) {
    throw Error("question_tokens", "a prompt needs at least one token");
  }
  if (o.stages.empty()) throw Error("stages", "at least one load stage is needed");
  // The prompts, group by group, then shuffled (inference-perf's random.shuffle).
  const int64_t num_prompts = o.num_groups * o.users_per_group;
  if (num_prompts > kMaxSyntheticRequests) throw Error("users_per_group", "too many prompts");
  std::vector<uint32_t> prompts(size_t(num_prompts), 0);
  for (size_t i = 0; i < prompts.size(); ++i)
    prompts[i] = uint32_t(i);
  shuffle(prompts, hash_combine(o.seed, kShuffleStream));

  std::vector<double> arrivals;
  double start = 0;
  for (size_t k = 0; k < o.stages.size(); ++k) {
    const LoadStage& s = o.stages[k];
    if (!(s.rate > 0 && std::isfinite(s.rate))) throw Error("rate_req_s", "must be > 0");
    if (!(s.duration_s > 0 && std::isfinite(s.duration_s) && s.duration_s < 1e9)) {
      throw Error("duration_s", "must be in (0, 1e9) seconds");
    }
    const double count = std::round(s.rate * s.duration_s);
    if (double(arrivals.size()) + count > double(kMaxSyntheticRequests)) {
      throw Error("rate_req_s", "rate x duration makes too many requests");
    }
    // Given its count, a Poisson process puts its arrivals at uniform times: the first n of
    // n + 1 cumulated exponential gaps, scaled to the stage's length.
    boost::random::mt19937_64 rng(hash_combine(o.seed, k) * 3);
    boost::random::exponential_distribution<double> gap(1.0);
    std::vector<double> t(size_t(count) + 1);
    double sum = 0;
    for (double& x : t)
      x = (sum += gap(rng));
    for (size_t i = 0; i + 1 < t.size(); ++i)
      arrivals.push_back(start + t[i] / sum * s.duration_s);
    start += s.duration_s;
  }
  if (arrivals.empty()) throw Error("rate_req_s", "rate x duration makes no request");

  Workload w(arrivals.size());
  w.spans.reserve(2 * w.size());
  const int32_t sys = int32_t(o.system_prompt_len), q = int32_t(o.question_len);
  for (size_t i = 0; i < w.size(); ++i) {
    RequestSpec& r = w[i];
    r.id = uint32_t(i);
    r.arrival_s = arrivals[i];
    r.input_tokens = sys + q;
    r.output_tokens = int32_t(o.output_len);
    const uint32_t p = prompts[i % prompts.size()];
    r.first_span = uint32_t(w.spans.size());
    if (sys > 0) {
      const uint64_t group = hash_combine(o.seed, p / uint64_t(o.users_per_group));
      w.spans.push_back({stream_id(StreamKind::kPrefix, group), 0, 0, sys});
    }
    if (q > 0) {
      const uint64_t prompt = hash_combine(o.seed, p);
      w.spans.push_back({stream_id(StreamKind::kPrompt, prompt), 0, sys, q});
    }
    r.num_spans = uint32_t(w.spans.size() - r.first_span);
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
  check_count(o.num_turns, 1, kMaxSyntheticRequests, field::kNumTurns);
  if (!(o.think_time_s >= 0 && o.think_time_s <= 1e6)) {
    throw Error(field::kThinkTimeS, "must be in [0, 1e6] seconds");
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
        throw Error(field::kNumTurns,
                    format("turn %zu of a session would bring %lld prompt tokens, "
                           "more than 2^31-1",
                           t + 1, (long long)input));
      }
      if (!(at <= kMaxSimTime_s)) {
        throw Error(field::kThinkTimeS, format("turn %zu of a session would arrive at %.6g s, past "
                                               "the %g s horizon",
                                               t + 1, at, kMaxSimTime_s));
      }
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

namespace {
constexpr double kMaxClassRate = 1e9;  // req/s
}  // namespace

std::vector<ClientClass> parse_client_mix(const std::string& text) {
  std::vector<ClientClass> out;
  std::istringstream classes(text);
  for (std::string item; std::getline(classes, item, ';');) {
    ClientClass c;
    bool has_rate = false;
    std::istringstream fields(item);
    for (std::string kv; std::getline(fields, kv, ',');) {
      const size_t eq = kv.find('=');
      // Spaces around keys and values are the writer's layout: "rate = 2, input = fixed:100".
      const std::string key(trim(kv.substr(0, eq))),
          value(eq == std::string::npos ? "" : trim(kv.substr(eq + 1)));
      auto number = [&](double& v) {
        char* end = nullptr;
        v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !std::isfinite(v) || !(v > 0)) {
          throw Error(field::kClientMix, "'" + kv + "': " + key + " must be a number > 0");
        }
      };
      if (key == "rate") {
        number(c.rate);
        // Bounded so that the classes' sum stays finite: it splits --num-requests.
        if (c.rate > kMaxClassRate) {
          throw Error(field::kClientMix, "'" + kv + "': rate must be at most 1e9 req/s");
        }
        has_rate = true;
      } else if (key == "burstiness") {
        number(c.burstiness);
      } else if (key == "input") {
        c.input_len = LengthDist::parse(value, field::kClientMix);
      } else if (key == "output") {
        c.output_len = LengthDist::parse(value, field::kClientMix);
      } else {
        throw Error(field::kClientMix,
                    "'" + kv + "': expected rate=, burstiness=, input= or output=");
      }
    }
    if (!has_rate)
      throw Error(field::kClientMix, "'" + item + "': every class needs rate=R (req/s)");
    out.push_back(c);
  }
  if (out.empty()) throw Error(field::kClientMix, "give at least one class: rate=R,...;rate=R,...");
  return out;
}

Workload generate_client_mixture(const std::vector<ClientClass>& classes, int64_t num_requests,
                                 double rate_scale, uint64_t seed) {
  if (!(rate_scale > 0) || !std::isfinite(rate_scale)) {
    throw Error(field::kRequestRate, "must be a finite number > 0 for a client mixture");
  }
  // NUM_REQUESTS split in proportion to the rates by largest remainders (Hamilton's method): the
  // shares sum to exactly NUM_REQUESTS, ties going to the earlier class; a class whose share
  // rounds to nothing sends nothing.
  double total = 0;
  for (const ClientClass& c : classes)
    total += c.rate;
  std::vector<int64_t> share(classes.size());
  std::vector<std::pair<double, size_t>> remainder;
  int64_t given = 0;
  for (size_t k = 0; k < classes.size(); ++k) {
    const double exact = double(num_requests) * (classes[k].rate / total);
    share[k] = std::min<int64_t>(num_requests - given, int64_t(std::floor(exact)));
    given += share[k];
    remainder.emplace_back(exact - std::floor(exact), k);
  }
  std::stable_sort(remainder.begin(), remainder.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < num_requests; i = (i + 1) % remainder.size(), ++given)
    ++share[remainder[i].second];
  std::vector<RequestSpec> all;
  for (size_t k = 0; k < classes.size(); ++k) {
    const ClientClass& c = classes[k];
    if (share[k] == 0) continue;
    SyntheticOptions o;
    o.num_requests = share[k];
    o.request_rate = c.rate * rate_scale;
    o.burstiness = c.burstiness;
    o.input_len = c.input_len;
    o.output_len = c.output_len;
    o.seed = hash_combine(seed, k);
    const Workload w = generate_synthetic(o);
    all.insert(all.end(), w.begin(), w.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const RequestSpec& a, const RequestSpec& b) {
    return a.arrival_s < b.arrival_s;
  });
  Workload out(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    out[i] = all[i];
    out[i].id = uint32_t(i);
  }
  return out;
}

}  // namespace servesim
