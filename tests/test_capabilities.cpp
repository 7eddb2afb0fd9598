// The capability table (scheduler/capabilities.hpp): one row per feature, each consulted where
// a configuration asks for the feature.
#include <catch2/catch.hpp>

#include "scheduler/capabilities.hpp"
#include "util/error.hpp"
#include "util/field_path.hpp"

using namespace servesim;

TEST_CASE("capabilities: every row in Feature's order, every feature V1's alone", "[unit]") {
  const auto& rows = capabilities();
  REQUIRE(rows.size() == 11);
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(size_t(rows[i].feature) == i);
    // vLLM 0.15.1 runs each of these in V1's scheduler only (capabilities.hpp).
    CHECK(supports(Policy::kVllmV1, rows[i].feature));
    CHECK_FALSE(supports(Policy::kVllmV0, rows[i].feature));
    CHECK_FALSE(supports(Policy::kChunked, rows[i].feature));
  }
}

TEST_CASE("capabilities: a refusal names the policy and the feature's own setting", "[unit]") {
  CHECK(refusal(Policy::kChunked, Feature::kLora) == "LoRA is modelled for vllm-v1, not chunked");
  CHECK(refusal(Policy::kVllmV0, Feature::kV1SchedulerOptions).find("vllm-v0 is a V0 policy") !=
        std::string::npos);
  CHECK_NOTHROW(require(Policy::kVllmV1, Feature::kSpeculativeDecoding));
  try {
    require(Policy::kVllmV0, Feature::kSpeculativeDecoding);
    FAIL("vllm-v0 was given speculative decoding");
  } catch (const Error& e) {
    CHECK(e.path() == field::kSpeculativeConfig);
    CHECK(std::string(e.what()).find("not vllm-v0") != std::string::npos);
  }
  try {
    require(Policy::kChunked, Feature::kKvConnector, field::kKvTransferConfig);
    FAIL("chunked was given a KV connector");
  } catch (const Error& e) {
    CHECK(e.path() == field::kKvTransferConfig);
  }
}

TEST_CASE("capabilities: V1's block pool keeps a null block", "[unit]") {
  CHECK(min_num_gpu_blocks(Policy::kVllmV1) == 2);
  CHECK(min_num_gpu_blocks(Policy::kVllmV0) == 1);
  CHECK(min_num_gpu_blocks(Policy::kChunked) == 1);
}
