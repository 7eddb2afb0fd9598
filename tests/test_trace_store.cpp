// The HDF5 trace store, transforms and trace statistics.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include <H5Cpp.h>

#include "trace_fixtures.hpp"
#include "traces/import.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace_info.hpp"
#include "traces/trace_store.hpp"
#include "traces/transform.hpp"
#include "util/error.hpp"

using namespace servesim;
using servesim::test::fixture;
using servesim::test::require_same;
using servesim::test::span_tuples;

namespace {

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

namespace {

// Rewrites one dataset of a valid trace file as another type or length.
void replace_column(const std::string& path, const char* name, const H5::PredType& type,
                    hsize_t n) {
  H5::H5File f(path, H5F_ACC_RDWR);
  f.unlink(name);
  std::vector<double> values(n, 1.0);
  H5::DataSpace space(1, &n);
  H5::DataSet ds = f.createDataSet(name, type, space);
  ds.write(values.data(), H5::PredType::NATIVE_DOUBLE);
}

void set_int_attr(const std::string& path, const char* name, int64_t v) {
  H5::H5File f(path, H5F_ACC_RDWR);
  f.removeAttr(name);
  f.createAttribute(name, H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR))
      .write(H5::PredType::NATIVE_INT64, &v);
}

std::string fresh_copy(const std::string& name) {
  write_trace_h5(h5(name), small_timed());
  return h5(name);
}

}  // namespace

TEST_CASE("store: foreign files, wrong types, lengths and counts are refused", "[traces][errors]") {
  {
    H5::H5File f(h5("foreign.h5"), H5F_ACC_TRUNC);  // valid HDF5, not ours
  }
  CHECK_THROWS_WITH(read_trace_h5(h5("foreign.h5")), Catch::Contains("not a servesim trace"));

  std::string p = fresh_copy("float_tokens.h5");
  replace_column(p, "input_tokens", H5::PredType::NATIVE_DOUBLE, 10);  // would be truncated
  CHECK_THROWS_WITH(read_trace_h5(p), Catch::Contains("field 'input_tokens': has the wrong type"));

  p = fresh_copy("short_output.h5");
  replace_column(p, "output_tokens", H5::PredType::NATIVE_INT32, 9);
  CHECK_THROWS_WITH(read_trace_h5(p),
                    Catch::Contains("field 'output_tokens': has 9 elements, expected 10"));

  p = fresh_copy("bad_counts.h5");
  set_int_attr(p, "skipped_bad", -7);
  CHECK_THROWS_WITH(read_trace_h5(p),
                    Catch::Contains("field 'skipped_bad': must be a count in [0, 2^50]"));
  // Counts near 2^62 overflowed their sum and ++clipped_input (UBSan, issue 14 item 9).
  p = fresh_copy("huge_counts.h5");
  set_int_attr(p, "skipped_bad", int64_t(1) << 62);
  CHECK_THROWS_WITH(read_trace_h5(p),
                    Catch::Contains("field 'skipped_bad': must be a count in [0, 2^50]"));
  p = fresh_copy("lost_rows.h5");
  set_int_attr(p, "rows_read", 12);  // 10 kept + 0 skipped != 12
  CHECK_THROWS_WITH(read_trace_h5(p), Catch::Contains("field 'rows_read'"));
}

TEST_CASE("store: an attribute written as an array is refused, not read past its buffer",
          "[traces][errors]") {
  // h5py writes a list as an array attribute: version as int64[8] overflowed read_int_attr's
  // one-value buffer on the stack (issue 14 item 1).
  std::string p = fresh_copy("array_version.h5");
  {
    H5::H5File f(p, H5F_ACC_RDWR);
    f.removeAttr("version");
    const hsize_t n = 8;
    const std::vector<int64_t> v(n, 1);
    f.createAttribute("version", H5::PredType::NATIVE_INT64, H5::DataSpace(1, &n))
        .write(H5::PredType::NATIVE_INT64, v.data());
  }
  CHECK_THROWS_WITH(read_trace_h5(p),
                    Catch::Contains("field 'version': must be a single value, not an array of 8"));
  // A text attribute as an array of variable-length strings, and one that is not text at all.
  p = fresh_copy("array_source.h5");
  {
    H5::H5File f(p, H5F_ACC_RDWR);
    f.removeAttr("source_file");
    const hsize_t n = 3;
    const char* v[3] = {"a", "b", "c"};
    H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
    f.createAttribute("source_file", type, H5::DataSpace(1, &n)).write(type, v);
  }
  CHECK_THROWS_WITH(read_trace_h5(p), Catch::Contains("field 'source_file': must be a single"));
  p = fresh_copy("int_source.h5");
  set_int_attr(p, "source_file", 3);
  CHECK_THROWS_WITH(read_trace_h5(p), Catch::Contains("field 'source_file': must be a string"));
}

TEST_CASE("transforms: --request-rate after --window rescales from the window's start",
          "[traces]") {
  Trace t;
  for (int i = 0; i < 5; ++i)
    t.push(i * 10.0, 10, 10);  // 0, 10, 20, 30, 40
  t.counts.rows_read = 5;
  TransformOptions o;
  parse_window("5:100", o);  // 10, 20, 30, 40 -> 5, 15, 25, 35
  o.request_rate = 1;
  apply_transforms(t, o);
  CHECK(t.arrival_s == std::vector<double>{0, 1, 2, 3});
}

TEST_CASE("transforms: prefix hash ids become spans that follow --input-trim, clips and scales",
          "[traces]") {
  auto trace = [] {
    Trace t;
    t.hash_block_size = 4;
    t.push(0, 10, 1);  // 3 blocks: 4 + 4 + 2 tokens
    t.hash_offsets = {0, 3};
    t.hash_ids = {7, 8, 9};
    return t;
  };
  auto block = [](uint64_t id) { return stream_id(StreamKind::kTraceBlock, id); };
  using Spans = std::vector<std::tuple<uint64_t, int32_t, int32_t, int32_t>>;
  Trace trim = trace();
  TransformOptions o;
  o.input_trim = 4;  // the first block goes: 6 tokens in blocks 8, 9
  apply_transforms(trim, o);
  CHECK(trim.input_tokens[0] == 6);
  CHECK_FALSE(trim.has_hash_ids());
  CHECK(span_tuples(trim.spans) == Spans{{block(8), 0, 0, 4}, {block(9), 0, 4, 2}});
  CHECK_THAT(trim.options, Catch::Contains("hash ids as spans"));
  Trace clip = trace();
  TransformOptions c;
  c.max_input_len = 5;  // blocks 7 and the first token of 8
  apply_transforms(clip, c);
  CHECK(span_tuples(clip.spans) == Spans{{block(7), 0, 0, 4}, {block(8), 0, 4, 1}});
  CHECK(clip.span_offsets == std::vector<uint64_t>{0, 2});
  Trace scale = trace();
  TransformOptions s;
  s.input_scale = 2;  // 10 more tokens of its own after the 3 blocks
  apply_transforms(scale, s);
  CHECK(scale.input_tokens[0] == 20);
  CHECK(span_tuples(scale.spans) ==
        Spans{{block(7), 0, 0, 4}, {block(8), 0, 4, 4}, {block(9), 0, 8, 2}});
  Trace times = trace();
  TransformOptions w;
  w.output_scale = 3;  // outputs only: the hash ids stay as they are
  apply_transforms(times, w);
  CHECK(times.hash_ids == std::vector<uint64_t>{7, 8, 9});
  CHECK_FALSE(times.has_spans());
}

TEST_CASE("trace info: the 5-minute peak is a sliding window", "[traces]") {
  Trace t;
  // 100 requests in [250, 350): a tumbling window at 0/300 would see at most 50 of them.
  t.push(0, 1, 1);
  for (int i = 0; i < 100; ++i)
    t.push(250 + i, 1, 1);
  t.push(1000, 1, 1);
  CHECK(trace_info(t).peak_rate_5min == Approx(100.0 / 300));
}
