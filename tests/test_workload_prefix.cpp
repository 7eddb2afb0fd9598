// Workload content for the prefix cache: Mooncake hash ids and sessions as token spans, spans
// through the what-if transforms and the trace store, vLLM bench's prefix_repetition and the
// multi_turn generator, CSV priorities, and the dataset flags' errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/run_spec.hpp"
#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "trace_fixtures.hpp"
#include "traces/datasets.hpp"
#include "traces/import.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace_store.hpp"
#include "traces/transform.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"

using namespace servesim;
using servesim::test::error_field;
using servesim::test::fixture;
using servesim::test::span_tuples;
using Spans = std::vector<std::tuple<uint64_t, int32_t, int32_t, int32_t>>;

namespace {

uint64_t block(uint64_t id) {
  return stream_id(StreamKind::kTraceBlock, id);
}
uint64_t session(uint64_t s) {
  return stream_id(StreamKind::kSession, s);
}

// Request I's spans.
Spans spans_of(const Workload& w, size_t i) {
  const auto first = w.spans.begin() + std::ptrdiff_t(w[i].first_span);
  return span_tuples(std::vector<TokenSpan>(first, first + std::ptrdiff_t(w[i].num_spans)));
}

// Everything a Workload says, for comparing two.
std::vector<std::tuple<uint32_t, double, int32_t, int32_t, int32_t, bool, Spans>> everything(
    const Workload& w) {
  std::vector<std::tuple<uint32_t, double, int32_t, int32_t, int32_t, bool, Spans>> v;
  for (size_t i = 0; i < w.size(); ++i) {
    v.emplace_back(w[i].id, w[i].arrival_s, w[i].input_tokens, w[i].output_tokens, w[i].priority,
                   w[i].output_continues, spans_of(w, i));
  }
  return v;
}

// A trace of two turns of session 4 and one request of no session.
Trace session_trace() {
  Trace t;
  t.push(0, 10, 5);  // turn 1: 10 tokens, answers 5
  t.push(1, 2, 3);   // no session
  t.push(2, 20, 4);  // turn 2: turn 1, its answer and 5 new tokens
  t.session_id = {4, -1, 4};
  t.counts.rows_read = 3;
  return t;
}

}  // namespace

TEST_CASE("mooncake hash ids: one span per block, the last one partial", "[workload][prefix]") {
  ImportOptions o;
  o.hash_block_size = 4;
  const Trace t = import_trace(
      fixture("prefix.jsonl",
              "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [7, "
              "8, 9]}\n"
              "{\"timestamp\": 5, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [7]}\n"
              "{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [7, "
              "3]}\n"),
      o);
  const Workload w = to_workload(t);
  REQUIRE(w.size() == 3);
  CHECK(spans_of(w, 0) == Spans{{block(7), 0, 0, 4}, {block(8), 0, 4, 4}, {block(9), 0, 8, 2}});
  CHECK(spans_of(w, 1) == Spans{{block(7), 0, 0, 4}});
  CHECK(spans_of(w, 2) == Spans{{block(7), 0, 0, 4}, {block(3), 0, 4, 1}});
  for (const RequestSpec& r : w)
    CHECK_FALSE(r.output_continues);
  // Streams of different kinds never meet: hash id 3 is not session 3 nor prefix 3.
  CHECK(block(3) != session(3));
  CHECK(block(3) != stream_id(StreamKind::kPrefix, 3));
}

TEST_CASE("sessions: a turn's prompt is the conversation so far, and its answer continues it",
          "[workload][prefix]") {
  const Workload w = to_workload(session_trace());
  CHECK(spans_of(w, 0) == Spans{{session(4), 0, 0, 10}});
  CHECK(w[0].output_continues);
  CHECK(w[1].num_spans == 0);
  CHECK_FALSE(w[1].output_continues);
  CHECK(spans_of(w, 2) == Spans{{session(4), 0, 0, 20}});
  CHECK(w[2].output_continues);
}

TEST_CASE("transforms: session spans follow trims and clips, answers stop continuing when cut",
          "[workload][prefix]") {
  Trace trim = session_trace();
  TransformOptions o;
  o.input_trim = 3;  // 10 -> 7, 2 -> 1 (its last token), 20 -> 17
  apply_transforms(trim, o);
  Workload w = to_workload(trim);
  CHECK(spans_of(w, 0) == Spans{{session(4), 3, 0, 7}});
  CHECK(w[0].output_continues);  // the conversation lost its start, and still ends here
  CHECK(w[1].num_spans == 0);
  CHECK(spans_of(w, 2) == Spans{{session(4), 3, 0, 17}});
  CHECK_THAT(trim.options, Catch::Contains("sessions as spans"));

  Trace clip = session_trace();
  TransformOptions c;
  c.max_input_len = 12;  // turn 2 loses its last 8 tokens: its answer no longer follows them
  apply_transforms(clip, c);
  w = to_workload(clip);
  CHECK(spans_of(w, 2) == Spans{{session(4), 0, 0, 12}});
  CHECK_FALSE(w[2].output_continues);
  CHECK(w[0].output_continues);

  Trace longer = session_trace();
  TransformOptions l;
  l.output_scale = 2;  // the extra answer tokens are not in the next turn
  apply_transforms(longer, l);
  w = to_workload(longer);
  CHECK(spans_of(w, 0) == Spans{{session(4), 0, 0, 10}});
  CHECK_FALSE(w[0].output_continues);

  Trace shorter = session_trace();
  TransformOptions s;
  s.output_scale = 0.5;  // a shorter answer is the start of the same answer
  apply_transforms(shorter, s);
  CHECK_FALSE(shorter.has_spans());
  CHECK(to_workload(shorter)[0].output_continues);
}

TEST_CASE("transforms: spans of generated requests survive windows, scales and the round trip",
          "[workload][prefix]") {
  Workload w(2);
  w[0].arrival_s = 0;
  w[1].arrival_s = 3;
  for (RequestSpec& r : w) {
    r.input_tokens = 8;
    r.output_tokens = 2;
  }
  w[1].id = 1;
  w[1].priority = -2;
  w.spans = {{11, 0, 0, 5}, {12, 4, 0, 3}, {13, 0, 3, 5}};
  w[0].num_spans = 1;  // 5 shared tokens, 3 of its own
  w[1].first_span = 1;
  w[1].num_spans = 2;
  w[1].output_continues = true;
  CHECK(everything(to_workload(from_workload(w))) == everything(w));

  Trace window = from_workload(w);
  TransformOptions o;
  parse_window("1:10", o);  // request 1 only, now at t = 2
  apply_transforms(window, o);
  const Workload one = to_workload(window);
  REQUIRE(one.size() == 1);
  CHECK(one[0].priority == -2);
  CHECK(spans_of(one, 0) == Spans{{12, 4, 0, 3}, {13, 0, 3, 5}});
  CHECK(one[0].output_continues);

  Trace half = from_workload(w);
  TransformOptions h;
  h.input_scale = 0.5;  // the first 4 tokens
  apply_transforms(half, h);
  const Workload cut = to_workload(half);
  CHECK(spans_of(cut, 0) == Spans{{11, 0, 0, 4}});
  CHECK(spans_of(cut, 1) == Spans{{12, 4, 0, 3}, {13, 0, 3, 1}});
  CHECK_FALSE(cut[1].output_continues);

  Trace trimmed = from_workload(w);
  TransformOptions t;
  t.input_trim = 4;  // request 1's first span goes; 1 token of request 0's remains shared
  apply_transforms(trimmed, t);
  const Workload rest = to_workload(trimmed);
  CHECK(spans_of(rest, 0) == Spans{{11, 4, 0, 1}});
  CHECK(spans_of(rest, 1) == Spans{{13, 1, 0, 4}});
  CHECK(rest[1].output_continues);
}

TEST_CASE("store: spans, answers that continue and priorities survive HDF5", "[workload][prefix]") {
  Trace t = from_workload(to_workload(session_trace()));
  t.priority = {3, -1, 0};
  const auto dir = servesim::test::scratch("prefix_store");
  const std::string path = (dir / "spans.h5").string();
  write_trace_h5(path, t);
  const Trace back = read_trace_h5(path);
  servesim::test::require_same(t, back);
  CHECK(back.has_spans());

  Trace bad = t;
  bad.spans[0].prompt_pos = 1;  // a gap at the prompt's start
  write_trace_h5(path, bad);
  CHECK_THROWS_WITH(read_trace_h5(path), Catch::Contains("field 'spans'"));
}

TEST_CASE("csv: --col-priority gives each request its priority, sorted with its row",
          "[workload][prefix]") {
  ImportOptions o;
  o.format = "csv";
  o.col_arrival = "t";
  o.col_input = "in";
  o.col_output = "out";
  o.col_priority = "prio";
  const Trace t =
      import_trace(fixture("prio.csv", "t,in,out,prio\n2,10,1,5\n0,20,2,-3\n1,30,3,0\n"), o);
  CHECK(t.input_tokens == std::vector<int32_t>{20, 30, 10});
  CHECK(t.priority == std::vector<int32_t>{-3, 0, 5});
  const Workload w = to_workload(t);
  CHECK(w[0].priority == -3);
  CHECK(w[2].priority == 5);
  CHECK_THROWS_WITH(import_trace(fixture("prio_bad.csv", "t,in,out,prio\n0,1,1,1.5\n"), o),
                    Catch::Contains("field 'prio'"));
  CHECK(o.describe().find("--col-priority prio") != std::string::npos);
}

TEST_CASE("prefix_repetition: num_requests // num_prefixes prompts a prefix, shuffled by seed",
          "[workload][prefix]") {
  PrefixRepetitionOptions o;
  o.num_requests = 23;  // 5 prefixes x 4 prompts; vLLM drops the other 3
  o.num_prefixes = 5;
  o.prefix_len = 6;
  o.suffix_len = 3;
  o.output_len = 2;
  o.request_rate = 4;
  o.seed = 7;
  const Workload w = generate_prefix_repetition(o);
  REQUIRE(w.size() == 20);
  CHECK(o.num_made() == 20);
  std::map<uint64_t, int> per_stream;
  std::vector<uint64_t> order;
  const std::vector<double> arrivals = generate_arrivals(20, 4, 1, 7);
  for (size_t i = 0; i < w.size(); ++i) {
    CHECK(w[i].id == i);
    CHECK(w[i].arrival_s == arrivals[i]);
    CHECK(w[i].input_tokens == 9);
    CHECK(w[i].output_tokens == 2);
    CHECK_FALSE(w[i].output_continues);
    REQUIRE(w[i].num_spans == 1);
    const TokenSpan& s = w.spans[w[i].first_span];
    CHECK(std::make_tuple(s.stream_pos, s.prompt_pos, s.tokens) == std::make_tuple(0, 0, 6));
    ++per_stream[s.stream];
    order.push_back(s.stream);
  }
  CHECK(per_stream.size() == 5);
  for (const auto& [stream, n] : per_stream)
    CHECK(n == 4);
  // The prefix of prompt p is stream kPrefix(hash(seed, p)); before the shuffle, vLLM's order is
  // prefix 0's four prompts, then prefix 1's, ...
  std::vector<uint64_t> unshuffled;
  for (uint64_t p = 0; p < 5; ++p) {
    CHECK(per_stream.count(stream_id(StreamKind::kPrefix, hash_combine(7, p))) == 1);
    unshuffled.insert(unshuffled.end(), 4, stream_id(StreamKind::kPrefix, hash_combine(7, p)));
  }
  CHECK(order != unshuffled);
  std::vector<uint64_t> sorted_order = order, sorted_unshuffled = unshuffled;
  std::sort(sorted_order.begin(), sorted_order.end());
  std::sort(sorted_unshuffled.begin(), sorted_unshuffled.end());
  CHECK(sorted_order == sorted_unshuffled);

  CHECK(everything(generate_prefix_repetition(o)) == everything(w));
  PrefixRepetitionOptions other = o;
  other.seed = 8;
  const Workload v = generate_prefix_repetition(other);
  CHECK(v.spans[0].stream != w.spans[0].stream);  // other prefixes altogether

  PrefixRepetitionOptions few = o;
  few.num_requests = 4;
  CHECK(error_field([&] { generate_prefix_repetition(few); }) == "prefix-repetition-num-prefixes");
  PrefixRepetitionOptions empty = o;
  empty.prefix_len = 0;
  CHECK(error_field([&] { generate_prefix_repetition(empty); }) == "prefix-repetition-prefix-len");
  PrefixRepetitionOptions silent = o;
  silent.output_len = 0;
  CHECK(error_field([&] { generate_prefix_repetition(silent); }) == "prefix-repetition-output-len");
}

TEST_CASE("multi_turn: each turn resends the conversation, sessions start at rate / turns",
          "[workload][prefix]") {
  MultiTurnOptions o;
  o.base.num_requests = 7;  // sessions of 3, 3 and 1 turns
  o.base.request_rate = 6;  // sessions start at 2 per second
  o.base.input_len = LengthDist::parse("uniform:1:50", "input-len");
  o.base.output_len = LengthDist::parse("uniform:1:20", "output-len");
  o.base.seed = 3;
  o.num_turns = 3;
  o.think_time_s = 4;
  const Workload w = generate_multi_turn(o);
  REQUIRE(w.size() == 7);
  // The draws the generator makes, in generation order (session by session, turn by turn).
  const std::vector<int32_t> fresh = draw_lengths(o.base.input_len, 7, 3 * 3 + 1);
  const std::vector<int32_t> answers = draw_lengths(o.base.output_len, 7, 3 * 3 + 2);
  const std::vector<double> starts = generate_arrivals(3, 2, 1, 3);
  std::map<uint64_t, size_t> session_of;
  for (uint64_t s = 0; s < 3; ++s)
    session_of[session(hash_combine(3, s))] = s;
  std::map<size_t, std::vector<size_t>> turns;  // session -> request ids in arrival order
  for (size_t i = 0; i < w.size(); ++i) {
    CHECK(w[i].id == i);
    if (i > 0) CHECK(w[i].arrival_s >= w[i - 1].arrival_s);
    REQUIRE(w[i].num_spans == 1);
    const TokenSpan& s = w.spans[w[i].first_span];
    CHECK(std::make_tuple(s.stream_pos, s.prompt_pos, s.tokens) ==
          std::make_tuple(0, 0, w[i].input_tokens));
    CHECK(w[i].output_continues);
    REQUIRE(session_of.count(s.stream) == 1);
    turns[session_of[s.stream]].push_back(i);
  }
  REQUIRE(turns.size() == 3);
  CHECK(turns[0].size() == 3);
  CHECK(turns[1].size() == 3);
  CHECK(turns[2].size() == 1);  // cut short: the requests ran out
  for (size_t s = 0; s < 3; ++s) {
    const std::vector<size_t>& ids = turns[s];
    CHECK(w[ids[0]].arrival_s == starts[s]);
    for (size_t t = 0; t < ids.size(); ++t) {
      const size_t k = s * 3 + t;  // generation order
      const RequestSpec& r = w[ids[t]];
      CHECK(r.output_tokens == answers[k]);
      // input_{t+1} = input_t + output_t + new user tokens.
      const int32_t expected =
          t == 0 ? fresh[k] : w[ids[t - 1]].input_tokens + w[ids[t - 1]].output_tokens + fresh[k];
      CHECK(r.input_tokens == expected);
      if (t > 0) CHECK(r.arrival_s > w[ids[t - 1]].arrival_s);
    }
  }
  CHECK(everything(generate_multi_turn(o)) == everything(w));
}

TEST_CASE("multi_turn: think times are exponential with the mean asked, 0 sends turns together",
          "[workload][prefix]") {
  MultiTurnOptions o;
  o.base.num_requests = 4000;
  o.base.request_rate = std::numeric_limits<double>::infinity();  // every session starts at 0
  o.num_turns = 2;
  o.think_time_s = 10;
  const Workload w = generate_multi_turn(o);
  // 2000 sessions start at 0; their second turns arrive Exp(mean 10 s) later: the mean of 2000
  // draws is within 10% (4.5 standard errors), and the largest is well past the mean.
  double sum = 0, largest = 0;
  int at_zero = 0;
  for (const RequestSpec& r : w) {
    if (r.arrival_s == 0) {
      ++at_zero;
      continue;
    }
    sum += r.arrival_s;
    largest = std::max(largest, r.arrival_s);
  }
  CHECK(at_zero == 2000);
  CHECK(sum / 2000 == Approx(10).epsilon(0.1));
  CHECK(largest > 40);
  o.think_time_s = 0;
  for (const RequestSpec& r : generate_multi_turn(o))
    CHECK(r.arrival_s == 0);

  MultiTurnOptions bad = o;
  bad.num_turns = 0;
  CHECK(error_field([&] { generate_multi_turn(bad); }) == "num-turns");
  bad = o;
  bad.think_time_s = -1;
  CHECK(error_field([&] { generate_multi_turn(bad); }) == "think-time-s");
  bad.think_time_s = std::numeric_limits<double>::infinity();
  CHECK(error_field([&] { generate_multi_turn(bad); }) == "think-time-s");
  bad.think_time_s = std::nan("");
  CHECK(error_field([&] { generate_multi_turn(bad); }) == "think-time-s");
}

namespace {

// FLAGS given (at their default values) on S.
void give(RunSpec& s, const std::set<std::string>& flags) {
  for (const std::string& f : flags) {
    if (f == "num-turns") s.num_turns.mark_given();
    if (f == "think-time-s") s.think_time_s.mark_given();
    if (f == "prefix-repetition-prefix-len") s.prefix_repetition_prefix_len.mark_given();
    if (f == "prefix-repetition-num-prefixes") s.prefix_repetition_num_prefixes.mark_given();
    if (f == "input-len") s.input_len.mark_given();
    if (f == "output-len") s.output_len.mark_given();
    if (f == "num-requests") s.num_requests.mark_given();
  }
}

RunSpec dataset_spec(const std::string& name, const std::set<std::string>& flags) {
  RunSpec s;
  s.dataset_name = name;
  give(s, flags);
  return s;
}

}  // namespace

TEST_CASE("dataset flags that would do nothing, or are out of range, are errors naming them",
          "[workload][prefix][errors]") {
  auto field = [](const RunSpec& s) {
    return error_field([&] {
      check_flags(s);
      Inputs inputs;
      load_workload(s, inputs);
    });
  };
  CHECK(field(dataset_spec("sharegpt", {})) == "dataset-name");
  RunSpec traced = dataset_spec("random", {});
  traced.trace = "any.csv";
  CHECK(field(traced) == "dataset-name");
  traced.dataset_name.forget();
  give(traced, {"num-turns"});
  CHECK(field(traced) == "num-turns");
  CHECK(field(dataset_spec("random", {"num-turns"})) == "num-turns");
  CHECK(field(dataset_spec("prefix_repetition", {"think-time-s"})) == "think-time-s");
  CHECK(field(dataset_spec("multi_turn", {"prefix-repetition-prefix-len"})) ==
        "prefix-repetition-prefix-len");
  CHECK(field(dataset_spec("random", {"prefix-repetition-num-prefixes"})) ==
        "prefix-repetition-num-prefixes");
  CHECK(field(dataset_spec("prefix_repetition", {"input-len"})) == "input-len");
  CHECK(field(dataset_spec("prefix_repetition", {"output-len"})) == "output-len");
  RunSpec few = dataset_spec("prefix_repetition", {"num-requests"});
  few.num_requests = 9;  // 10 prefixes by default
  CHECK(field(few) == "prefix-repetition-num-prefixes");
  RunSpec suffix = dataset_spec("prefix_repetition", {});
  suffix.prefix_repetition_suffix_len = -1;
  CHECK(field(suffix) == "prefix-repetition-suffix-len");
  RunSpec turns = dataset_spec("multi_turn", {});
  turns.num_turns = 0;
  CHECK(field(turns) == "num-turns");
  RunSpec think = dataset_spec("multi_turn", {});
  think.think_time_s = -0.5;
  CHECK(field(think) == "think-time-s");
  CHECK(field(dataset_spec("multi_turn", {"num-turns", "think-time-s"})) == "");

  const auto r = servesim::test::call_cli({"run", "--num-turns", "3"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("num-turns") && Catch::Contains("multi_turn"));
}

TEST_CASE("load_workload: the description names the dataset, and what-if transforms keep spans",
          "[workload][prefix]") {
  Inputs inputs;
  RunSpec p = dataset_spec("prefix_repetition", {"num-requests"});
  p.num_requests = 25;
  p.prefix_repetition_num_prefixes = 4;  // 4 x 6: one request dropped
  const LoadedWorkload a = load_workload(p, inputs);
  CHECK(a.requests.size() == 24);
  CHECK(a.json["dataset_name"] == "prefix_repetition");
  CHECK(a.json["num_requests"] == 24);
  CHECK(a.json["num_prefixes"] == 4);
  CHECK(a.json["prefix_len"] == 256);
  CHECK(a.json["suffix_len"] == 256);
  CHECK(a.json["input_len"] == "fixed:512");
  CHECK(a.json["output_len"] == "fixed:128");
  CHECK_THAT(a.text, Catch::StartsWith("prefix_repetition, 24 requests") &&
                         Catch::Contains("4 prefixes of 256 tokens, 6 prompts each"));

  RunSpec clipped = p;
  clipped.what_if.max_input_len = 200;  // inside the prefix
  const LoadedWorkload c = load_workload(clipped, inputs);
  REQUIRE(c.requests.size() == 24);
  for (size_t i = 0; i < c.requests.size(); ++i) {
    CHECK(c.requests[i].input_tokens == 200);
    REQUIRE(c.requests[i].num_spans == 1);
    CHECK(c.requests.spans[c.requests[i].first_span].tokens == 200);
    CHECK(c.requests.spans[c.requests[i].first_span].stream ==
          a.requests.spans[a.requests[i].first_span].stream);
  }
  CHECK(c.json["transforms"]["max_input_len"] == 200);
  CHECK(c.json["transforms"]["input_scale"] == 1.0);

  RunSpec m = dataset_spec("multi_turn", {"num-turns", "think-time-s"});
  m.num_requests = 12;
  m.num_turns = 4;
  m.think_time_s = 2.5;
  const LoadedWorkload b = load_workload(m, inputs);
  CHECK(b.requests.size() == 12);
  CHECK(b.json["dataset_name"] == "multi_turn");
  CHECK(b.json["num_turns"] == 4);
  CHECK(b.json["think_time_s"] == 2.5);
  CHECK_THAT(b.text, Catch::StartsWith("multi_turn, 12 requests") &&
                         Catch::Contains("4 turns a session, think time 2.5 s"));
  RunSpec first = m;
  first.what_if.max_requests = 5;
  const LoadedWorkload f = load_workload(first, inputs);
  REQUIRE(f.requests.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(spans_of(f.requests, i) == spans_of(b.requests, i));
    CHECK(f.requests[i].output_continues);
  }
  // The random dataset is described as before.
  CHECK_FALSE(load_workload(RunSpec{}, inputs).json.contains("dataset_name"));
}
