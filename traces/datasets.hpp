// vLLM bench's datasets whose requests share content, for the prefix cache: generated Workloads
// with token spans (traces/request.hpp), arrivals from generate_arrivals (traces/synthetic.hpp).
//  - prefix_repetition mirrors vLLM's PrefixRepetitionRandomDataset.sample()
//    (vllm/benchmarks/datasets/prefix_repetition.py, vllm-project/vllm@237145ea; before the
//    split, vllm/benchmarks/datasets.py): NUM_PREFIXES prefixes of PREFIX_LEN tokens, each the
//    start of num_requests / num_prefixes prompts (integer division: vLLM drops the remainder and
//    refuses fewer requests than prefixes, and so does this), each prompt ending in SUFFIX_LEN
//    tokens of its own, every request asking OUTPUT_LEN tokens; the list, built prefix by prefix,
//    is shuffled with the seed (vLLM's random.shuffle) and sent in that order. The shuffle is
//    Fisher-Yates on Boost's mt19937_64, so the order is not Python's, only as random.
//  - multi_turn: conversations. Each session has NUM_TURNS turns; turn 1's prompt draws
//    --input-len tokens, turn t+1's prompt is turn t's prompt, then turn t's answer, then new
//    user tokens drawn from --input-len; answers draw --output-len. Session starts arrive at
//    request_rate / num_turns per second (so requests arrive at about request_rate); turn t+1
//    arrives an exponential think time (mean THINK_TIME_S) after turn t arrives. NUM_REQUESTS
//    counts requests (turns): the last session is cut short when they run out.
//  - shared_prefix mirrors inference-perf's SharedPrefixDataGenerator (kubernetes-sigs/
//    inference-perf, inference_perf/datagen/shared_prefix_datagen.py), the load of the public vLLM
//    ground-truth runs: NUM_GROUPS system prompts of SYSTEM_PROMPT_LEN tokens, each followed by
//    USERS_PER_GROUP questions of QUESTION_LEN tokens of their own; the GROUPS x USERS prompts,
//    built group by group, are shuffled once and request i sends prompt i mod (GROUPS x USERS),
//    so a prompt comes back whole every GROUPS x USERS requests. Every request asks OUTPUT_LEN
//    tokens. Load comes in STAGES run back to back, each round(rate x duration) requests at
//    uniformly random times in its window (a Poisson process given its count).
// Content: a prefix_repetition prompt is one span {stream_id(kPrefix, p), 0, 0, prefix_len} and
// its own suffix; a multi_turn prompt is one span {stream_id(kSession, s), 0, 0, input_tokens}
// whose output continues the stream (the next turn's prompt holds it). p and s are mixed with
// the seed, so that replicates (--num-seeds) share nothing with each other.
// Promises: requests sorted by arrival (ties in generation order) with ids 0..N-1 in that order;
// the same options give the same Workload on every machine (Boost.Random, one engine per stream:
// arrivals as generate_synthetic's, new-user and answer lengths from its input and output
// engines, think times and the shuffle from their own); bad options throw Error naming the flag.
#pragma once

#include <cstdint>
#include <vector>

#include "traces/request.hpp"
#include "traces/synthetic.hpp"
#include "util/field_path.hpp"

namespace servesim {

struct PrefixRepetitionOptions {
  int64_t num_requests = 1000;  // asked for: num_prefixes * (num_requests / num_prefixes) made
  double request_rate = 10;     // requests per second; infinity = all at t = 0
  double burstiness = 1.0;      // Gamma shape
  int64_t prefix_len = 256, suffix_len = 256, num_prefixes = 10, output_len = 128;
  uint64_t seed = 0;

  // The requests made: vLLM's num_prefixes * (num_requests // num_prefixes).
  int64_t num_made() const { return num_prefixes * (num_requests / num_prefixes); }
};

// Throws Error naming the flag when an option is out of range or num_requests < num_prefixes.
Workload generate_prefix_repetition(const PrefixRepetitionOptions& opt);

struct LoadStage {
  double rate = 1;         // requests per second
  double duration_s = 60;  // seconds
};

struct SharedPrefixOptions {
  int64_t num_groups = 10, users_per_group = 5;
  int64_t system_prompt_len = 100, question_len = 400, output_len = 250;
  std::vector<LoadStage> stages = {LoadStage{}};
  uint64_t seed = 0;
};

// Throws Error naming the field when an option is out of range.
Workload generate_shared_prefix(const SharedPrefixOptions& opt);

struct MultiTurnOptions {
  // num_requests counts turns; input_len is the new user tokens of a turn; request_rate is in
  // requests (turns) per second.
  SyntheticOptions base;
  int64_t num_turns = 5;
  double think_time_s = 10;
};

// Throws Error naming the flag when an option is out of range or a prompt outgrows int32.
Workload generate_multi_turn(const MultiTurnOptions& opt);

// A client mixture, in the spirit of ServeGen's client pools: several classes of clients, each
// with its own arrival process (Gamma gaps of its rate and burstiness, as generate_arrivals) and
// its own length distributions, over the same span. NUM_REQUESTS is split between the classes in
// proportion to their rates (largest remainders: exactly NUM_REQUESTS in all); RATE_SCALE
// multiplies every rate.
struct ClientClass {
  double rate = 1, burstiness = 1;
  LengthDist input_len = LengthDist::parse("fixed:512", field::kClientMix);
  LengthDist output_len = LengthDist::parse("fixed:128", field::kClientMix);
};
// "rate=2,burstiness=0.5,input=lognormal:1024:0.8,output=fixed:128;rate=5,input=fixed:200"
// (classes separated by ';'; rate required; burstiness 1, input fixed:512 and output fixed:128 by
// default): Error naming --client-mix on a bad class.
std::vector<ClientClass> parse_client_mix(const std::string& text);
// Requests sorted by arrival with ids 0..N-1; each class from its own engines (seed mixed with
// its index), so adding a class leaves the others' requests as they were.
Workload generate_client_mixture(const std::vector<ClientClass>& classes, int64_t num_requests,
                                 double rate_scale, uint64_t seed);

}  // namespace servesim
