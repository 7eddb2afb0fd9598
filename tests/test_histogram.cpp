// LogHistogram quantiles against exact order statistics.
#include <algorithm>
#include <boost/random/lognormal_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <catch2/catch.hpp>
#include <vector>

#include "util/histogram.hpp"
#include "util/stats.hpp"

using namespace servesim;

TEST_CASE("histogram quantiles are within 0.2% of numpy's exact percentiles", "[metrics]") {
  boost::random::mt19937_64 rng(1);
  boost::random::lognormal_distribution<double> gap(std::log(0.02), 1.2);  // ITL-like seconds
  LogHistogram h;
  std::vector<double> exact;
  for (int i = 0; i < 200000; ++i) {
    const double v = gap(rng);
    h.add(v);
    exact.push_back(v);
  }
  std::sort(exact.begin(), exact.end());
  for (double q : {0.0, 1.0, 10.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0}) {
    INFO("q = " << q);
    const double want = percentile_sorted(exact, q);
    CHECK(std::abs(h.quantile(q / 100) - want) / want < 0.002);
  }
  CHECK(h.count() == exact.size());
  CHECK(h.max() == exact.back());
  CHECK(h.min() == exact.front());
}

TEST_CASE("histogram of a few values: ends are exact, middle interpolates", "[metrics]") {
  LogHistogram h;
  for (double v : {0.010, 0.020, 0.030, 0.040})
    h.add(v);
  CHECK(h.quantile(0) == 0.010);
  CHECK(h.quantile(1) == 0.040);
  CHECK(h.quantile(0.5) == Approx(0.025).epsilon(0.005));
  CHECK(h.mean() == Approx(0.025));
  LogHistogram empty;
  CHECK(empty.quantile(0.5) == 0);
}

TEST_CASE("exact stats follow numpy's linear interpolation", "[metrics]") {
  std::vector<double> v = {4, 1, 3, 2};
  const Stats s = summarize(v);
  CHECK(s.p50 == Approx(2.5));
  CHECK(s.p90 == Approx(3.7));
  CHECK(s.mean == Approx(2.5));
  CHECK(s.max == 4);
  CHECK(s.count == 4);
}
