// Results files and sweeps (grids, shards, merge, resume, threads, bad values); the capacity
// search and the check gate end to end are test_sweep_check.cpp's.
#include <H5Cpp.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "analysis/sweep.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "cli_helpers.hpp"
#include "sweep_fixtures.hpp"
#include "util/error.hpp"
#include "util/parallel.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using servesim::test::run_args;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::with;
using servesim::test::write;

namespace {

servesim::test::CliResult exec(std::vector<std::string> args) {
  return servesim::test::call_cli(std::move(args));
}

const std::vector<std::string> kGrid = {
    "--num-requests",           "120",       "--scheduler",    "vllm-v0,chunked",
    "--max-num-batched-tokens", "1024,4096", "--request-rate", "4:12:4"};

}  // namespace

TEST_CASE("sweep: value lists and inclusive ranges", "[sweep]") {
  CHECK(expand_values("request-rate", "2:20:2", true) ==
        std::vector<std::string>{"2", "4", "6", "8", "10", "12", "14", "16", "18", "20"});
  CHECK(expand_values("request-rate", "0.1:0.3:0.1", true) ==
        std::vector<std::string>{"0.1", "0.2", "0.3"});
  CHECK(expand_values("max-num-batched-tokens", "256:1280:512", true) ==
        std::vector<std::string>{"256", "768", "1280"});
  CHECK(expand_values("scheduler", "vllm-v0, chunked:512", false) ==
        std::vector<std::string>{"vllm-v0", "chunked:512"});
  // A colon in a non-numeric flag's value is not a range.
  CHECK(expand_values("input-len", "lognormal:1024:0.8", false) ==
        std::vector<std::string>{"lognormal:1024:0.8"});
  CHECK_THROWS_WITH(expand_values("request-rate", "5:2:1", true), Catch::Contains("LO <= HI"));
  CHECK_THROWS_WITH(expand_values("request-rate", "1,,2", true), Catch::Contains("empty item"));
  CHECK_THROWS_WITH(expand_values("request-rate", "1:2:0", true), Catch::Contains("STEP > 0"));
  // Issue 44: a comma inside a JSON value does not split it; one between values does.
  const std::string ngram =
      R"({"method":"ngram","num_speculative_tokens":3,"x":[1,2],"s":"a,\"b"})";
  CHECK(expand_values("speculative-config", ngram, false) == std::vector<std::string>{ngram});
  CHECK(expand_values("speculative-config", ngram + ", " + ngram, false) ==
        std::vector<std::string>{ngram, ngram});
  CHECK(expand_values("kv-transfer-config",
                      R"({"kv_connector":"OffloadingConnector","kv_role":"kv_both"})", false)
            .size() == 1);
}

TEST_CASE("sweep: a JSON speculative config is one value, a list of them an axis", "[sweep][cli]") {
  const fs::path dir = servesim::test::scratch("sweep_json_values");
  const std::string one = R"({"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4})";
  const std::string two = R"({"method":"ngram","num_speculative_tokens":5,"prompt_lookup_max":4})";
  auto sweep = [&](const std::string& value, const std::string& name) {
    const auto r =
        servesim::test::call_cli({"sweep", "--speculative-config", value, "--spec-acceptance-rate",
                                  "0.6", "--max-num-batched-tokens", "512,1024", "--num-requests",
                                  "20", "--out", (dir / (name + ".h5")).string()});
    INFO(r.err);
    CHECK(r.code == 0);
    return servesim::read_sweep_h5((dir / (name + ".h5")).string());
  };
  CHECK(sweep(one, "one").rows.size() == 2);
  const auto t = sweep(one + "," + two, "two");
  CHECK(t.rows.size() == 4);
  CHECK(std::count(t.text_columns.begin(), t.text_columns.end(), "speculative-config") == 1);
}

TEST_CASE("sweep: points are numbered row-major and shards partition them", "[sweep]") {
  using servesim::cli::parse_run_flag;
  SweepGrid g;
  g.fixed = {{"num-requests", "10"}};
  parse_run_flag("num-requests", "10")(g.base);
  g.axes = {{"scheduler", {"a", "b"}, {}}, {"request-rate", {"1", "2", "3"}, {}}};
  for (SweepAxis& a : g.axes) {
    for (const std::string& v : a.values)
      a.set.push_back(parse_run_flag(a.flag, v));
  }
  REQUIRE(g.size() == 6);
  CHECK(g.values(0) == std::vector<std::string>{"a", "1"});
  CHECK(g.values(2) == std::vector<std::string>{"a", "3"});
  CHECK(g.values(4) == std::vector<std::string>{"b", "2"});
  // Point 5's RunSpec: the fixed flag and the last value of each axis, typed.
  const RunSpec five = g.spec(5);
  CHECK(five.num_requests == 10);
  CHECK(five.scheduler == "b");
  CHECK(five.request_rate == 3.0);
  // Given by the grid (not defaults): a trace would be rescaled to this rate.
  CHECK(five.num_requests.given());
  CHECK(five.request_rate.given());
  CHECK_FALSE(five.burstiness.given());
  CHECK_FALSE(five.seed.given());
  CHECK(g.spec(0).scheduler == "a");
  CHECK(g.spec(0).request_rate == 1.0);
  SweepGrid h = g;
  h.axes[1].values.push_back("4");
  CHECK(g.id() != h.id());
  for (uint64_t n : {1, 3, 4}) {
    std::vector<int> owners(6, 0);
    for (uint64_t k = 0; k < n; ++k) {
      const Shard s = parse_shard(std::to_string(k).append("/").append(std::to_string(n)));
      for (uint64_t p = 0; p < 6; ++p)
        owners[p] += s.owns(p);
    }
    CHECK(owners == std::vector<int>(6, 1));
  }
  CHECK_THROWS_WITH(parse_shard("3/3"), Catch::Contains("0 <= K < N"));
  CHECK_THROWS_WITH(parse_shard("x"), Catch::Contains("K/N"));
}

TEST_CASE(
    "sweep: results do not depend on --jobs, and merged shards equal the whole, byte for byte",
    "[sweep][cli]") {
  const fs::path dir = scratch("sweep_jobs");
  auto sweep = [&](const std::vector<std::string>& extra) {
    const auto r = exec(with(with({"sweep"}, kGrid), extra));
    INFO(r.err);
    REQUIRE(r.code == 0);
    return r;
  };
  const auto one =
      sweep({"--jobs", "1", "--out", (dir / "j1.h5").string(), "--csv", (dir / "j1.csv").string()});
  CHECK_THAT(one.out, Catch::Contains("12 points in the grid (3 axes)"));
  sweep({"--jobs", "3", "--out", (dir / "j3.h5").string(), "--csv", (dir / "j3.csv").string()});
  CHECK(slurp(dir / "j1.h5") == slurp(dir / "j3.h5"));
  CHECK(slurp(dir / "j1.csv") == slurp(dir / "j3.csv"));
  std::vector<std::string> merge = {
      "sweep", "merge", "-o", (dir / "m.h5").string(), "--csv", (dir / "m.csv").string()};
  for (int k : {2, 0, 1}) {  // shards in any order
    const std::string id = std::to_string(k);
    const std::string part = (dir / std::string("s").append(id).append(".h5")).string();
    sweep({"--shard", std::string(id).append("/3"), "--jobs", "2", "--out", part});
    CHECK(read_sweep_h5(part).rows.size() == 4);
    merge.push_back(part);
  }
  const auto m = exec(merge);
  REQUIRE(m.code == 0);
  CHECK(slurp(dir / "m.h5") == slurp(dir / "j1.h5"));
  CHECK(slurp(dir / "m.csv") == slurp(dir / "j1.csv"));

  // The table holds what separate runs give.
  const SweepTable t = read_sweep_h5((dir / "j1.h5").string());
  REQUIRE(t.rows.size() == 12);
  CHECK(t.shard == "all");
  const auto col = [&](const std::vector<std::string>& cols, const std::string& name) {
    const auto it = std::find(cols.begin(), cols.end(), name);
    REQUIRE(it != cols.end());
    return size_t(it - cols.begin());
  };
  const SweepRow& row = t.rows[7];  // chunked, 1024, rate 8
  CHECK(row.text[col(t.text_columns, "scheduler")] == "chunked");
  CHECK(row.text[col(t.text_columns, "request-rate")] == "8");
  CHECK(row.ints[col(t.int_columns, "max_num_batched_tokens")] == 1024);
  const PointRun p = run_args({"--num-requests", "120", "--scheduler", "chunked",
                               "--max-num-batched-tokens", "1024", "--request-rate", "8"});
  CHECK(row.reals[col(t.real_columns, "ttft_ms_p50")] == p.run.summary.ttft_ms.p50);
  CHECK(row.reals[col(t.real_columns, "itl_ms_p99")] == p.run.summary.itl_ms.p99);
  CHECK(row.reals[col(t.real_columns, "request_rate")] == 8.0);

  // Shards of another grid do not merge.
  sweep({"--request-rate", "5", "--out", (dir / "other.h5").string()});
  const auto bad = exec({"sweep", "merge", "-o", (dir / "x.h5").string(), (dir / "j1.h5").string(),
                         (dir / "other.h5").string()});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("different grid"));
}

TEST_CASE("sweep: a stopped sweep resumes from its journal and ends identical", "[sweep][cli]") {
  const fs::path dir = scratch("sweep_resume");
  const std::string full = (dir / "full.h5").string(), part = (dir / "part.h5").string();
  REQUIRE(exec(with(with({"sweep"}, kGrid), {"--out", full})).code == 0);
  const SweepTable t = read_sweep_h5(full);
  // What a run killed after five points leaves: the journal's header, five rows and half a row.
  SweepGrid g;
  std::string text = nlohmann::ordered_json{{"grid_id", t.grid_id}, {"shard", "all"}}.dump() + "\n";
  for (int i : {0, 3, 4, 8, 11})
    text += row_json(t.rows[size_t(i)]) + "\n";
  text += row_json(t.rows[5]).substr(0, 40);
  write(part + ".journal", text);
  const auto r = exec(with(with({"sweep"}, kGrid), {"--out", part, "--jobs", "2"}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("7 run, 5 already done"));
  CHECK(slurp(part) == slurp(full));
  CHECK_FALSE(fs::exists(part + ".journal"));
  // Started again when finished: nothing to run, same file.
  const auto again = exec(with(with({"sweep"}, kGrid), {"--out", part}));
  CHECK_THAT(again.out, Catch::Contains("0 run, 12 already done"));
  CHECK(slurp(part) == slurp(full));
  // A different grid does not reuse the file.
  const auto other =
      exec({"sweep", "--num-requests", "50", "--request-rate", "1,2", "--out", part});
  CHECK(other.code == 2);
  CHECK_THAT(other.err, Catch::Contains("another grid"));
}

TEST_CASE("sweep: bad flags fail before anything runs, and points that cannot run are rows",
          "[sweep][cli][errors]") {
  const fs::path dir = scratch("sweep_errors");
  const auto unknown = exec(
      {"sweep", "--num-requests", "10", "--no-such-flag", "1", "--out", (dir / "a.h5").string()});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("no-such-flag"));
  const auto bad = exec({"sweep", "--num-requests", "10", "--scheduler", "chunked,nope", "--out",
                         (dir / "b.h5").string()});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("nope"));
  CHECK_FALSE(fs::exists(dir / "b.h5"));
  // Llama-2-70B does not fit one H100: that point is a row with the reason, the other runs.
  const auto fit = exec({"sweep", "--num-requests", "20", "--model", "llama-3.1-8b,llama-2-70b",
                         "--gpu", "h100-sxm", "--out", (dir / "c.h5").string()});
  INFO(fit.err);
  REQUIRE(fit.code == 0);
  CHECK_THAT(fit.out, Catch::Contains("1 could not run"));
  const SweepTable t = read_sweep_h5((dir / "c.h5").string());
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].text.back().empty());
  CHECK_THAT(t.rows[1].text.back(), Catch::Contains("GiB"));
  CHECK(std::isnan(t.rows[1].reals.back()));
}

TEST_CASE("results file: tables match the run, windows the CloudWatch formula, bytes are stable",
          "[results][cli]") {
  const fs::path dir = scratch("results");
  const std::string a = (dir / "a.h5").string(), b = (dir / "b.h5").string();
  const std::vector<std::string> args = {"compare",
                                         "--num-requests",
                                         "400",
                                         "--request-rate",
                                         "6",
                                         "--scheduler",
                                         "vllm-v0,chunked:512",
                                         "--period-s",
                                         "20"};
  REQUIRE(exec(with(args, {"--out", a})).code == 0);
  REQUIRE(exec(with(args, {"--out", b})).code == 0);
  CHECK(slurp(a) == slurp(b));
  REQUIRE(results_runs(a) == std::vector<std::string>{"vllm-v0:131072", "chunked:512"});

  const PointRun p =
      run_args({"--num-requests", "400", "--request-rate", "6", "--scheduler", "chunked:512"});
  const RequestLog log = read_results_log(a, "chunked:512");
  REQUIRE(log.size() == p.run.requests.size());
  for (size_t i = 0; i < log.size(); i += 37) {
    CHECK(log.arrival_s[i] == p.run.requests[i].arrival_s);
    CHECK(log.ttft_ms[i] == p.run.requests[i].ttft_s() * 1e3);
    CHECK(log.output_tokens[i] == p.run.requests[i].output_tokens);
  }
  const auto summary = read_results_summary(a, "chunked:512");
  CHECK(summary["ttft_ms"]["p50"].get<double>() == p.run.summary.ttft_ms.p50);

  H5::H5File f(a, H5F_ACC_RDONLY);
  H5::Group g = f.openGroup("runs/chunked:512");
  auto column = [&](const std::string& path) {
    H5::DataSet ds = g.openDataSet(path);
    hsize_t n = 0;
    ds.getSpace().getSimpleExtentDims(&n);
    std::vector<double> v(n);
    ds.read(v.data(), H5::PredType::NATIVE_DOUBLE);
    return v;
  };
  // Per step: as many rows as steps, and the tokens they computed.
  const auto dur = column("steps/duration_s"), pre = column("steps/prefill_tokens"),
             dec = column("steps/decode_tokens");
  REQUIRE(dur.size() == p.run.summary.steps);
  double busy = 0, pre_sum = 0, dec_sum = 0;
  for (size_t i = 0; i < dur.size(); ++i) {
    busy += dur[i];
    pre_sum += pre[i];
    dec_sum += dec[i];
  }
  CHECK(busy == Approx(p.run.summary.busy_s).epsilon(1e-12));
  CHECK(int64_t(pre_sum) == p.run.summary.prefill_tokens);
  CHECK(int64_t(dec_sum) == p.run.summary.decode_tokens);
  // Per window, recomputed by hand from the requests that completed in each 20 s period.
  const auto start = column("windows/start_s"), otps = column("windows/otps"),
             ttft50 = column("windows/ttft_ms_p50"), arrivals = column("windows/arrivals");
  double total_arrivals = 0;
  for (double x : arrivals)
    total_arrivals += x;
  CHECK(total_arrivals == 400);
  const size_t k = 2;
  REQUIRE(start.size() > k);
  std::vector<double> tt, e2e, out;
  for (const RequestRecord& q : p.run.requests) {
    if (q.finished() && q.last_token_s >= start[k] && q.last_token_s < start[k] + 20) {
      tt.push_back(q.ttft_s() * 1e3);
      e2e.push_back(q.e2e_s() * 1e3);
      out.push_back(q.output_tokens);
    }
  }
  REQUIRE(tt.size() > 3);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  CHECK(ttft50[k] == Approx(median(tt)));
  CHECK(otps[k] == Approx(median(out) / (median(e2e) - median(tt)) * 1000));
  // The ITL histogram holds every gap.
  H5::DataSet counts = g.openDataSet("itl/count");
  hsize_t nb = 0;
  counts.getSpace().getSimpleExtentDims(&nb);
  std::vector<int64_t> c(nb);
  counts.read(c.data(), H5::PredType::NATIVE_INT64);
  int64_t gaps = 0;
  for (int64_t x : c)
    gaps += x;
  CHECK(uint64_t(gaps) == p.run.summary.itl_ms.count);

  // --no-steps leaves the table out; a file that is not a results file is a clear error.
  REQUIRE(exec(with(args, {"--out", b, "--no-steps"})).code == 0);
  H5::H5File fb(b, H5F_ACC_RDONLY);
  CHECK_FALSE(fb.nameExists("runs/chunked:512/steps"));
  CHECK(fb.nameExists("runs/chunked:512/windows"));
  const std::string sweep_file = (dir / "s.h5").string();
  REQUIRE(exec({"sweep", "--num-requests", "10", "--out", sweep_file}).code == 0);
  CHECK_THROWS_WITH(read_results_log(sweep_file, ""), Catch::Contains("not a servesim results"));
  CHECK_THROWS_WITH(read_results_log(a, ""), Catch::Contains("holds 2 runs"));
}

TEST_CASE("sweep: threads that cannot start are an error naming --jobs, not an abort",
          "[sweep][capacity][cli][errors]") {
  // Item 3: `--jobs 1000` under a memory limit printed "terminate called without an active
  // exception" and exited 134. A default stack of 2^47 bytes makes every thread fail to start.
  const fs::path dir = scratch("sweep_threads");
  pthread_attr_t old, huge;
  REQUIRE(pthread_getattr_default_np(&old) == 0);
  REQUIRE(pthread_attr_init(&huge) == 0);
  REQUIRE(pthread_attr_setstacksize(&huge, size_t(1) << 47) == 0);
  REQUIRE(pthread_setattr_default_np(&huge) == 0);
  const auto sweep = exec({"sweep", "--num-requests", "10", "--seed", "1,2", "--jobs", "4", "--out",
                           (dir / "s.h5").string()});
  const auto capacity =
      exec({"capacity", "--num-requests", "10", "--slo", "ttft_p50_ms=500", "--jobs", "4"});
  std::string direct;
  try {
    start_threads(3, [] {});
  } catch (const Error& e) {
    direct = e.what();
  }
  pthread_setattr_default_np(&old);
  pthread_attr_destroy(&huge);
  pthread_attr_destroy(&old);
  CHECK(sweep.code == 2);
  CHECK_THAT(sweep.err, Catch::Contains("field 'jobs': cannot start a thread"));
  CHECK(capacity.code == 2);
  CHECK_THAT(capacity.err, Catch::Contains("--jobs"));
  CHECK_THAT(direct, Catch::Contains("use a smaller --jobs"));
  // With threads to be had, all of them start and every task runs.
  std::atomic<int> ran{0};
  std::vector<std::thread> pool = start_threads(3, [&] { ++ran; });
  for (std::thread& t : pool)
    t.join();
  CHECK(pool.size() == 3);
  CHECK(ran == 3);
}

TEST_CASE("sweep: a flag whose value is a list is one point, | separates its values",
          "[sweep][capacity][cli]") {
  // Item 8: --replica-gpus h100-sxm:2,a100-80g:1 became two points, a client mix with lengths
  // could not be swept.
  const fs::path dir = scratch("sweep_list_flags");
  const std::string out = (dir / "s.h5").string();
  const auto fleet = exec({"sweep", "--num-requests", "20", "--replica-gpus",
                           "h100-sxm:2,a100-80g:1", "--jobs", "1", "--out", out});
  INFO(fleet.err);
  REQUIRE(fleet.code == 0);
  CHECK_THAT(fleet.out, Catch::Contains("1 points in the grid (0 axes)"));
  const std::string out2 = (dir / "s2.h5").string();
  const auto two = exec({"sweep", "--num-requests", "20", "--replica-gpus",
                         "h100-sxm:2,a100-80g:1|h100-sxm:4", "--jobs", "1", "--out", out2});
  INFO(two.err);
  REQUIRE(two.code == 0);
  CHECK_THAT(two.out, Catch::Contains("2 points in the grid (1 axes)"));
  CHECK(read_sweep_h5(out2).rows.size() == 2);
  const auto mix =
      exec({"sweep", "--num-requests", "20", "--dataset-name", "mixture", "--client-mix",
            "rate=1,input=fixed:100,output=fixed:10;rate=2,input=fixed:50|"
            "rate=3,input=fixed:200",
            "--jobs", "1", "--out", (dir / "m.h5").string()});
  INFO(mix.err);
  REQUIRE(mix.code == 0);
  CHECK_THAT(mix.out, Catch::Contains("2 points in the grid (1 axes)"));
  CHECK_THAT(mix.out, !Catch::Contains("could not run"));
  // A repeated list flag joins its values with '|'; capacity takes a mixed fleet whole.
  const auto repeated =
      exec({"sweep", "--num-requests", "20", "--replica-gpus", "h100-sxm:1,a100-80g:1",
            "--replica-gpus", "h100-sxm:2", "--jobs", "1", "--out", (dir / "r.h5").string()});
  INFO(repeated.err);
  CHECK_THAT(repeated.out, Catch::Contains("2 points in the grid (1 axes)"));
  CHECK(servesim::cli::run_flag_separator("replica-gpus") == '|');
  CHECK(servesim::cli::run_flag_separator("gpu") == ',');
  const auto cap =
      exec({"capacity", "--num-requests", "20", "--slo", "ttft_p50_ms=500", "--rate-max", "4",
            "--replica-gpus", "h100-sxm:1,a100-80g:1", "--csv", (dir / "cap.csv").string()});
  INFO(cap.err);
  REQUIRE(cap.code == 0);
  const std::string csv = slurp(dir / "cap.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 2);  // the header and one fleet
}

TEST_CASE(
    "sweep: bad values stop the sweep, merge refuses an incomplete set, journal rows are exact",
    "[sweep][cli][errors]") {
  const fs::path dir = scratch("sweep_round2");
  // Item 17: --max-num-seqs -5 or --block-size 0 gave error rows and exit 0.
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--max-num-seqs", "-5"},
                                                        {"--block-size", "0"},
                                                        {"--max-num-batched-tokens", "-1"},
                                                        {"--gpu-memory-utilization", "1.5"}}) {
    const auto r = exec({"sweep", "--num-requests", "10", "--seed", "1,2", flag, value, "--out",
                         (dir / "bad.h5").string()});
    INFO(flag << " " << value << ": " << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("field '" + flag.substr(2) + "'"));
    CHECK_FALSE(fs::exists(dir / "bad.h5"));
  }
  // Item 21: merging shard 0 of 2 alone exited 0 ("1 points missing").
  const std::vector<std::string> grid = {"sweep", "--num-requests", "10", "--seed",
                                         "1,2",   "--jobs",         "1"};
  REQUIRE(exec(with(grid, {"--shard", "0/2", "--out", (dir / "a.h5").string()})).code == 0);
  const auto merge =
      exec({"sweep", "merge", "-o", (dir / "m.h5").string(), (dir / "a.h5").string()});
  CHECK(merge.code == 2);
  CHECK_THAT(merge.err, Catch::Contains("1 of 2 points are in none of the files"));
  CHECK_FALSE(fs::exists(dir / "m.h5"));
  const auto partial =
      exec({"sweep", "merge", "--partial", "-o", (dir / "m.h5").string(), (dir / "a.h5").string()});
  CHECK(partial.code == 0);
  CHECK_THAT(partial.out, Catch::Contains("1 points missing"));
  // A journal row whose point or integers are not integers is not read (1.5 was point 1).
  const SweepTable t = read_sweep_h5((dir / "a.h5").string());
  REQUIRE(t.rows.size() == 1);
  const std::string line = row_json(t.rows[0]);
  SweepRow back;
  CHECK(parse_row(line, t, back));
  std::string fractional = line;
  fractional.replace(fractional.find("\"point\":0"), 9, "\"point\":0.5");
  CHECK_FALSE(parse_row(fractional, t, back));
  std::string int_as_real = line;
  const size_t ints = int_as_real.find("\"ints\":[") + 8;
  int_as_real.insert(int_as_real.find_first_of(",]", ints), ".5");
  CHECK_FALSE(parse_row(int_as_real, t, back));
}
