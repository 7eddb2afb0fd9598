// Importers on small hand-written fixtures, one per format and quirk.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "trace_fixtures.hpp"
#include "traces/import.hpp"
#include "util/error.hpp"

using namespace servesim;
using servesim::test::fixture;

namespace {
Trace import(const std::string& path, ImportOptions o = {}) {
  return import_trace(path, o);
}

// The Error an import throws, as text ("" if none).
std::string import_error(const std::string& path, ImportOptions o = {}) {
  try {
    import_trace(path, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("azure 2023: CRLF, 7 fractional digits, no final newline", "[traces]") {
  const auto p = fixture("azure2023.csv",
                         "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                         "2023-11-16 18:17:03.9799600,4808,10\r\n"
                         "2023-11-16 18:17:04.0319800,3180,8\r\n"
                         "2023-11-16 18:18:03.9799601,110,27");
  const Trace t = import(p);
  REQUIRE(t.size() == 3);
  CHECK(t.format == "azure");
  CHECK(t.arrival_s[0] == 0);
  CHECK(t.arrival_s[1] == Approx(0.05202).margin(1e-9));
  CHECK(t.arrival_s[2] == Approx(60.0000001).margin(1e-9));
  CHECK(t.input_tokens == std::vector<int32_t>{4808, 3180, 110});
  CHECK(t.output_tokens == std::vector<int32_t>{10, 8, 27});
  CHECK(t.counts.rows_read == 3);
  CHECK(t.timed);
}

TEST_CASE("azure 2024: +00:00 suffix, 6 or no fractional digits, across midnight", "[traces]") {
  const auto p = fixture("azure2024.csv",
                         "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                         "2024-05-10 23:59:59.500000+00:00,100,10\n"
                         "2024-05-11 00:00:00+00:00,200,20\n"
                         "2024-05-11 00:00:00.250000+00:00,300,30\n");
  const Trace t = import(p);
  REQUIRE(t.size() == 3);
  CHECK(t.arrival_s[1] == Approx(0.5));
  CHECK(t.arrival_s[2] == Approx(0.75));
}

TEST_CASE("azure: columns are found by name, not position", "[traces]") {
  const auto p = fixture("azure_reordered.csv",
                         "GeneratedTokens,TIMESTAMP,ContextTokens\n"
                         "7,2023-11-16 18:17:03.0000000,1000\n");
  const Trace t = import(p);
  CHECK(t.input_tokens[0] == 1000);
  CHECK(t.output_tokens[0] == 7);
}

TEST_CASE("burstgpt: spaced headers, failed rows skipped and counted, filters", "[traces]") {
  const std::string text =
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "5.0,ChatGPT,472,18,490,Conversation log\n"
      "45.0,ChatGPT,1087,0,1087,Conversation log\n"
      "118.0,GPT-4,417,276,693,API log\n"
      "118.0,ChatGPT,1360,165,1525,API log\n";
  const auto p = fixture("burstgpt.csv", text);
  Trace t = import(p);
  REQUIRE(t.size() == 3);
  CHECK(t.format == "burstgpt");
  CHECK(t.arrival_s == std::vector<double>{0, 113, 113});  // relative to the first, ties kept
  CHECK(t.counts.skipped_failed == 1);
  CHECK(t.counts.rows_read == 4);
  CHECK(t.class_names.size() == 3);
  CHECK(t.class_names[t.request_class[1]] == "GPT-4 / API log");

  ImportOptions keep;
  keep.keep_failed = true;
  t = import(p, keep);
  REQUIRE(t.size() == 4);
  CHECK(t.output_tokens[1] == 1);  // a failed request replays as a one-token answer
  CHECK(t.counts.kept_failed == 1);

  ImportOptions gpt4;
  gpt4.model_filter = "gpt-4";
  t = import(p, gpt4);
  CHECK(t.size() == 1);
  CHECK(t.counts.filtered == 3);  // the failed row is another model's: filtered first
  CHECK(t.counts.rows_read == int64_t(t.size()) + t.counts.skipped());

  ImportOptions api;
  api.log_type = "api";
  t = import(p, api);
  CHECK(t.size() == 2);
  CHECK(t.counts.filtered == 2);
  api.log_type = "chat";
  CHECK_THROWS_AS(import(p, api), Error);
}

TEST_CASE("burstgpt_3: Session ID (a UUID, or empty) and Elapsed time inserted", "[traces]") {
  const auto p = fixture(
      "burstgpt3.csv",
      "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response "
      "tokens,Total tokens,Log Type\n"
      "1200.5,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,0.9,ChatGPT,100,50,150,Conversation log\n"
      "1201.5,,1.3,\"ChatGPT\",200,60,260,\"Conversation log\"\n"
      "1202.5,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,2.0,ChatGPT,30,6,36,Conversation log\n"
      "1203.5,9e107d9d-372b-4b6a-8b1a-2f3c4d5e6f70,0.4,ChatGPT,40,7,47,Conversation log\n");
  const Trace t = import(p);
  REQUIRE(t.size() == 4);
  // Sessions are numbered in order of first appearance; an empty one is -1.
  CHECK(t.session_id == std::vector<int64_t>{0, -1, 0, 1});
  CHECK(t.arrival_s[1] == Approx(1.0));
  CHECK(t.class_names.size() == 1);  // quotes do not make another class
}

TEST_CASE("mooncake: JSONL with ms timestamps, ties and hash ids", "[traces]") {
  const auto p = fixture("mooncake.jsonl",
                         "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 5, "
                         "\"hash_ids\": [0, 1]}\n"
                         "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 7, "
                         "\"hash_ids\": [0, 2]}\n"
                         "\n"
                         "{\"timestamp\": 1500, \"input_length\": 10, \"output_length\": 1, "
                         "\"hash_ids\": [3]}\n");
  Trace t = import(p);
  REQUIRE(t.size() == 3);
  CHECK(t.format == "mooncake");
  CHECK(t.arrival_s == std::vector<double>{0, 0, 1.5});
  CHECK(t.hash_block_size == 512);
  CHECK(t.hash_offsets == std::vector<uint64_t>{0, 2, 4, 5});
  CHECK(t.hash_ids == std::vector<uint64_t>{0, 1, 0, 2, 3});
  // Another block size: one id per 16 tokens.
  ImportOptions o;
  o.hash_block_size = 16;
  const Trace small = import(fixture("mooncake16.jsonl",
                                     "{\"timestamp\": 0, \"input_length\": 33, "
                                     "\"output_length\": 2, \"hash_ids\": [4, 5, 6]}\n"),
                             o);
  CHECK(small.hash_block_size == 16);
  CHECK(small.hash_ids.size() == 3);
  // At the default 512 the same row has too many ids: a bad row naming the flag.
  CHECK_THAT(import_error(fixture("mooncake16b.jsonl",
                                  "{\"timestamp\": 0, \"input_length\": 33, "
                                  "\"output_length\": 2, \"hash_ids\": [4, 5, 6]}\n")),
             Catch::Contains("3 ids for 33 tokens: expected 1 at 512 tokens a block"));
}

TEST_CASE("vidur: the timed CSV and the length-only CSV", "[traces]") {
  const Trace timed = import(fixture("vidur.csv",
                                     "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                                     "0.0,4808,10\n0.052,3180,8\n3435.948056,200,9\n"));
  REQUIRE(timed.size() == 3);
  CHECK(timed.timed);
  CHECK(timed.arrival_s[2] == Approx(3435.948056));
  const Trace lengths =
      import(fixture("vidur_len.csv",
                     "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
                     "3772,54,3826,69.85185185185185\n2015,156,2171,12.916666666666666\n"));
  REQUIRE(lengths.size() == 2);
  CHECK_FALSE(lengths.timed);
  CHECK(lengths.input_tokens == std::vector<int32_t>{3772, 2015});
}

TEST_CASE("csv: any columns by name, time units, quoted fields, unsorted rows", "[traces]") {
  const auto p = fixture("generic.csv",
                         "id,\"note\",t_ms,prompt,completion\n"
                         "a,\"hello, world\",2500,10,3\n"
                         "b,\"say \"\"hi\"\"\",1000,20,4\n"
                         "c,plain,1000,30,5\n");
  ImportOptions o;
  o.col_arrival = "t_ms";
  o.col_input = "prompt";
  o.col_output = "completion";
  o.time_unit = "ms";
  const Trace t = import(p, o);  // detected as csv because the columns are named
  CHECK(t.format == "csv");
  CHECK(t.arrival_s == std::vector<double>{0, 0, 1.5});  // sorted, ties in file order
  CHECK(t.input_tokens == std::vector<int32_t>{20, 30, 10});
  ImportOptions minutes = o;
  minutes.time_unit = "minutes";
  CHECK_THAT(import_error(p, minutes), Catch::Contains("time-unit"));
  ImportOptions untimed = o;
  untimed.col_arrival.clear();
  CHECK_FALSE(import(p, untimed).timed);
  ImportOptions missing = o;
  missing.col_input = "no_such_column";
  CHECK_THAT(import_error(p, missing), Catch::Contains("field 'no_such_column': missing column"));
}

TEST_CASE("bad rows stop the import with FILE:LINE: field 'X': reason", "[traces][errors]") {
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  const std::string good = "2023-11-16 18:17:03.0000000,100,10\n";
  struct Case {
    std::string row, expect;
  };
  const Case cases[] = {
      {"2023-11-16 18:17:04.0000000,100\n", ":3: field 'GeneratedTokens': missing field"},
      {"2023-11-16 18:17:04.0000000,lots,10\n", ":3: field 'ContextTokens': 'lots' is not"},
      {"2023-11-16 18:17:04.0000000,0,10\n", ":3: field 'ContextTokens': 0 must be >= 1"},
      {"2023-11-16 18:17:04.0000000,-5,10\n", ":3: field 'ContextTokens': -5 must be >= 1"},
      {"2023-11-16 18:17:02.0000000,100,10\n", ":3: field 'TIMESTAMP': goes backwards"},
      {"2023-13-16 18:17:04.0000000,100,10\n", ":3: field 'TIMESTAMP': '2023-13-16"},
      {"16/11/2023 18:17:04,100,10\n", ":3: field 'TIMESTAMP'"},
      {"2023-11-16 18:17:04.0000000,\"100,10\n", ":3: unterminated quoted field"},
  };
  for (const Case& c : cases) {
    INFO(c.row);
    // append(), not +: GCC 12 warns falsely (-Wrestrict) on chained string operator+.
    std::string text = header;
    text.append(good).append(c.row).append(good);
    const auto p = fixture("bad.csv", text);
    std::string where = "bad.csv";
    where.append(c.expect);
    CHECK_THAT(import_error(p), Catch::Contains(where));
    // With --skip-bad-rows: skipped, counted, reasons kept; nothing silently dropped.
    ImportOptions skip;
    skip.skip_bad_rows = true;
    const Trace t = import(p, skip);
    CHECK(t.size() == 2);
    CHECK(t.counts.skipped_bad == 1);
    CHECK(t.counts.rows_read == 3);
    REQUIRE(t.first_errors.size() == 1);
    CHECK_THAT(t.first_errors[0], Catch::Contains(where));
  }
}

TEST_CASE("mooncake bad rows name the line and the key", "[traces][errors]") {
  const std::string ok = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n";
  CHECK_THAT(import_error(fixture("m1.jsonl", ok + "{\"timestamp\": 5, \"input_length\": 10}\n")),
             Catch::Contains("m1.jsonl:2: field 'output_length': missing"));
  CHECK_THAT(import_error(fixture("m2.jsonl", ok + "{oops\n")),
             Catch::Contains("m2.jsonl:2: not a JSON object"));
  CHECK_THAT(import_error(fixture("m3.jsonl", ok + "{\"timestamp\": -1, \"input_length\": 10, "
                                                   "\"output_length\": 2}\n")),
             Catch::Contains("m3.jsonl:2: field 'timestamp': goes backwards"));
  CHECK_THAT(import_error(fixture("m4.jsonl", "{\"a\": 1}\n")),
             Catch::Contains("not a Mooncake JSONL trace"));
}

TEST_CASE("empty, header-only and unrecognised files are one clear error", "[traces][errors]") {
  CHECK_THAT(import_error(fixture("empty.csv", "")), Catch::Contains("empty file"));
  CHECK_THAT(import_error(fixture("header.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n")),
             Catch::Contains("no data rows"));
  CHECK_THAT(import_error(fixture("other.csv", "a,b,c\n1,2,3\n")),
             Catch::Contains("cannot tell the trace format"));
  CHECK_THAT(import_error("/nonexistent/trace.csv"), Catch::Contains("cannot open"));
  ImportOptions o;
  o.format = "parquet";
  CHECK_THAT(import_error(fixture("x.csv", "a\n"), o), Catch::Contains("unknown format"));
  // Every row bad, and skipped: nothing left is an error too.
  ImportOptions skip;
  skip.skip_bad_rows = true;
  CHECK_THAT(
      import_error(fixture("allbad.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nx,1,1\ny,1,1\n"),
                   skip),
      Catch::Contains("no request left: 2 rows read"));
}

TEST_CASE("bad rows in every format name the line and field, --skip-bad-rows counts them",
          "[traces][errors]") {
  struct Case {
    std::string name, text, expect;
    ImportOptions opt;
  };
  ImportOptions csv;
  csv.col_arrival = "t";
  csv.col_input = "in";
  csv.col_output = "out";
  const Case cases[] = {
      {"b.csv",
       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
       "1,ChatGPT,10,5,15,API log\n2,ChatGPT,0,5,5,API log\n3,ChatGPT,10,5,15,API log\n",
       "b.csv:3: field 'Request tokens': 0 must be >= 1",
       {}},
      {"b2.csv",
       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
       "5,ChatGPT,10,5,15,API log\n4,ChatGPT,10,5,15,API log\n6,ChatGPT,10,5,15,API log\n",
       "b2.csv:3: field 'Timestamp': goes backwards",
       {}},
      {"v.csv",
       "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\n1,10,x\n2,10,5\n",
       "v.csv:3: field 'num_decode_tokens': 'x' is not a whole number",
       {}},
      {"v2.csv",
       "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\nsoon,10,5\n2,10,5\n",
       "v2.csv:3: field 'arrived_at': 'soon' is not a number",
       {}},
      {"c.csv", "t,in,out\n0,10,5\n1,10\n2,10,5\n", "c.csv:3: field 'out': missing field", csv},
      {"m.jsonl",
       "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n"
       "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 2}\n"
       "{\"timestamp\": 2, \"input_length\": 10, \"output_length\": 2}\n",
       "m.jsonl:2: field 'input_length': must be a whole number >= 1",
       {}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const auto p = fixture(c.name, c.text);
    CHECK_THAT(import_error(p, c.opt), Catch::Contains(c.expect));
    ImportOptions skip = c.opt;
    skip.skip_bad_rows = true;
    const Trace t = import(p, skip);
    CHECK(t.size() == 2);
    CHECK(t.counts.skipped_bad == 1);
    CHECK(t.counts.rows_read == 3);
  }
}

TEST_CASE("importers refuse dates out of range, giant lines and bad hash ids", "[traces][errors]") {
  CHECK_THAT(import_error(fixture("y.csv",
                                  "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                  "9999-12-31 00:00:00,1,1\n")),
             Catch::Contains("is not a date-time"));
  std::string huge = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  huge.append(size_t(17) << 20, 'x');  // 17 MiB without a newline
  CHECK_THAT(import_error(fixture("huge.csv", huge)), Catch::Contains("line longer than 16 MiB"));
  CHECK_THAT(
      import_error(fixture("h.jsonl",
                           "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, "
                           "\"hash_ids\": [1]}\n"
                           "{\"timestamp\": 1, \"input_length\": 10, \"output_length\": 2}\n")),
      Catch::Contains("h.jsonl:2: field 'hash_ids': missing"));
  // A long bad field is quoted short in the message.
  const std::string longfield(100000, '7');
  std::string text = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,";
  text.append(longfield).append("x,1\n");
  const std::string msg = import_error(fixture("long.csv", text));
  CHECK_THAT(msg, Catch::Contains("..."));
  CHECK(msg.size() < 300);
}

TEST_CASE("a trace can be read from a pipe: the file is read once, front to back", "[traces]") {
  const auto dir = std::filesystem::temp_directory_path() / "servesim_trace_fixtures";
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "pipe.csv").string();
  std::filesystem::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    std::ofstream f(fifo, std::ios::binary);
    f << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,10,1\n"
         "2023-11-16 18:17:04,20,2\n";
  });
  const Trace t = import(fifo);
  writer.join();
  CHECK(t.size() == 2);
  CHECK(t.format == "azure");
  std::filesystem::remove(fifo);
}
