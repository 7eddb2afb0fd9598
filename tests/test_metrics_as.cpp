// --metrics-as (issue 24): a run's metrics as vLLM's bench serve, GuideLLM and inference-perf
// define and name them, by hand on three requests, and through the command line against
// servesim's own summary where the definitions agree.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/metrics_as.hpp"
#include "cli_helpers.hpp"
#include "util/error.hpp"

using namespace servesim;
using nlohmann::json;
using servesim::test::call_cli;
using servesim::test::refused;
using servesim::test::scratch;
using servesim::test::slurp;

namespace {

RequestRecord request(double arrival, double first, double last, int32_t output, bool done) {
  RequestRecord q;
  q.arrival_s = arrival;
  q.first_scheduled_s = arrival;
  q.first_token_s = first;
  q.last_token_s = last;
  q.output_tokens = output;
  q.input_tokens = 10;
  q.status = done ? SeqStatus::kFinished : SeqStatus::kRejected;
  return q;
}

// A: TTFT 100 ms, 11 tokens over 1.1 s (TPOT 100 ms, latency per token 100 ms). B: one token at
// 300 ms (no TPOT; 300 ms per token). C: TTFT 200 ms, 5 tokens over 2.2 s (TPOT 500 ms, 440 ms
// per token). D: rejected.
RunResult three_requests() {
  RunResult r;
  r.requests = {request(0, 0.1, 1.1, 11, true), request(1, 1.3, 1.3, 1, true),
                request(2, 2.2, 4.2, 5, true), request(3, -1, -1, 7, false)};
  r.summary.total = 4;
  r.summary.completed = 3;
  r.summary.output_tokens = 17;
  r.summary.makespan_s = 4.2;
  r.summary.requests_per_s = 3 / 4.2;
  return r;
}

}  // namespace

TEST_CASE("metrics as vLLM, GuideLLM and inference-perf, by hand", "[metrics]") {
  const RunResult r = three_requests();
  const json v = metrics_as_json(r, MetricsTool::kVllm, {50, 99});
  CHECK(v["tool"] == "vllm");
  CHECK(v["completed"] == 3);
  CHECK(v["mean_ttft_ms"].get<double>() == Approx(200));
  CHECK(v["std_ttft_ms"].get<double>() == Approx(std::sqrt(20000.0 / 3)));
  // TPOT excludes the first token and the one-token request: A and C.
  CHECK(v["mean_tpot_ms"].get<double>() == Approx(300));
  CHECK(v["p99_tpot_ms"].get<double>() == Approx(100 + 0.99 * 400));
  CHECK(v["median_e2el_ms"].get<double>() == Approx(1100));

  const json g = metrics_as_json(r, MetricsTool::kGuidellm);
  // GuideLLM's ITL is vLLM's TPOT per request; its TPOT is latency / tokens, the first included.
  CHECK(g["inter_token_latency_ms"]["mean"].get<double>() == Approx(300));
  CHECK(g["inter_token_latency_ms"]["count"] == 2);
  CHECK(g["time_per_output_token_ms"]["mean"].get<double>() == Approx((100 + 300 + 440) / 3.0));
  CHECK(g["time_per_output_token_ms"]["max"].get<double>() == Approx(440));
  CHECK(g["request_latency"]["mean"].get<double>() == Approx(1.2));  // seconds
  CHECK(g["time_to_first_token_ms"]["percentiles"]["p50"].get<double>() == Approx(200));

  const json p = metrics_as_json(r, MetricsTool::kInferencePerf);
  const json& lat = p["successes"]["latency"];
  CHECK(p["successes"]["count"] == 3);
  CHECK(p["failures"]["count"] == 1);
  CHECK(lat["time_per_output_token"]["mean"].get<double>() == Approx(0.3));
  CHECK(lat["time_per_output_token"]["units"] == "s/token");
  CHECK(lat["normalized_time_per_output_token"]["mean"].get<double>() == Approx(0.28));
  CHECK(lat["time_to_first_token"]["min"].get<double>() == Approx(0.1));
  CHECK(lat["request_latency"]["max"].get<double>() == Approx(2.2));

  CHECK(parse_metrics_tool("inference-perf") == MetricsTool::kInferencePerf);
  CHECK_THROWS_AS(parse_metrics_tool("genai-perf"), Error);
}

TEST_CASE("cli: --metrics-as agrees with servesim's summary where the definitions agree",
          "[metrics][cli]") {
  const auto dir = scratch("metrics_as");
  for (const char* tool : {"vllm", "guidellm", "inference-perf"}) {
    const std::string path = (dir / (std::string(tool) + ".json")).string();
    const auto r = call_cli({"run", "--num-requests", "200", "--metrics-as", tool, "--json", path});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains(std::string("metrics as ") + tool + " reports them"));
    const json j = json::parse(slurp(path));
    const json& m = j["metrics_as"];
    REQUIRE(m["tool"] == tool);
    const double tpot_p50 = j["tpot_ms"]["p50"].get<double>();
    const double ttft_p50 = j["ttft_ms"]["p50"].get<double>();
    if (std::string(tool) == "vllm") {
      CHECK(m["median_tpot_ms"].get<double>() == Approx(tpot_p50));
      CHECK(m["median_ttft_ms"].get<double>() == Approx(ttft_p50));
      CHECK(m["median_itl_ms"].get<double>() == Approx(j["itl_ms"]["p50"].get<double>()));
      CHECK(m["completed"] == j["requests"]["completed"]);
    } else if (std::string(tool) == "guidellm") {
      CHECK(m["inter_token_latency_ms"]["median"].get<double>() == Approx(tpot_p50));
      // Its TPOT spreads TTFT over the tokens: never below the decode-only one on average.
      CHECK(m["time_per_output_token_ms"]["mean"].get<double>() >
            m["inter_token_latency_ms"]["mean"].get<double>() * 0.99);
    } else {
      const json& lat = m["successes"]["latency"];
      CHECK(lat["time_per_output_token"]["p50"].get<double>() * 1e3 == Approx(tpot_p50));
      CHECK(lat["time_to_first_token"]["p50"].get<double>() * 1e3 == Approx(ttft_p50));
    }
  }
  // compare's JSON carries it per policy.
  const std::string cj = (dir / "compare.json").string();
  REQUIRE(call_cli({"compare", "--num-requests", "100", "--scheduler", "vllm-v0,vllm-v1",
                    "--metrics-as", "vllm", "--json", cj})
              .code == 0);
  const json c = json::parse(slurp(cj));
  CHECK(c["runs"][1]["metrics_as"]["tool"] == "vllm");
  refused({"run", "--num-requests", "10", "--metrics-as", "genai-perf"}, "field 'metrics-as'");
}
