// The parts everything stands on, each alone (issue 26: they were only tested through whole
// runs): the event loop's order, the request queue, the metrics collector on a hand-worked run,
// INI and line reading, and the parallel loop's promises.
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "cli_helpers.hpp"
#include "scheduler/request_queue.hpp"
#include "sim/event_loop.hpp"
#include "sim/metrics.hpp"
#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/parallel.hpp"
#include "util/text_input.hpp"

using namespace servesim;

namespace {

// Records every event it handles as (time, tag); tag 100 schedules two more events at its time.
struct Recorder final : EventLoop::Process {
  std::vector<std::pair<double, uint32_t>> seen;
  void handle(EventLoop& loop, uint32_t tag) override {
    seen.emplace_back(loop.now(), tag);
    if (tag == 100) {
      loop.schedule(loop.now(), EventLoop::kWake, this, 101);
      loop.schedule(loop.now(), EventLoop::kArrival, this, 102);
    }
  }
};

// The text of the Error F throws ("" when none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("EventLoop: events run by time, then priority, then the order they were scheduled",
          "[sim][foundations]") {
  EventLoop loop;
  Recorder r;
  loop.schedule(2.0, EventLoop::kStepDone, &r, 1);
  loop.schedule(1.0, EventLoop::kWake, &r, 2);
  loop.schedule(1.0, EventLoop::kArrival, &r, 3);
  loop.schedule(1.0, EventLoop::kArrival, &r, 4);  // same time and priority: after 3
  loop.schedule(1.0, EventLoop::kStepDone, &r, 100);
  loop.run();
  // At t=1: the arrivals (3, 4), the step done (100, which schedules 101 and 102 at t=1: the
  // new arrival 102 runs before the wake 2, which precedes 101 by sequence), then t=2.
  const std::vector<std::pair<double, uint32_t>> want = {
      {1.0, 3}, {1.0, 4}, {1.0, 100}, {1.0, 102}, {1.0, 2}, {1.0, 101}, {2.0, 1}};
  CHECK(r.seen == want);
  CHECK(loop.processed() == 7);
  CHECK(loop.now() == 2.0);
  // Time never goes backwards.
  for (size_t i = 1; i < r.seen.size(); ++i)
    CHECK(r.seen[i].first >= r.seen[i - 1].first);
}

TEST_CASE("RequestQueue: both ends, growth that keeps the order, removal that keeps it",
          "[scheduler][foundations]") {
  RequestQueue q(2);
  CHECK(q.empty());
  for (uint32_t id = 0; id < 10; ++id)
    q.push_back(id);  // grows 2 -> 4 -> 8 -> 16
  q.push_front(100);
  REQUIRE(q.size() == 11);
  CHECK(q.front() == 100);
  CHECK(q.back() == 9);
  for (size_t i = 1; i < q.size(); ++i)
    CHECK(q[i] == uint32_t(i - 1));
  q.remove_if([](uint32_t id) { return id % 3 == 0; });  // 100 is not a multiple of 3
  std::vector<uint32_t> left;
  for (size_t i = 0; i < q.size(); ++i)
    left.push_back(q[i]);
  CHECK(left == std::vector<uint32_t>{100, 1, 2, 4, 5, 7, 8});
  q.pop_front();
  q.pop_back();
  CHECK(q.front() == 1);
  CHECK(q.back() == 7);
  RequestQueue zero(0);  // a zero capacity still grows
  zero.push_front(5);
  zero.push_front(6);
  CHECK(zero.size() == 2);
  CHECK(zero.front() == 6);
}

TEST_CASE("MetricsCollector: a hand-worked run of three requests, one rejected",
          "[sim][foundations]") {
  Workload w(3);
  for (uint32_t i = 0; i < 3; ++i)
    w[i].id = i;
  w[2].arrival_s = 2.0;
  MetricsCollector m(w);
  m.on_arrival(0, 0.0, true);
  m.on_arrival(1, 0.0, true);
  m.on_arrival(2, 2.0, false);
  auto shape = [](int32_t tokens, bool prefill) {
    SeqShape s;
    s.new_tokens = tokens;
    s.prefill = prefill;
    s.emits_token = true;
    return s;
  };
  auto cost = [](double seconds) {
    StepCost c;
    c.seconds = seconds;
    c.flops = 1e9;
    return c;
  };
  // Step 1 at t=0 for 0.5 s: both prompts (10 + 20 tokens) with 5 KV blocks, 1 request waiting.
  Batch b;
  b.add(0, shape(10, true));
  b.add(1, shape(20, true));
  m.on_scheduled(0, 0.0);
  m.on_scheduled(1, 0.0);
  m.on_step(0.0, cost(0.5), b, 5, 1);
  m.on_token(0, 0.5, true);
  m.on_token(1, 0.5, true);  // request 1's only token
  // Steps 2 and 3: request 0 decodes, 0.1 s then 0.3 s, 6 blocks, nothing waiting.
  b.clear();
  b.add(0, shape(1, false));
  m.on_step(0.5, cost(0.1), b, 6, 0);
  m.on_token(0, 0.6, false);
  m.on_step(0.6, cost(0.3), b, 6, 0);
  m.on_token(0, 0.9, false);

  std::vector<SeqState> seqs(3);
  seqs[0].input_tokens = 10;
  seqs[0].output_tokens = seqs[0].generated = 3;
  seqs[1].input_tokens = 20;
  seqs[1].output_tokens = seqs[1].generated = 1;
  seqs[0].status = seqs[1].status = SeqStatus::kFinished;
  seqs[2].input_tokens = 5;
  seqs[2].output_tokens = 5;
  seqs[2].status = SeqStatus::kRejected;
  seqs[2].reject = RejectReason::kContextLength;
  const std::vector<RequestRecord> records = m.records(seqs);
  REQUIRE(records.size() == 3);
  CHECK(records[0].ttft_s() == Approx(0.5));
  CHECK(records[0].max_itl_s == Approx(0.3));
  CHECK(records[0].tpot_s() == Approx(0.2));  // (0.9 - 0.5) / 2 gaps
  CHECK_FALSE(records[1].has_decode());

  const RunSummary s = m.summary(records, /*peak_flops=*/1e10, /*peak_bytes_per_s=*/1e12, 10);
  CHECK(s.total == 3);
  CHECK(s.completed == 2);
  CHECK(s.rejected == 1);
  CHECK(s.rejected_by_reason[int(RejectReason::kContextLength)] == 1);
  CHECK(s.input_tokens == 30);
  CHECK(s.output_tokens == 4);
  CHECK(s.ttft_ms.p50 == Approx(500));
  CHECK(s.tpot_ms.count == 1);  // request 1 has no decode
  CHECK(s.tpot_ms.mean == Approx(200));
  CHECK(m.itl_s().count() == 2);
  CHECK(s.steps == 3);
  CHECK(s.prefill_only_steps == 1);
  CHECK(s.decode_only_steps == 2);
  CHECK(s.mixed_steps == 0);
  CHECK(s.prefill_tokens == 30);
  CHECK(s.decode_tokens == 2);
  CHECK(s.busy_s == Approx(0.9));
  // The run spans the first arrival to the last event (the rejected arrival at 2 s).
  CHECK(s.makespan_s == Approx(2.0));
  CHECK(s.step_time_fraction == Approx(0.45));
  CHECK(s.mfu == Approx(3e9 / (2.0 * 1e10)));
  // KV usage is time-weighted over the steps: (5 x 0.5 + 6 x 0.1 + 6 x 0.3) / 0.9 of 10 blocks.
  CHECK(s.kv_usage_mean == Approx(4.9 / 0.9 / 10));
  CHECK(s.kv_usage_max == Approx(0.6));
  CHECK(s.queue_len.mean == Approx(0.5 / 0.9));  // 1 waiting during the first 0.5 s
}

TEST_CASE("INI: sections, comments, quotes, and errors that name the file, line and key",
          "[util][foundations]") {
  const auto dir = servesim::test::scratch("foundations_ini");
  const std::string good = (dir / "good.ini").string();
  servesim::test::write(good,
                        "\xEF\xBB\xBF# a comment\n"
                        "name = \"h100 # not a comment\"\n"
                        "client-mix = rate=2;rate=5 ; a comment after a space\n"
                        "[grid]\n"
                        "tp = 1,2\n");
  const std::vector<IniEntry> e = read_ini_entries(good);
  REQUIRE(e.size() == 4);  // two keys, the [grid] header, one key in it
  CHECK(e[0].key == "name");
  CHECK(e[0].value == "h100 # not a comment");
  CHECK(e[0].line == 2);
  CHECK(e[1].value == "rate=2;rate=5");
  CHECK(e[2].section == "grid");
  CHECK(e[2].key.empty());
  CHECK(e[3].section == "grid");
  CHECK(e[3].key == "tp");
  CHECK(e[3].line == 5);
  CHECK(ini_line_of(good, "tp") == 5);

  const std::string bad = (dir / "bad.ini").string();
  servesim::test::write(bad, "a = 1\nthis line has no equals sign\n");
  CHECK_THAT(error_of([&] { read_ini_entries(bad); }), Catch::Contains("bad.ini:2"));

  // A fixed schema: typed values, unknown and repeated keys, a required key missing.
  double tflops = 0;
  int layers = 0;
  bool fp8 = false;
  std::string name;
  const std::vector<IniField> fields = {
      {"name", &name, true}, {"tflops", &tflops}, {"layers", &layers}, {"fp8", &fp8}};
  const std::string typed = (dir / "typed.ini").string();
  servesim::test::write(typed, "name = x\ntflops = 989.5\nlayers = 32\nfp8 = on\n");
  CHECK(load_ini_fields(typed, fields) == std::set<std::string>{"name", "tflops", "layers", "fp8"});
  CHECK(name == "x");
  CHECK(tflops == 989.5);
  CHECK(layers == 32);
  CHECK(fp8);
  const auto load_error = [&](const std::string& text) {
    servesim::test::write(typed, text);
    return error_of([&] { load_ini_fields(typed, fields); });
  };
  CHECK_THAT(load_error("name = x\nlayers = many\n"),
             Catch::Contains("typed.ini:2") && Catch::Contains("layers"));
  CHECK_THAT(load_error("name = x\nwidth = 3\n"),
             Catch::Contains("typed.ini:2") && Catch::Contains("width"));
  CHECK_THAT(load_error("name = x\nname = y\n"), Catch::Contains("typed.ini:2"));
  CHECK_THAT(load_error("layers = 3\n"), Catch::Contains("name"));
  CHECK_THAT(load_error("name =\n"), Catch::Contains("typed.ini:1"));
}

TEST_CASE("LineReader: CRLF and LF, a last line without newline, long lines, line numbers",
          "[util][foundations]") {
  const auto dir = servesim::test::scratch("foundations_lines");
  const std::string path = (dir / "lines.txt").string();
  const std::string long_line(100000, 'x');  // beyond the first block of a small file's buffer
  servesim::test::write(path, "a,b\r\n\nc\n" + long_line + "\nlast");
  LineReader r(path);
  std::vector<std::string> lines;
  std::vector<int64_t> numbers;
  for (std::string_view line; r.next(line);) {
    lines.emplace_back(line);
    numbers.push_back(r.line_number());
  }
  CHECK(lines == std::vector<std::string>{"a,b", "", "c", long_line, "last"});
  CHECK(numbers == std::vector<int64_t>{1, 2, 3, 4, 5});
  std::string_view after;
  CHECK_FALSE(r.next(after));
  const std::string empty = (dir / "empty.txt").string();
  servesim::test::write(empty, "");
  LineReader e(empty);
  CHECK_FALSE(e.next(after));
  CHECK_THAT(error_of([&] { LineReader missing((dir / "missing.txt").string()); }),
             Catch::Contains("missing.txt"));
}

TEST_CASE("parallel_for: every task once, DONE on the calling thread, the lowest failure rethrown",
          "[util][foundations]") {
  for (int jobs : {1, 3}) {
    INFO("jobs " << jobs);
    std::vector<std::atomic<int>> runs(200);
    std::vector<int> done_order;
    std::set<std::thread::id> done_threads;
    parallel_for(
        runs.size(), jobs, "tasks", [&](size_t i) { ++runs[i]; },
        [&](size_t i) {
          done_order.push_back(int(i));
          done_threads.insert(std::this_thread::get_id());
        });
    for (const auto& n : runs)
      CHECK(n.load() == 1);
    CHECK(done_order.size() == runs.size());
    CHECK(done_threads == std::set<std::thread::id>{std::this_thread::get_id()});
    // Tasks 5 and 150 throw: 5 always starts first, so its error is the one rethrown, whether or
    // not 150 started before the pool stopped.
    std::atomic<int> started{0};
    const std::string what = error_of([&] {
      parallel_for(
          runs.size(), jobs, "tasks",
          [&](size_t i) {
            ++started;
            if (i == 5 || i == 150) throw std::runtime_error("task " + std::to_string(i));
          },
          [](size_t) {});
    });
    CHECK(what == "task 5");
    // No task starts after a failure: one thread runs tasks 0..5 and stops there.
    if (jobs == 1) CHECK(started.load() == 6);
  }
  // Nothing to do: no task, no DONE.
  int calls = 0;
  parallel_for(
      0, 4, "none", [&](size_t) { ++calls; }, [&](size_t) { ++calls; });
  CHECK(calls == 0);
}
