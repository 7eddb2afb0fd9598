// Generated priorities (--num-priorities) for vLLM V1's priority policy.
#include <array>
#include <catch2/catch.hpp>
#include <string>

#include "analysis/run_spec.hpp"
#include "helpers.hpp"
#include "util/error.hpp"

using namespace servesim;
using servesim::test::error_field;

namespace {

RunSpec random_spec() {
  RunSpec s;
  s.num_requests = 400;
  return s;
}

}  // namespace

TEST_CASE("generated workloads: --num-priorities draws priorities, leaving the rest unchanged",
          "[workload][priority]") {
  Inputs inputs;
  const RunSpec plain = random_spec();
  RunSpec ranked = plain;
  ranked.num_priorities = 3;
  const LoadedWorkload a = load_workload(plain, inputs), b = load_workload(ranked, inputs);
  REQUIRE(a.requests.size() == b.requests.size());
  std::array<int, 3> seen{};
  for (size_t i = 0; i < a.requests.size(); ++i) {
    CHECK(a.requests[i].priority == 0);
    CHECK(b.requests[i].arrival_s == a.requests[i].arrival_s);
    CHECK(b.requests[i].input_tokens == a.requests[i].input_tokens);
    CHECK(b.requests[i].output_tokens == a.requests[i].output_tokens);
    REQUIRE((b.requests[i].priority >= 0 && b.requests[i].priority < 3));
    ++seen[size_t(b.requests[i].priority)];
  }
  for (const int n : seen)
    CHECK(n > 100);  // about 133 each
  CHECK(b.json["num_priorities"] == 3);
  CHECK_THAT(b.text, Catch::Contains("priorities uniform in 0..2"));
  // The same seed draws the same priorities; another seed others.
  const LoadedWorkload again = load_workload(ranked, inputs);
  RunSpec reseeded = ranked;
  reseeded.seed = 1;
  const LoadedWorkload other = load_workload(reseeded, inputs);
  int same = 0, differ = 0;
  for (size_t i = 0; i < b.requests.size(); ++i) {
    same += again.requests[i].priority == b.requests[i].priority;
    differ += other.requests[i].priority != b.requests[i].priority;
  }
  CHECK(same == int(b.requests.size()));
  CHECK(differ > 100);

  RunSpec zero = ranked;
  zero.num_priorities = 0;
  CHECK(error_field([&] { load_workload(zero, inputs); }) == "num-priorities");
  RunSpec traced = ranked;
  traced.trace = "any.csv";
  CHECK(error_field([&] { check_flags(traced); }) == "num-priorities");
}
