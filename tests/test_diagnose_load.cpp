// servesim diagnose under real load, trace-driven, through the command line: a trace replayed
// twice near the replica's capacity, once with --input-scale 2, must be diagnosed as the prompts
// (input_length), not as the host (throughput), although OTPS falls with them; the same trace on
// a slower GPU must still be throughput; both at once must be the prompts with the host flagged.
// The traces are synthetic (`servesim trace synth`), so the tests run anywhere; one [shared] test
// replays the Azure 2023 code trace from ../shared.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_helpers.hpp"
#include "shared_data.hpp"

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;
using servesim::test::call_cli;
using servesim::test::slurp;

namespace {

// `servesim trace synth` into DIR/trace.h5: N requests at RATE req/s with the given lengths.
std::string synth(const fs::path& dir, const std::string& n, const std::string& rate,
                  const std::string& input_len, const std::string& output_len) {
  const std::string path = (dir / "trace.h5").string();
  REQUIRE(call_cli({"trace", "synth", "--num-requests", n, "--request-rate", rate, "--input-len",
                    input_len, "--output-len", output_len, "--seed", "5", "-o", path})
              .code == 0);
  return path;
}

// `servesim run --trace TRACE EXTRA... --requests-csv DIR/NAME.csv`: the request log.
std::string replay(const fs::path& dir, const std::string& trace, const std::string& name,
                   const std::vector<std::string>& extra = {}) {
  const std::string csv = (dir / (name + ".csv")).string();
  // V0's chunked prefill, on the V0 engine: the loads below were sized for it (run's default,
  // vllm-v1, is faster on the same GPU).
  std::vector<std::string> args = {"run",     "--trace",        trace, "--scheduler",
                                   "chunked", "--requests-csv", csv};
  args.insert(args.end(), extra.begin(), extra.end());
  REQUIRE(call_cli(args).code == 0);
  return csv;
}

struct Diagnosed {
  std::string out;  // the text
  json d;           // the --json file
};

Diagnosed diagnose(const fs::path& dir, const std::string& base, const std::string& cur) {
  const std::string path = (dir / "d.json").string();
  const auto r = call_cli({"diagnose", base, cur, "--period-s", "60", "--json", path});
  REQUIRE(r.code == 0);
  return {r.out, json::parse(slurp(path))};
}

double rel(const json& d, const char* stat) {
  const double b = d["baseline"]["p50"][stat].get<double>();
  return (d["current"]["p50"][stat].get<double>() - b) / b;
}

double rel_top(const json& d, const char* stat) {
  const double b = d["baseline"][stat].get<double>();
  return (d["current"][stat].get<double>() - b) / b;
}

// A trace of N requests at RATE req/s replayed as it is and with --input-scale 2, diagnosed.
Diagnosed prompts_doubled(const fs::path& dir, const std::string& n, const std::string& rate,
                          const std::string& input_len, const std::string& output_len) {
  const std::string trace = synth(dir, n, rate, input_len, output_len);
  const std::string base = replay(dir, trace, "base");
  return diagnose(dir, base, replay(dir, trace, "longer", {"--input-scale", "2"}));
}

// The parts of the change at p50 and p95 sum to it: input length + output length + speed.
void require_input_split(const json& d) {
  REQUIRE(d["change"]["split"] == "input_output_speed");
  for (const char* q : {"p50", "p95"}) {
    const json& p = d["change"][q];
    const double input = p["input_length_ms"].get<double>();
    CHECK(std::abs(input + p["output_length_ms"].get<double>() + p["speed_ms"].get<double>() -
                   p["invocation_latency_ms"].get<double>()) < 1e-9);
    CHECK(input == p["ttft_ms"].get<double>());  // the whole TTFT change, queueing included
  }
}

// Longer prompts under load: OTPS fell beyond the tolerance (today's rule would page), yet the
// verdict is the prompts, said first, with the host check passing.
void require_prompts_verdict(const Diagnosed& r) {
  const json& d = r.d;
  CHECK(rel_top(d, "input_tokens_p50") == Approx(1.0).margin(0.01));
  CHECK(rel(d, "otps") < -0.1);
  CHECK(rel(d, "ttft_ms") > 0.1);
  CHECK(d["verdict"]["finding"] == "input_length");
  CHECK_THAT(d["verdict"]["headline"].get<std::string>(), Contains("prompts got longer"));
  CHECK_THAT(d["verdict"]["headline"].get<std::string>(), Contains("not the host"));
  CHECK_THAT(r.out, Contains("verdict (input_length)"));
  CHECK_THAT(r.out, Contains("a consequence of the prompts"));
  CHECK_THAT(r.out, Contains("the host prefills as fast as before"));
  // The fastest prefills hold: longer prompts and load do not slow them.
  CHECK(std::abs(rel_top(d, "prefill_tps_p99")) < 0.1);
  require_input_split(d);
}

}  // namespace

TEST_CASE("diagnose under load: longer prompts are input length and not throughput", "[diagnose]") {
  const fs::path dir = servesim::test::scratch("diagnose_load_prompts");
  SECTION("code-like: long prompts, short answers, near capacity (GPU ~90% busy)") {
    const Diagnosed r =
        prompts_doubled(dir, "1000", "6", "lognormal:1500:0.8:16:8000", "lognormal:16:1:1:500");
    require_prompts_verdict(r);
    // Queueing carries most of the TTFT change: all of it is the prompts' doing.
    const json& p = r.d["change"]["p50"];
    CHECK(rel_top(r.d, "queue_ms_p50") > 1);
    CHECK(p["input_length_ms"].get<double>() > 0.3 * p["invocation_latency_ms"].get<double>());
  }
  SECTION("chat-like: ShareGPT lengths near capacity, decode slowed by the prompts' chunks") {
    const Diagnosed r =
        prompts_doubled(dir, "600", "4", "lognormal:1024:0.8:16:6000", "lognormal:256:0.8:4:2000");
    require_prompts_verdict(r);
    // Here most of the change is slower decode, which the verdict still lays on the prompts.
    const json& p = r.d["change"]["p50"];
    CHECK(p["speed_ms"].get<double>() > p["input_length_ms"].get<double>());
  }
}

TEST_CASE("diagnose under load: a slower GPU on the same trace is still throughput", "[diagnose]") {
  const fs::path dir = servesim::test::scratch("diagnose_load_gpu");
  const std::string trace =
      synth(dir, "1000", "6", "lognormal:1500:0.8:16:8000", "lognormal:16:1:1:500");
  const std::string base = replay(dir, trace, "base");
  const std::string slow = replay(dir, trace, "slow", {"--gpu", "a100-80g"});
  const Diagnosed r = diagnose(dir, base, slow);
  const json& d = r.d;
  CHECK(d["verdict"]["finding"] == "throughput");
  CHECK(rel_top(d, "input_tokens_p50") == 0);
  CHECK(rel(d, "otps") < -0.25);
  CHECK(rel_top(d, "prefill_tps_p99") < -0.25);  // the host check sees it too
  CHECK(d["change"]["split"] == "ttft_decode");
  CHECK(d["change"]["p50"]["input_length_ms"].is_null());
  CHECK_THAT(r.out, Contains("the prompts held"));
}

TEST_CASE("diagnose under load: longer prompts on a slower GPU flag the host too", "[diagnose]") {
  const fs::path dir = servesim::test::scratch("diagnose_load_both");
  const std::string trace =
      synth(dir, "600", "2.5", "lognormal:1500:0.8:16:8000", "lognormal:16:1:1:500");
  const std::string base = replay(dir, trace, "base");
  const std::string both = replay(dir, trace, "both", {"--gpu", "a100-80g", "--input-scale", "2"});
  const Diagnosed r = diagnose(dir, base, both);
  const json& d = r.d;
  // The prompts come first; the headline says the host slowed as well.
  CHECK(d["verdict"]["finding"] == "input_length");
  CHECK_THAT(d["verdict"]["headline"].get<std::string>(), Contains("check the host as well"));
  CHECK_THAT(r.out, Contains("the host is slower as well"));
  CHECK(rel_top(d, "prefill_tps_p99") < -0.25);
  require_input_split(d);
}

TEST_CASE("diagnose under load: the Azure 2023 code trace with --input-scale 2 is input length",
          "[diagnose][shared]") {
  if (!servesim::test::have_shared("traces")) return;
  const fs::path dir = servesim::test::scratch("diagnose_load_azure");
  const std::string trace =
      (servesim::test::shared_path("traces") / "azure_llm_2023/AzureLLMInferenceTrace_code.csv")
          .string();
  const std::string base = replay(dir, trace, "base");
  const std::string longer = replay(dir, trace, "longer", {"--input-scale", "2"});
  const Diagnosed r = diagnose(dir, base, longer);
  REQUIRE(r.d["baseline"]["completed"] == 8819);
  require_prompts_verdict(r);
  // Queueing behind the longer prefills is most of the TTFT change.
  CHECK_THAT(r.out, Contains("mostly waiting to be scheduled"));
}

namespace {

// `servesim run --scheduler vllm-v1` of 1,000 requests at RATE req/s (the default lengths) at SEED
// with EXTRA, into DIR/NAME.h5: the results file records the configuration and the workload.
std::string run_h5(const fs::path& dir, const std::string& name, const std::string& rate,
                   const std::vector<std::string>& extra = {}, const std::string& seed = "1") {
  const std::string path = (dir / (name + ".h5")).string();
  std::vector<std::string> args = {"run",  "--scheduler",    "vllm-v1", "--num-requests",
                                   "1000", "--request-rate", rate,      "--seed",
                                   seed,   "--out",          path};
  args.insert(args.end(), extra.begin(), extra.end());
  REQUIRE(call_cli(args).code == 0);
  return path;
}

}  // namespace

TEST_CASE("diagnose under load: longer answers are output_length, a slower host throughput",
          "[diagnose]") {
  // The case: outputs of median 512 instead of 256 read as "throughput: OTPS down" at
  // 5 req/s because under load longer answers keep more requests decoding at once. The host
  // check at matched concurrency tells them apart at every load.
  const fs::path dir = servesim::test::scratch("diagnose_load_outputs");
  for (const std::string rate : {"2", "5", "8"}) {
    INFO("request rate " << rate << " req/s");
    const std::string base = run_h5(dir, "base" + rate, rate);
    const Diagnosed longer = diagnose(
        dir, base, run_h5(dir, "long" + rate, rate, {"--output-len", "lognormal:512:0.8:4:2000"}));
    const json& d = longer.d;
    CHECK(d["verdict"]["finding"] == "output_length");
    CHECK(rel(d, "output_token_count") == Approx(1.0).margin(0.05));
    CHECK(d["verdict"]["host_check"]["decode_slower"] == false);
    CHECK(d["verdict"]["host_check"]["decode_speed_tps_per_sequence"]["relative"].get<double>() >
          -0.1);
    // Its decode concurrency rose with the answers' length.
    CHECK(d["current"]["decode_load"]["concurrency_p50"].get<double>() >
          1.5 * d["baseline"]["decode_load"]["concurrency_p50"].get<double>());
    // The recorded workload options are named.
    CHECK_THAT(longer.out, Contains("recorded configuration: workload.output_len"));
    CHECK_THAT(longer.out, Contains("not a throughput incident"));
    if (rate != "2") CHECK(rel(d, "otps") < -0.1);  // the old rule would have paged here

    const Diagnosed slower =
        diagnose(dir, base, run_h5(dir, "a100_" + rate, rate, {"--gpu", "a100-80g"}));
    CHECK(slower.d["verdict"]["finding"] == "throughput");
    CHECK(slower.d["verdict"]["host_check"]["decode_slower"] == true);
    CHECK(slower.d["verdict"]["host_check"]["decode_speed_tps_per_sequence"]["relative"]
              .get<double>() < -0.25);
    CHECK_THAT(slower.out, Contains("recorded configuration: gpu: h100-sxm -> a100-80g"));
  }
}

TEST_CASE("diagnose under load: seed noise is never throughput and never fails --fail-on-alarm",
          "[diagnose]") {
  // Seed 1 against other seeds, same host, near saturation: OTPS p50 moves by up to ~15% with
  // the arrival sample. With 30 s periods the CloudWatch alarm fires on some; the verdict puts it
  // on noise, so --fail-on-alarm passes, and --fail-on-any-alarm (CloudWatch's paging) fails.
  const fs::path dir = servesim::test::scratch("diagnose_load_noise");
  int noise = 0, excused = 0;
  for (const std::string rate : {"2", "5", "8", "9"}) {
    const std::string base = run_h5(dir, "seed1_" + rate, rate);
    for (const std::string seed : {"2", "5", "9"}) {
      INFO("request rate " << rate << " req/s, seed " << seed);
      const std::string cur = run_h5(dir, "seed" + seed + "_" + rate, rate, {}, seed);
      const std::string path = (dir / "noise.json").string();
      const auto r =
          call_cli({"diagnose", base, cur, "--period-s", "30", "--fail-on-alarm", "--json", path});
      CHECK(r.code == 0);
      const json d = json::parse(slurp(path));
      const std::string finding = d["verdict"]["finding"].get<std::string>();
      CHECK((finding == "none" || finding == "noise"));
      noise += finding == "noise";
      CHECK(d["verdict"]["config_changes"].empty());
      if (d["alarm"]["fired"] == true) {
        ++excused;
        CHECK(d["alarm"]["excused"] == true);
        CHECK_THAT(r.out, Contains("excused"));
        CHECK(call_cli({"diagnose", base, cur, "--period-s", "30", "--fail-on-any-alarm"}).code ==
              1);
      }
      if (finding == "noise") {
        CHECK_THAT(d["verdict"]["headline"].get<std::string>(),
                   Contains("but for the seed (" + seed + " instead of 1)"));
      }
    }
  }
  // The cases above include the noisy ones: seed 5 lowers OTPS p50 beyond 10% at 8 and 9 req/s,
  // and fires the alarm at 9 (measured when this test was written).
  CHECK(noise >= 2);
  CHECK(excused >= 1);
}
