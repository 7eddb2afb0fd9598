// Answers users can trust (issue 10): rejections and undefined statistics are never good news,
// overload is stated, flags that would do nothing are errors, and vLLM's vocabulary means what
// it means in vLLM. Each case failed before its fix.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/replicates.hpp"
#include "cli_helpers.hpp"
#include "util/text_input.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using nlohmann::json;
using servesim::test::call_cli;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;

namespace {

json run_json(std::vector<std::string> args, const fs::path& file) {
  args.insert(args.begin(), "run");
  args.insert(args.end(), {"--json", file.string()});
  const auto r = call_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return json::parse(slurp(file));
}

// The fields of each line of a CSV text (RFC 4180 quoting: cost_source holds commas).
std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::stringstream lines(text);
  CsvSplitter splitter;
  std::vector<std::string_view> fields;
  std::string reason;
  for (std::string line; std::getline(lines, line);) {
    REQUIRE(splitter.split(line, fields, reason));
    rows.emplace_back(fields.begin(), fields.end());
  }
  return rows;
}

}  // namespace

TEST_CASE("check: a change that gets requests rejected is a regression, named", "[check][trust]") {
  const fs::path dir = scratch("trust_check_rejections");
  const std::string spec = (dir / "spec.ini").string();
  const std::string head =
      "baseline = base.h5\nnum-requests = 300\nseed = 1\n[tolerance]\nttft_ms.p50 = +10%\n"
      "otps.p50 = -5%\n[scenario.chat]\nscheduler = chunked:512\nrequest-rate = 8\n";
  write(spec, head);
  REQUIRE(call_cli({"check", spec, "--update"}).code == 0);
  write(spec, head + "max-model-len = 1500\n");
  const auto r = call_cli({"check", spec});
  CHECK(r.code == 1);  // was 0: TTFT and OTPS "improved" over the requests left
  CHECK_THAT(r.out, Catch::Contains("requests.rejected_share"));
  CHECK_THAT(r.out, Catch::Matches("(.|\n)*REGRESSED: [0-9]+ of 300 requests rejected(.|\n)*"));
  CHECK_THAT(r.out, Catch::Contains("not comparable: over fewer requests"));
  CHECK_THAT(r.out, !Catch::Contains("improved"));
}

TEST_CASE("check: files in a spec are relative to it, a new scenario is reported as new",
          "[check][trust]") {
  const fs::path dir = scratch("trust_check_paths");
  write(dir / "t.csv",
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,20\n0.5,300,40\n1,200,30\n");
  const std::string spec = (dir / "spec.ini").string();
  const std::string head =
      "baseline = base.h5\ntrace = t.csv\n[tolerance]\nttft_ms.p50 = +10%\n[scenario.a]\n";
  write(spec, head);
  const fs::path cwd = fs::current_path();
  fs::current_path(fs::temp_directory_path());  // not the spec's folder
  const auto update = call_cli({"check", spec, "--update"});
  write(spec, head + "[scenario.b]\nscheduler = vllm-v0\n");
  const auto r = call_cli({"check", spec});
  fs::current_path(cwd);
  INFO(update.err << r.err);
  REQUIRE(update.code == 0);  // was 2: t.csv looked for in the cwd
  CHECK(r.code == 0);         // was 2: "added since the baseline?"
  CHECK_THAT(r.out, Catch::Contains("new (no baseline: run check --update)"));
  CHECK_THAT(r.out, Catch::Contains("1 new"));
}

TEST_CASE("summaries: a statistic over no request is null and '-', never 0", "[cli][trust]") {
  const fs::path dir = scratch("trust_nulls");
  const auto r = call_cli({"run", "--num-requests", "20", "--max-model-len", "100", "--json",
                           (dir / "s.json").string()});
  REQUIRE(r.code == 0);
  const json j = json::parse(slurp(dir / "s.json"));
  CHECK(j["requests"]["rejected"] == 20);
  CHECK(j["requests"]["rejected_share"] == 1.0);
  CHECK(j["ttft_ms"]["p50"].is_null());
  CHECK(j["otps"]["p50_ratio"].is_null());
  CHECK_THAT(r.out, Catch::Contains("ttft_ms                   -"));
  CHECK_THAT(r.out, Catch::Contains("WARNING: 20 of 20 requests (100.0%) were rejected"));
}

TEST_CASE("overload: a queue that grows is stated in the summary, JSON, compare and sweeps",
          "[cli][trust]") {
  const fs::path dir = scratch("trust_overload");
  // One H100 serves about 13 req/s of this workload: 30 req/s overloads it, 4 req/s does not.
  const std::vector<std::string> load = {"--num-requests", "1500",
                                         "--input-len",    "normal:512:256:2:7000",
                                         "--output-len",   "normal:512:256:2:7000"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), load.begin(), load.end());
    return extra;
  };
  const json over = run_json(with({"--request-rate", "30"}), dir / "over.json");
  CHECK(over["overloaded"]["overloaded"] == true);
  CHECK(over["overloaded"]["waiting_at_last_arrival"].get<int64_t>() > 100);
  CHECK(over["overloaded"]["completion_rate_req_s"].get<double>() <
        over["overloaded"]["arrival_rate_req_s"].get<double>());
  CHECK(over["queue_len"]["p99"].get<double>() > 100);
  CHECK(over["gpu"].contains("kv_usage_p99"));
  const json ok = run_json(with({"--request-rate", "4"}), dir / "ok.json");
  CHECK(ok["overloaded"]["overloaded"] == false);
  CHECK(ok["overloaded"]["waiting_at_last_arrival"].get<int64_t>() < 10);

  std::vector<std::string> args = with({"--request-rate", "30"});
  args.insert(args.begin(), "compare");
  const auto c = call_cli(args);
  REQUIRE(c.code == 0);
  CHECK_THAT(c.out, Catch::Contains("OVERLOADED"));
  CHECK_THAT(c.out, Catch::Contains("No run is comparable"));
  CHECK_THAT(c.out, !Catch::Contains("has the lowest TTFT p50"));

  const auto s = call_cli({"sweep", "--num-requests", "800", "--input-len", "normal:512:256:2:7000",
                           "--output-len", "normal:512:256:2:7000", "--request-rate", "4,30",
                           "--csv", (dir / "s.csv").string(), "--out", (dir / "s.h5").string()});
  REQUIRE(s.code == 0);
  const auto rows = csv_rows(slurp(dir / "s.csv"));
  const auto col = std::find(rows[0].begin(), rows[0].end(), "overloaded") - rows[0].begin();
  REQUIRE(size_t(col) < rows[0].size());
  CHECK(rows[1][size_t(col)] == "0");
  CHECK(rows[2][size_t(col)] == "1");
}

TEST_CASE("overload: vLLM V1 overloads in running, with nothing waiting, and says so",
          "[cli][trust]") {
  const fs::path dir = scratch("trust_overload_running");
  // Long answers (about 1,450 tokens) on one H100 with an FP8 KV cache and max_num_seqs 1024:
  // V1 admits every request while KV lasts, so above its decode throughput the batch grows and
  // the steps slow while the waiting queue stays empty (issue 42: servesim judged overload by
  // `waiting`, which saw nothing here).
  auto load = [](const std::string& requests, const std::string& rate) {
    return std::vector<std::string>{
        "--scheduler",      "vllm-v1",   "--num-requests", requests,
        "--input-len",      "fixed:100", "--output-len",   "normal:1450:200:1000:2000",
        "--kv-cache-dtype", "fp8",       "--request-rate", rate};
  };
  const json over = run_json(load("1200", "18"), dir / "over.json");
  const json& o = over["overloaded"];
  INFO(o.dump());
  CHECK(o["overloaded"] == true);
  CHECK(o["judgeable"] == true);
  CHECK(o["waiting_at_last_arrival"].get<int64_t>() < 8);  // the old rule's leg saw nothing
  CHECK(over["ttft_ms"]["p99"].get<double>() < 1000);
  CHECK(o["in_system_at_last_arrival"].get<int64_t>() -
            o["in_system_at_median_arrival"].get<int64_t>() >
        o["growth_threshold"].get<double>());
  CHECK(o["late_completion_ratio"].get<double>() < 1 - 0.05);
  std::vector<std::string> args = load("1200", "18");
  args.insert(args.begin(), "run");
  const auto r = call_cli(args);
  CHECK_THAT(r.out, Catch::Contains("WARNING: overloaded: requests in the system"));
  // Well below its throughput the same load keeps up, with some 60 requests decoding at once.
  const json ok = run_json(load("2000", "4"), dir / "ok.json");
  INFO(ok["overloaded"].dump());
  CHECK(ok["overloaded"]["overloaded"] == false);
  CHECK(ok["overloaded"]["judgeable"] == true);
  CHECK(ok["overloaded"]["in_system_at_median_arrival"].get<int64_t>() > 40);
  // 300 requests are too few to tell a 5% shortfall from the noise of 60 in the system.
  const json few = run_json(load("300", "4"), dir / "few.json");
  INFO(few["overloaded"].dump());
  CHECK(few["overloaded"]["judgeable"] == false);
  CHECK(few["overloaded"]["overloaded"] == false);
}

TEST_CASE("flags that would do nothing are errors", "[cli][trust]") {
  const fs::path dir = scratch("trust_flags");
  write(dir / "t.csv",
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,20\n0.5,300,40\n1,200,30\n");
  const std::string trace = (dir / "t.csv").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", trace}, "unexpected argument"},
      {{"run", "--scheduler", "vllm-v0", "--scheduler", "chunked"}, "run takes one policy"},
      {{"run", "--trace", trace, "--burstiness", "0.5"}, "its arrival times are replayed"},
      {{"run", "--trace", trace, "--seed", "3"}, "its arrival times are replayed"},
      {{"run", "--trace", trace, "--keep-failed"}, "reads burstgpt traces"},
      {{"run", "--col-input", "x"}, "has no effect without --trace"},
      {{"run", "--period-s", "60"}, "has no effect without --out"},
      {{"run", "--request-rate", "inf", "--burstiness", "0.5"}, "every request arrives at 0"},
      {{"run", "--num-requests", "10", "--num-prompts", "20"}, "conflicts with --num-requests"},
      {{"run", "--scheduler", "chunked", "--enable-chunked-prefill", "false"}, "contradicts"},
      {{"list", "gpus", "extra"}, "unexpected argument"},
      {{"trace", "synth", "--trace-format", "csv", "-o", (dir / "x.h5").string()},
       "has no effect on generated requests"},
      {{"sweep", "--num-seeds", "3", "--out", (dir / "x.h5").string()}, "has no effect on a point"},
      // A prefix of another option is not that option: this was read as --trace-format.
      {{"trace", "synth", "--trace", trace, "-o", (dir / "x.h5").string()},
       "unrecognised option '--trace'"},
      {{"run", "--sched", "vllm-v0"}, "unrecognised option '--sched'"},
  };
  for (const auto& [args, why] : cases) {
    INFO(args[0] << " " << args[1]);
    const auto r = call_cli(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(why));
  }
  CHECK(call_cli({"list", "--help"}).code == 0);
}

TEST_CASE("vLLM's vocabulary: num-prompts, enable-chunked-prefill, aliases, HF ids",
          "[cli][trust]") {
  const fs::path dir = scratch("trust_vocabulary");
  const json a = run_json({"--num-prompts", "100", "--enable-chunked-prefill", "false", "--gpu",
                           "H100", "--model", "meta-llama/Llama-3.1-8B-Instruct"},
                          dir / "a.json");
  const json b = run_json({"--num-requests", "100", "--scheduler", "vllm-v0", "--gpu", "h100-sxm",
                           "--model", "llama-3.1-8b"},
                          dir / "b.json");
  // The same run, each recording the command as typed.
  CHECK_THAT(a["servesim"]["command"].get<std::string>(), Catch::Contains("--num-prompts 100"));
  CHECK_THAT(b["servesim"]["command"].get<std::string>(), Catch::Contains("--num-requests 100"));
  json a_run = a, b_run = b;
  a_run.erase("servesim");
  b_run.erase("servesim");
  CHECK(a_run.dump() == b_run.dump());
  CHECK(a["label"] == "vllm-v0:131072");
  CHECK(a["requests"]["input_tokens"].get<int64_t>() > 0);
}

TEST_CASE("closed loop: --max-concurrency: never more requests in flight", "[cli][trust]") {
  const fs::path dir = scratch("trust_concurrency");
  const auto r = call_cli({"run", "--num-requests", "300", "--request-rate", "30",
                           "--max-concurrency", "8", "--requests-csv", (dir / "r.csv").string()});
  REQUIRE(r.code == 0);
  // Each request is in flight from its (send) arrival to its last token: at most 8 at a time.
  std::vector<std::pair<double, int>> events;
  for (const auto& row : csv_rows(slurp(dir / "r.csv"))) {
    if (row[0] == "id") continue;
    events.emplace_back(std::stod(row[1]), +1);
    events.emplace_back(std::stod(row[5]), -1);
  }
  std::sort(events.begin(), events.end());  // a finish before a send at the same time
  int in_flight = 0, most = 0;
  for (const auto& [t, d] : events)
    most = std::max(most, in_flight += d);
  CHECK(most == 8);
}

TEST_CASE("goodput: --goodput and --metric-percentiles, recomputed from the requests",
          "[cli][trust]") {
  const fs::path dir = scratch("trust_goodput");
  const json j =
      run_json({"--num-requests", "400", "--request-rate", "10", "--goodput", "ttft:100", "tpot:25",
                "--metric-percentiles", "25,99.9", "--requests-csv", (dir / "r.csv").string()},
               dir / "s.json");
  int good = 0;
  for (const auto& row : csv_rows(slurp(dir / "r.csv"))) {
    if (row[0] == "id" || row.back() != "completed") continue;
    const bool tpot_ok = row[8].empty() || std::stod(row[8]) <= 25;
    good += std::stod(row[6]) <= 100 && tpot_ok;
  }
  REQUIRE(good > 0);
  CHECK(j["throughput"]["goodput_req_s"].get<double>() ==
        Approx(good / j["makespan_s"].get<double>()));
  CHECK(j["ttft_ms"].contains("p25"));
  CHECK(j["ttft_ms"].contains("p99.9"));
  CHECK(j["ttft_ms"]["p25"].get<double>() <= j["ttft_ms"]["p50"].get<double>());
}

TEST_CASE("replicates: --num-seeds gives each headline metric's mean and 95% CI over the seeds",
          "[cli][trust]") {
  const fs::path dir = scratch("trust_seeds");
  const json j = run_json({"--num-requests", "150", "--num-seeds", "4"}, dir / "s.json");
  const json& m = j["replicates"]["metrics"]["ttft_ms.p50"];
  REQUIRE(j["runs"].size() == 4);
  std::vector<double> v;
  for (int k = 0; k < 4; ++k) {
    const json one = run_json({"--num-requests", "150", "--seed", std::to_string(k)},
                              dir / std::string("s").append(std::to_string(k)).append(".json"));
    v.push_back(one["ttft_ms"]["p50"].get<double>());
  }
  const double mean = (v[0] + v[1] + v[2] + v[3]) / 4;
  double ss = 0;
  for (double x : v)
    ss += (x - mean) * (x - mean);
  const double half = 3.182446305 * std::sqrt(ss / 3) / 2;  // t(0.975, 3) x s / sqrt(4)
  CHECK(m["mean"].get<double>() == Approx(mean));
  CHECK(m["ci95"][0].get<double>() == Approx(mean - half));
  CHECK(m["ci95"][1].get<double>() == Approx(mean + half));
  CHECK(ci95_half_width(2.0, 4) == Approx(3.182446305));
}

TEST_CASE("smaller: trace info's 5-minute peak, the file a run read, labels, 'completed'",
          "[cli][trust]") {
  const fs::path dir = scratch("trust_small");
  write(dir / "t.csv",
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,20\n0.5,300,40\n60,200,30\n");
  const std::string h5 = (dir / "t.h5").string();
  REQUIRE(call_cli({"trace", "import", (dir / "t.csv").string(), "-o", h5}).code == 0);
  const auto info = call_cli({"trace", "info", h5});
  CHECK_THAT(info.out, Catch::Contains("5-minute peak n/a"));
  const json j = run_json({"--trace", h5}, dir / "s.json");
  CHECK(j["config"]["workload"]["file"] == h5);
  CHECK(j["config"]["workload"]["source"] == (dir / "t.csv").string());
  const auto c = call_cli({"compare", "--num-requests", "50", "--scheduler",
                           "chunked:512,chunked:1024", "--json", (dir / "c.json").string()});
  REQUIRE(c.code == 0);
  const json cj = json::parse(slurp(dir / "c.json"));
  CHECK(cj["runs"][0]["label"] == "chunked:512");
  CHECK(cj["runs"][1]["label"] == "chunked:1024");
  REQUIRE(
      call_cli({"run", "--num-requests", "5", "--requests-csv", (dir / "r.csv").string()}).code ==
      0);
  CHECK_THAT(slurp(dir / "r.csv"), Catch::Contains(",completed\n"));
}
