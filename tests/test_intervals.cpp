// Prediction intervals (issue 43): split-conformal on the held-out error of real vLLM runs, the
// widest interval out of the fitted range, printed by run and in its JSON, covered in validate.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/intervals.hpp"
#include "analysis/validate.hpp"
#include "cli_helpers.hpp"
#include "shared_data.hpp"

using namespace servesim;
using servesim::test::call_cli;
using servesim::test::scratch;
using servesim::test::slurp;

namespace {

Regime in_range_regime() {
  Regime g;
  g.decode_batch = 20;
  g.context_tokens = 700;
  g.tp = 1;
  g.arch = GpuArch::kHopper;
  return g;
}

}  // namespace

TEST_CASE("intervals: wider with the level, widest out of the fitted range", "[intervals]") {
  const IntervalSet low = prediction_intervals(in_range_regime(), 0.5);
  const IntervalSet high = prediction_intervals(in_range_regime(), 0.9);
  REQUIRE(high.calibration_rows >= 20);
  CHECK(low.extrapolated.empty());
  for (int m = 0; m < kNumIntervalMetrics; ++m) {
    INFO(interval_metric_name(IntervalMetric(m)));
    CHECK(low.factor[size_t(m)] >= 1.0);
    CHECK(high.factor[size_t(m)] >= low.factor[size_t(m)]);
    CHECK(high.lo(IntervalMetric(m), 100) <= 100);
    CHECK(high.hi(IntervalMetric(m), 100) >= 100);
  }
  // Each way out of the range is named, and each gets the widest interval.
  Regime busy = in_range_regime();
  busy.decode_batch = 245;
  Regime longer = in_range_regime();
  longer.context_tokens = 6000;
  Regime wide = in_range_regime();
  wide.tp = 8;
  Regime gpu = in_range_regime();
  gpu.arch = GpuArch::kBlackwell;
  Regime mla = in_range_regime();
  mla.mla = true;
  Regime nodes = in_range_regime();
  nodes.multi_node = true;
  for (const Regime& g : {busy, longer, wide, gpu, mla, nodes}) {
    const IntervalSet out = prediction_intervals(g, 0.9);
    REQUIRE(out.extrapolated.size() == 1);
    const IntervalSet top = prediction_intervals(in_range_regime(), max_interval_level());
    for (int m = 0; m < kNumIntervalMetrics; ++m) {
      CHECK(out.factor[size_t(m)] >= high.factor[size_t(m)]);
      CHECK(out.factor[size_t(m)] >= top.factor[size_t(m)]);
    }
  }
  CHECK_THAT(prediction_intervals(busy, 0.9).extrapolated[0], Catch::Contains("245"));
  CHECK_THAT(prediction_intervals(mla, 0.9).extrapolated[0], Catch::Contains("TPOT"));
  // MLA's published runs were off by more than any held-out row: no bound at all.
  CHECK(prediction_intervals(mla, 0.9).lo(IntervalMetric::kTpotMean, 10) == 0);
  CHECK(std::isinf(prediction_intervals(mla, 0.9).hi(IntervalMetric::kE2eP99, 10)));
  CHECK(std::isfinite(prediction_intervals(nodes, 0.9).hi(IntervalMetric::kE2eP99, 10)));
}

TEST_CASE("intervals: levels the table cannot support are errors naming --interval",
          "[intervals]") {
  CHECK(parse_interval_level("none") == 0);
  CHECK(parse_interval_level("0.8") == 0.8);
  for (const char* bad : {"", "1", "1.5", "-0.1", "0.9x", "ninety"})
    CHECK_THROWS_WITH(parse_interval_level(bad), Catch::Contains("field 'interval'"));
  CHECK(max_interval_level() < 1);
  CHECK_THROWS_WITH(prediction_intervals(in_range_regime(), 0.999), Catch::Contains("n / (n + 1)"));
  const auto r = call_cli({"run", "--num-requests", "20", "--interval", "2"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("field 'interval'"));
}

TEST_CASE("intervals: run prints them beside the figures and records them in the JSON",
          "[intervals]") {
  const std::filesystem::path json = scratch("intervals") / "run.json";
  const auto r =
      call_cli({"run", "--num-requests", "200", "--request-rate", "4", "--json", json.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("90% prediction intervals"));
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  const nlohmann::json& p = j.at("prediction_intervals");
  CHECK(p.at("level") == 0.9);
  const nlohmann::json& sj = j.contains("summary") ? j.at("summary") : j;
  const double ttft = sj.at("ttft_ms").at("mean");
  const double lo = p.at("figures").at("ttft_ms.mean")[0],
               hi = p.at("figures").at("ttft_ms.mean")[1];
  CHECK(lo < ttft);
  CHECK(hi > ttft);
  const auto none = call_cli({"run", "--num-requests", "200", "--interval", "none"});
  REQUIRE(none.code == 0);
  CHECK_THAT(none.out, !Catch::Contains("prediction intervals"));
}

TEST_CASE("intervals: 90% intervals cover the shared ground truth's measured figures [shared]",
          "[intervals][shared]") {
  if (!test::have_shared("groundtruth/vllm-0.15.1-h100.csv")) return;
  if (!test::have_shared("groundtruth/vllm-0.15.1-more.csv")) return;
  const std::filesystem::path dir = test::shared_path("groundtruth");
  std::vector<ValidateRow> rows;
  for (const char* f : {"vllm-0.15.1-h100.csv", "vllm-0.15.1-more.csv"}) {
    ValidateOptions o;
    o.jobs = 2;
    const std::vector<ValidateRow> v =
        validate_ground_truth(read_ground_truth((dir / f).string()), o);
    rows.insert(rows.end(), v.begin(), v.end());
  }
  for (int m = 0; m < kNumIntervalMetrics; ++m) {
    const IntervalCoverage c = interval_coverage(rows, IntervalMetric(m));
    INFO(interval_metric_name(IntervalMetric(m)) << ": " << c.inside << " of " << c.rows);
    REQUIRE(c.rows >= 20);
    CHECK(double(c.inside) >= 0.85 * double(c.rows));
  }
}

TEST_CASE("intervals: each summary metric's pessimistic end borrows the nearest held-out figure",
          "[intervals]") {
  const IntervalSet s = prediction_intervals(in_range_regime(), 0.9);
  using M = IntervalMetric;
  const auto f = [&](M m) { return s.factor[size_t(m)]; };
  CHECK(pessimistic_value("ttft_ms_p50", 100, s) == Approx(100 * f(M::kTtftMean)));
  CHECK(pessimistic_value("ttft_ms_p90", 100, s) == Approx(100 * f(M::kTtftP90)));
  CHECK(pessimistic_value("ttft_ms_p95", 100, s) == Approx(100 * f(M::kTtftP99)));
  CHECK(pessimistic_value("queue_ms_p99", 100, s) == Approx(100 * f(M::kTtftP99)));
  CHECK(pessimistic_value("e2e_ms_mean", 100, s) == Approx(100 * f(M::kE2eMean)));
  CHECK(pessimistic_value("itl_ms_p99", 100, s) == Approx(100 * f(M::kTpotMean)));
  CHECK(pessimistic_value("tpot_ms_p50", 100, s) == Approx(100 * f(M::kTpotMean)));
  // Throughputs: lower is worse.
  CHECK(pessimistic_value("otps_p50", 100, s) == Approx(100 / f(M::kTpotMean)));
  CHECK(pessimistic_value("output_tokens_per_s", 100, s) == Approx(100 / f(M::kTpotMean)));
  // No held-out figure stands for these: unchanged.
  for (const char* none : {"kv_usage_max", "completed", "requests_per_s", "ttft_ms_x"})
    CHECK(pessimistic_value(none, 100, s) == 100);
  CHECK(pessimistic_value("ttft_ms_p99", 100, IntervalSet{}) == 100);
  CHECK_THROWS_WITH(parse_interval_level("0.99", "confidence"), Catch::Contains("confidence"));
}
