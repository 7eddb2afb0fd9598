// The HDF5 trace store, transforms and trace statistics.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "sim/error.hpp"
#include "trace_fixtures.hpp"
#include "traces/import.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace_info.hpp"
#include "traces/trace_store.hpp"
#include "traces/transform.hpp"

using namespace servesim;
using servesim::test::fixture;

namespace {

void require_same(const Trace& a, const Trace& b) {
  CHECK(a.arrival_s == b.arrival_s);
  CHECK(a.input_tokens == b.input_tokens);
  CHECK(a.output_tokens == b.output_tokens);
  CHECK(a.hash_offsets == b.hash_offsets);
  CHECK(a.hash_ids == b.hash_ids);
  CHECK(a.hash_block_size == b.hash_block_size);
  CHECK(a.session_id == b.session_id);
  CHECK(a.request_class == b.request_class);
  CHECK(a.class_names == b.class_names);
  CHECK(a.timed == b.timed);
  CHECK(a.format == b.format);
  CHECK(a.source == b.source);
  CHECK(a.options == b.options);
  CHECK(a.counts.rows_read == b.counts.rows_read);
  CHECK(a.counts.skipped_bad == b.counts.skipped_bad);
  CHECK(a.counts.skipped_failed == b.counts.skipped_failed);
  CHECK(a.first_errors == b.first_errors);
}

std::string h5(const std::string& name) {
  return (std::filesystem::temp_directory_path() / "servesim_trace_fixtures" / name).string();
}

Trace small_timed() {
  Trace t;
  t.format = "test";
  for (int i = 0; i < 10; ++i)
    t.push(i * 1.0, 100 + i, 10 + i);  // 1 req/s
  t.counts.rows_read = 10;
  return t;
}

}  // namespace

TEST_CASE("store: CSV -> HDF5 -> identical requests, for every optional column", "[traces]") {
  ImportOptions skip;
  skip.skip_bad_rows = true;
  const Trace azure = import_trace(fixture("rt_azure.csv",
                                           "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                                           "2023-11-16 18:17:03.9799600,4808,10\r\n"
                                           "bad,1,1\r\n"
                                           "2023-11-16 18:17:04.0319800,3180,8"),
                                   skip);
  write_trace_h5(h5("rt_azure.h5"), azure);
  require_same(azure, read_trace_h5(h5("rt_azure.h5")));

  const Trace burst = import_trace(
      fixture(
          "rt_burst.csv",
          "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total "
          "tokens,Log Type\n1.5,3,0.1,ChatGPT,10,0,10,API log\n2.5,,0.1,GPT-4,20,5,25,API log\n"),
      {});
  write_trace_h5(h5("rt_burst.h5"), burst);
  require_same(burst, read_trace_h5(h5("rt_burst.h5")));

  const Trace moon =
      import_trace(fixture("rt_moon.jsonl",
                           "{\"timestamp\": 7, \"input_length\": 600, "
                           "\"output_length\": 3, \"hash_ids\": [9, 18446744073709551615]}\n"),
                   {});
  write_trace_h5(h5("rt_moon.h5"), moon);
  const Trace back = read_trace_h5(h5("rt_moon.h5"));
  require_same(moon, back);
  CHECK(back.hash_ids[1] == 18446744073709551615ull);
  // The store is a format like any other: `import` reads it back by its signature.
  require_same(moon, import_trace(h5("rt_moon.h5"), {}));
}

TEST_CASE("store: truncated, corrupt and foreign files are one clear Error", "[traces][errors]") {
  const Trace t = small_timed();
  write_trace_h5(h5("whole.h5"), t);
  const auto size = std::filesystem::file_size(h5("whole.h5"));
  std::filesystem::copy_file(h5("whole.h5"), h5("cut.h5"),
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(h5("cut.h5"), size / 2);
  CHECK_THROWS_WITH(read_trace_h5(h5("cut.h5")), Catch::Contains("cut.h5"));
  // An HDF5 signature followed by garbage.
  const auto junk =
      fixture("junk.h5", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(4000, 'x'));
  CHECK_THROWS_AS(read_trace_h5(junk), Error);
  CHECK_THROWS_WITH(read_trace_h5(fixture("text.h5", "hello")),
                    Catch::Contains("not an HDF5 file"));
  CHECK_THROWS_WITH(read_trace_h5(h5("does_not_exist.h5")), Catch::Contains("does_not_exist.h5"));
}

TEST_CASE("transforms: window, max-requests, time scale and rate, in that order", "[traces]") {
  Trace t = small_timed();
  TransformOptions o;
  parse_window("2:7", o);
  apply_transforms(t, o);
  CHECK(t.arrival_s == std::vector<double>{0, 1, 2, 3, 4});  // 2..6, shifted to the window
  CHECK(t.input_tokens.front() == 102);
  CHECK(t.counts.outside_window == 5);

  TransformOptions m;
  m.max_requests = 3;
  m.time_scale = 0.5;  // twice the rate
  apply_transforms(t, m);
  CHECK(t.arrival_s == std::vector<double>{0, 0.5, 1});
  CHECK(t.counts.beyond_max == 2);
  CHECK(t.counts.rows_read == int64_t(t.size()) + t.counts.skipped());

  Trace r = small_timed();
  TransformOptions rate;
  rate.request_rate = 4;  // from 1 req/s: gaps of 0.25 s
  apply_transforms(r, rate);
  CHECK(r.arrival_s.back() == Approx(9 * 0.25));
  CHECK(r.options == "--request-rate 4");

  TransformOptions bad;
  CHECK_THROWS_WITH(parse_window("5:2", bad), Catch::Contains("window"));
  CHECK_THROWS_WITH(parse_window("abc", bad), Catch::Contains("window"));
  Trace e = small_timed();
  parse_window("100:200", bad);
  CHECK_THROWS_WITH(apply_transforms(e, bad), Catch::Contains("no request"));
}

TEST_CASE("transforms: trim, scale and clip token counts", "[traces]") {
  Trace t;
  t.push(0, 100, 10);
  t.push(1, 30, 3);
  TransformOptions o;
  o.input_trim = 50;      // 50, floor 1
  o.input_scale = 2;      // 100, 2
  o.output_scale = 1.5;   // 15, 4.5 -> 5 (rounded)
  o.max_input_len = 80;   // 80 (clipped), 2
  o.max_output_len = 12;  // 12 (clipped), 5
  apply_transforms(t, o);
  CHECK(t.input_tokens == std::vector<int32_t>{80, 2});
  CHECK(t.output_tokens == std::vector<int32_t>{12, 5});
  CHECK(t.counts.clipped_input == 1);
  CHECK(t.counts.clipped_output == 1);
  TransformOptions neg;
  neg.input_scale = 0;
  CHECK_THROWS_WITH(apply_transforms(t, neg), Catch::Contains("input-scale"));
}

TEST_CASE("transforms: a length-only trace gets the generator's Gamma arrivals", "[traces]") {
  Trace t;
  t.timed = false;
  for (int i = 0; i < 50; ++i)
    t.push(0, 10, 10);
  TransformOptions window;
  parse_window("0:10", window);
  CHECK_THROWS_WITH(apply_transforms(t, window), Catch::Contains("arrival times"));
  TransformOptions o;
  o.request_rate = 5;
  o.burstiness = 0.5;
  o.seed = 9;
  apply_transforms(t, o);
  CHECK(t.timed);
  CHECK(t.arrival_s == generate_arrivals(50, 5, 0.5, 9));
}

TEST_CASE("trace info: rates, burstiness, percentiles and prefix reuse by hand", "[traces]") {
  Trace t;
  t.format = "test";
  // Arrivals 0, 100, 200, 400, 700 s: gaps 100, 100, 200, 300 (mean 175).
  const double at[] = {0, 100, 200, 400, 700};
  for (double a : at)
    t.push(a, 1000, 10);
  // Blocks of 512: request 0 brings A B; request 1 repeats A (512 tokens) and brings C; request
  // 2 repeats A and B (1000 tokens: 512 + 488); 3 and 4 bring new blocks.
  t.hash_block_size = 512;
  t.hash_offsets = {0, 2, 4, 6, 8, 10};
  t.hash_ids = {1, 2, 1, 3, 1, 2, 4, 5, 6, 7};
  const TraceInfo s = trace_info(t);
  CHECK(s.requests == 5);
  CHECK(s.span_s == 700);
  CHECK(s.mean_rate == Approx(4.0 / 700));
  CHECK(s.peak_rate_5min == Approx(3.0 / 300));  // [0, 300) holds 3
  // CV = population std of gaps / mean: sqrt(((75)^2 * 2 + 25^2 + 125^2) / 4) / 175.
  CHECK(s.burstiness_cv == Approx(std::sqrt((75.0 * 75 * 2 + 25 * 25 + 125 * 125) / 4) / 175));
  CHECK(s.input_tokens.p50 == 1000);
  CHECK(s.distinct_blocks == 7);
  CHECK(s.repeated_prompt_share == Approx((512.0 + 512 + 488) / 5000));
}
