// The importers on the real public traces in ../shared/traces (Azure 2023 code, Vidur's
// processed traces, Mooncake's conversation trace, a ServeGen sample). Reads ../shared: skipped,
// with a message, where the folder is absent. Set SERVESIM_SHARED to point elsewhere.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "shared_data.hpp"
#include "trace_fixtures.hpp"
#include "traces/import.hpp"
#include "traces/trace_store.hpp"
#include "util/error.hpp"

using namespace servesim;
namespace fs = std::filesystem;

namespace {

fs::path traces_dir() {
  return servesim::test::shared_path("traces");
}
bool have_traces() {
  return servesim::test::have_shared("traces");
}

Trace load(const char* relative) {
  return import_trace((traces_dir() / relative).string(), {});
}

// Writes T to HDF5 and reads it back: every column must survive.
void round_trip(const Trace& t, const char* name) {
  const auto path = (fs::temp_directory_path() / name).string();
  write_trace_h5(path, t);
  servesim::test::require_same(t, read_trace_h5(path));
}

}  // namespace

TEST_CASE(
    "shared traces: Azure 2023 code trace and Vidur's splitwise_code.csv hold the same "
    "8,819 requests",
    "[shared][traces]") {
  if (!have_traces()) return;
  const Trace azure = load("azure_llm_2023/AzureLLMInferenceTrace_code.csv");
  const Trace vidur = load("vidur_processed_traces/splitwise_code.csv");
  REQUIRE(azure.size() == 8819);
  REQUIRE(vidur.size() == 8819);
  CHECK(azure.counts.rows_read == 8819);
  CHECK(azure.counts.skipped() == 0);
  CHECK(azure.format == "azure");
  CHECK(vidur.format == "vidur");
  CHECK(azure.arrival_s.back() == Approx(3435.948056).margin(1e-6));
  CHECK(*std::min_element(azure.input_tokens.begin(), azure.input_tokens.end()) == 3);
  CHECK(*std::max_element(azure.input_tokens.begin(), azure.input_tokens.end()) == 7437);
  CHECK(*std::min_element(azure.output_tokens.begin(), azure.output_tokens.end()) == 6);
  CHECK(*std::max_element(azure.output_tokens.begin(), azure.output_tokens.end()) == 1899);
  // Request by request: the same tokens, arrivals equal to Vidur's 1 us rounding.
  size_t token_mismatches = 0, time_mismatches = 0;
  double worst = 0;
  for (size_t i = 0; i < azure.size(); ++i) {
    token_mismatches += azure.input_tokens[i] != vidur.input_tokens[i] ||
                        azure.output_tokens[i] != vidur.output_tokens[i];
    const double d = std::abs(azure.arrival_s[i] - vidur.arrival_s[i]);
    worst = std::max(worst, d);
    time_mismatches += d > 1e-6;
  }
  CHECK(token_mismatches == 0);
  CHECK(time_mismatches == 0);
  CHECK(worst <= 1e-6);
  round_trip(azure, "shared_azure.h5");
  round_trip(vidur, "shared_vidur.h5");
}

TEST_CASE("shared traces: Vidur's length-only arXiv summarization trace", "[shared][traces]") {
  if (!have_traces()) return;
  const Trace t =
      load("vidur_processed_traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv");
  REQUIRE(t.size() == 28257);
  CHECK_FALSE(t.timed);
  size_t over = 0;
  for (size_t i = 0; i < t.size(); ++i)
    over += t.input_tokens[i] + t.output_tokens[i] > 4096;
  CHECK(over == 0);  // the file was filtered to num_total_tokens <= 4096
  round_trip(t, "shared_arxiv.h5");
}

TEST_CASE("shared traces: Mooncake's conversation trace with its prefix hash ids",
          "[shared][traces]") {
  if (!have_traces()) return;
  const Trace t = load("mooncake_fast25/conversation_trace.jsonl");
  REQUIRE(t.size() == 12031);
  CHECK(t.hash_block_size == 512);
  std::set<double> distinct(t.arrival_s.begin(), t.arrival_s.end());
  CHECK(distinct.size() == 1180);  // timestamps are coarse: many ties
  CHECK(t.arrival_s.back() == Approx(3536.999));
  size_t wrong_length = 0;
  int64_t input_sum = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const uint64_t blocks = t.hash_offsets[i + 1] - t.hash_offsets[i];
    wrong_length += blocks != uint64_t((t.input_tokens[i] + 511) / 512);
    input_sum += t.input_tokens[i];
  }
  CHECK(wrong_length == 0);  // one id per 512-token block, on every row
  CHECK(*std::max_element(t.hash_ids.begin(), t.hash_ids.end()) == 182789);
  CHECK(double(input_sum) / double(t.size()) == Approx(12035).margin(1));
  round_trip(t, "shared_mooncake.h5");
}

TEST_CASE("shared traces: ServeGen's per-client statistics are not a request trace",
          "[shared][traces][errors]") {
  if (!have_traces()) return;
  const fs::path dir = traces_dir() / "servegen/language/m-large";
  CHECK_THROWS_WITH(
      import_trace((dir / "chunk-0-trace.csv").string(), {}),
      Catch::Contains("is a ServeGen client") && Catch::Contains("--dataset-name servegen"));
  CHECK_THROWS_WITH(import_trace((dir / "chunk-0-dataset.json").string(), {}),
                    Catch::Contains("Mooncake JSONL trace"));
}
