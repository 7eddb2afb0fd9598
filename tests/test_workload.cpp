// Synthetic workloads: spec parsing, bounds, determinism, arrival statistics.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "traces/synthetic.hpp"
#include "util/error.hpp"

using namespace servesim;

TEST_CASE("length specs parse, and malformed ones name the flag", "[workload]") {
  CHECK(LengthDist::parse("fixed:7", "input-len").min == 7);
  const LengthDist u = LengthDist::parse("uniform:2:9", "input-len");
  CHECK(u.kind == LengthDist::Kind::kUniform);
  CHECK(u.min == 2);
  CHECK(u.max == 9);
  const LengthDist n = LengthDist::parse("normal:512:256:2:7000", "input-len");
  CHECK(n.a == 512);
  CHECK(n.b == 256);
  CHECK(n.min == 2);
  CHECK(n.max == 7000);
  CHECK(LengthDist::parse("lognormal:1024:0.8", "x").max == INT32_MAX);
  for (const char* bad : {"fixed", "fixed:0", "fixed:1.5", "uniform:9:2", "normal:1", "gauss:1:2",
                          "normal:a:1", "lognormal:0:1", "normal:5:-1", "normal:5:1:9:2", ""}) {
    INFO(bad);
    try {
      LengthDist::parse(bad, "output-len");
      FAIL("accepted " << bad);
    } catch (const Error& e) {
      CHECK(e.field() == "output-len");
    }
  }
}

TEST_CASE("synthetic workloads respect bounds and are reproducible", "[workload]") {
  SyntheticOptions o;
  o.num_requests = 5000;
  o.request_rate = 20;
  o.input_len = LengthDist::parse("normal:512:256:2:7000", "input-len");
  o.output_len = LengthDist::parse("uniform:1:4", "output-len");
  o.seed = 42;
  const Workload a = generate_synthetic(o), b = generate_synthetic(o);
  REQUIRE(a.size() == 5000);
  bool same = true;
  for (size_t i = 0; i < a.size(); ++i) {
    same = same && a[i].arrival_s == b[i].arrival_s && a[i].input_tokens == b[i].input_tokens &&
           a[i].output_tokens == b[i].output_tokens;
    CHECK(a[i].id == i);
    CHECK(a[i].input_tokens >= 2);
    CHECK(a[i].input_tokens <= 7000);
    CHECK(a[i].output_tokens >= 1);
    CHECK(a[i].output_tokens <= 4);
    if (i > 0) CHECK(a[i].arrival_s >= a[i - 1].arrival_s);
  }
  CHECK(same);
  CHECK(a[0].arrival_s == 0);  // benchmark_serving.py sends the first request at once
  // Poisson at 20 req/s: 4999 gaps with mean 0.05 s; the sample mean is within 5% (about 3.5
  // standard errors).
  CHECK(a.back().arrival_s / 4999 == Approx(0.05).epsilon(0.05));
  const double mean_in =
      std::accumulate(a.begin(), a.end(), 0.0,
                      [](double s, const RequestSpec& r) { return s + r.input_tokens; }) /
      double(a.size());
  CHECK(mean_in == Approx(512).epsilon(0.03));

  o.seed = 43;
  const Workload c = generate_synthetic(o);
  CHECK(c[1].arrival_s != a[1].arrival_s);
}

TEST_CASE("changing the rate keeps the lengths, rate inf puts every request at t=0", "[workload]") {
  SyntheticOptions o;
  o.num_requests = 100;
  o.input_len = LengthDist::parse("lognormal:1000:1", "input-len");
  o.seed = 7;
  o.request_rate = 5;
  const Workload slow = generate_synthetic(o);
  o.request_rate = INFINITY;
  const Workload burst = generate_synthetic(o);
  for (size_t i = 0; i < slow.size(); ++i) {
    CHECK(slow[i].input_tokens == burst[i].input_tokens);
    CHECK(burst[i].arrival_s == 0);
  }
}

TEST_CASE("burstiness below 1 spreads inter-arrival times more than Poisson", "[workload]") {
  auto cv = [](double burstiness) {
    SyntheticOptions o;
    o.num_requests = 20000;
    o.request_rate = 10;
    o.burstiness = burstiness;
    const Workload w = generate_synthetic(o);
    double sum = 0, sq = 0;
    for (size_t i = 1; i < w.size(); ++i) {
      const double g = w[i].arrival_s - w[i - 1].arrival_s;
      sum += g;
      sq += g * g;
    }
    const double n = double(w.size() - 1), mean = sum / n;
    return std::sqrt(sq / n - mean * mean) / mean;
  };
  // Gamma(k): coefficient of variation 1 / sqrt(k).
  CHECK(cv(1.0) == Approx(1.0).epsilon(0.05));
  CHECK(cv(0.25) == Approx(2.0).epsilon(0.08));
}

TEST_CASE("bad workload options are errors", "[workload]") {
  SyntheticOptions o;
  o.num_requests = 0;
  CHECK_THROWS_AS(generate_synthetic(o), Error);
  o.num_requests = 10;
  o.request_rate = -1;
  CHECK_THROWS_AS(generate_synthetic(o), Error);
  o.request_rate = 1;
  o.burstiness = 0;
  CHECK_THROWS_AS(generate_synthetic(o), Error);
}
