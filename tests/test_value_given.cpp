// Value given = value used (issue 42): every flag of `run` (the flag table is the list), given a
// value other than its default (fractional where its unit allows), is recorded in the run's
// configuration exactly, as the simulation used it: in run --json and the results file (--out),
// and identically through compare, the sweep/capacity/check path (typed patches from flags) and
// a --config file. Half the cases spell their flags with vLLM's underscores. A flag added to the
// table without a case here fails the first test.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "analysis/run_spec.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "cli_helpers.hpp"
#include "profile_fixtures.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using nlohmann::json;
using servesim::test::call_cli;
using servesim::test::CliResult;
using servesim::test::scratch;
using servesim::test::slurp;
using servesim::test::write;
using GivenFlags = std::vector<std::pair<std::string, std::string>>;

namespace {

// A recorded value: the JSON pointer in the run's summary and what it must hold. APPROX: a value
// converted to another unit (ms given, seconds recorded), equal to a part in 1e12.
struct Recorded {
  std::string pointer;
  json value;
  bool approx = false;
};

struct ValueCase {
  GivenFlags flags;  // the flags under test, and those they need
  std::vector<Recorded> recorded;
  bool compare = true;  // compare takes these flags too
  bool point = true;    // a sweep point, capacity probe or check scenario takes them too
};

// The fixtures the cases name: a model file, a GPU file, a calibration file, profiles, traces in
// the csv, BurstGPT and Mooncake formats, and a ServeGen client.
struct ValueFixtures {
  fs::path dir;
  std::string model_file, gpu_file, calibration, profiles, timed, burstgpt, mooncake, servegen;
};

// NAME: the test's own folder (ctest runs the cases in parallel).
ValueFixtures value_fixtures(const std::string& name) {
  ValueFixtures f;
  f.dir = scratch(name);
  f.model_file = (f.dir / "mini.ini").string();
  write(f.model_file,
        "name = mini-llama\nnum_hidden_layers = 8\nhidden_size = 1024\nnum_attention_heads = 8\n"
        "num_key_value_heads = 8\nintermediate_size = 4096\nvocab_size = 32000\n"
        "max_position_embeddings = 4096\n");
  f.gpu_file = (f.dir / "gpu.ini").string();
  write(f.gpu_file,
        "name = my-h100\nbf16_tflops = 989.4\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
        "interconnect_gb_per_s = 900\narch = hopper\n");
  f.calibration = (f.dir / "cal.ini").string();
  write(f.calibration, "arch = hopper\nlinear_memory_efficiency = 0.6125\n");
  f.profiles = servesim::test::fixture_profiles(name);
  f.timed = (f.dir / "timed.csv").string();
  std::string t = "t_ms,in,out,prio,adapter,junk\n";
  for (int i = 0; i < 40; ++i) {
    t += std::to_string(i * 250) + "," + std::to_string(60 + i * 7) + "," +
         std::to_string(5 + i % 9) + "," + std::to_string(i % 3) + "," + (i % 2 ? "sql" : "chat") +
         ",x\n";
  }
  t += "oops,1,1,0,sql,x\n";  // a bad row, for --skip-bad-rows
  write(f.timed, t);
  f.burstgpt = (f.dir / "burst.csv").string();
  std::string b = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
  for (int i = 0; i < 30; ++i) {
    b += std::to_string(i) + "," + (i % 2 ? "ChatGPT" : "GPT-4") + "," + std::to_string(100 + i) +
         "," + std::to_string(i % 5 == 0 ? 0 : 20) + ",0," +
         (i % 3 ? "Conversation log" : "API log") + "\n";
  }
  write(f.burstgpt, b);
  f.mooncake = (f.dir / "moon.jsonl").string();
  std::string m;
  for (int i = 0; i < 20; ++i) {
    m += "{\"timestamp\": " + std::to_string(i * 300) +
         ", \"input_length\": 500, \"output_length\": 10, \"hash_ids\": [" + std::to_string(i % 4) +
         ", " + std::to_string(100 + i) + "]}\n";
  }
  write(f.mooncake, m);
  f.servegen = (f.dir / "chunk-0-trace.csv").string();
  write(f.servegen, "0,2,1,Gamma,1,1\n600,1.5,1,Gamma,1,1\n");
  write(f.dir / "chunk-0-dataset.json",
        R"({"0": {"input_tokens": "{100: 0.5, 200: 0.5}", "output_tokens": "{10: 1.0}"}})");
  return f;
}

const double kGiB = 1073741824.0;

// Every flag of `run` with a value it does not default to, and where the run records it.
std::vector<ValueCase> value_cases(const ValueFixtures& f) {
  const std::string eagle = R"({"method": "eagle3", "num_speculative_tokens": 3})";
  const std::string offload = R"({"kv_connector": "OffloadingConnector", "kv_role": "kv_both", )"
                              R"("kv_connector_extra_config": {"cpu_bytes_to_use": 3221225472}})";
  return {
      // Model and hardware.
      {{{"model", "qwen3-8b"}, {"quantization", "fp8"}, {"kv-cache-dtype", "fp8"}},
       {{"/config/model", "qwen3-8b"},
        {"/config/quantization", "fp8"},
        {"/config/kv_cache_dtype", "fp8"}}},
      {{{"model-file", f.model_file}, {"gpu-file", f.gpu_file}, {"max-model-len", "3000"}},
       {{"/config/model", "mini-llama"},
        {"/config/gpu", "my-h100"},
        {"/config/max_model_len", 3000}}},
      {{{"gpu", "a100-80g"}, {"tensor-parallel-size", "2"}},
       {{"/config/gpu", "a100-80g"}, {"/config/tensor_parallel_size", 2}}},
      {{{"tp", "4"}}, {{"/config/tensor_parallel_size", 4}}},
      {{{"pipeline-parallel-size", "2"}}, {{"/config/pipeline_parallel_size", 2}}},
      {{{"pp", "4"}, {"tp", "2"}},
       {{"/config/pipeline_parallel_size", 4}, {"/config/tensor_parallel_size", 2}}},
      {{{"num-replicas", "3"},
        {"router", "prefix-aware"},
        {"router-signal-delay-s", "0.25"},
        {"prefix-index", "kv-events"}},
       {{"/config/fleet/num_replicas", 3},
        {"/config/fleet/router", "prefix-aware"},
        {"/config/fleet/router_signal_delay_s", 0.25},
        {"/config/fleet/prefix_index", "kv-events"}}},
      {{{"data-parallel-size", "2"}, {"router", "least-kv"}},
       {{"/config/fleet/num_replicas", 2}, {"/config/fleet/router", "least-kv"}}},
      // A point (a capacity probe) runs the group of ranks sharing the experts.
      {{{"model", "mixtral-8x7b"},
        {"gpu", "h100-sxm"},
        {"tp", "2"},
        {"data-parallel-size", "2"},
        {"enable-expert-parallel", ""},
        {"expert-skew", "0.75"}},
       {{"/config/enable_expert_parallel", true},
        {"/config/expert_parallel_size", 4},
        {"/config/expert_skew", 0.75}},
       true,
       true},
      {{{"autoscale", "running"},
        {"autoscale-target", "7.5"},
        {"min-replicas", "2"},
        {"max-replicas", "5"},
        {"autoscale-period-s", "7.5"},
        {"scale-up-window-s", "2.5"},
        {"scale-down-window-s", "33.5"},
        {"provision-s", "12.5"},
        {"num-replicas", "2"}},
       {{"/config/fleet/autoscale/metric", "running"},
        {"/config/fleet/autoscale/target", 7.5},
        {"/config/fleet/autoscale/min_replicas", 2},
        {"/config/fleet/autoscale/max_replicas", 5},
        {"/config/fleet/autoscale/period_s", 7.5},
        {"/config/fleet/autoscale/scale_up_window_s", 2.5},
        {"/config/fleet/autoscale/scale_down_window_s", 33.5},
        {"/config/fleet/autoscale/provision_s", 12.5}}},
      {{{"autoscale", "waiting"},
        {"autoscale-target", "4"},
        {"max-replicas", "3"},
        {"engine-startup-s", "45.5"},
        {"model-load-gb-per-s", "3.5"}},
       {{"/config/fleet/autoscale/engine_startup_s", 45.5},
        {"/config/fleet/autoscale/model_load_gb_per_s", 3.5}}},
      {{{"replica-gpus", "h100-sxm:1,a100-80g:2"}},
       {{"/config/fleet/pools/0/gpu", "h100-sxm"},
        {"/config/fleet/pools/0/replicas", 1},
        {"/config/fleet/pools/1/gpu", "a100-80g"},
        {"/config/fleet/pools/1/replicas", 2}}},
      {{{"prefill-replicas", "1"},
        {"decode-replicas", "2"},
        {"prefill-gpu", "a100-80g"},
        {"decode-gpu", "h100-sxm"},
        {"prefill-tp", "2"},
        {"decode-tp", "1"},
        {"kv-transfer-gbps", "123.5"},
        {"kv-transfer-link", "nvlink"},
        {"kv-transfer-latency-s", "0.0025"}},
       {{"/config/fleet/pools/0/role", "prefill"},
        {"/config/fleet/pools/0/gpu", "a100-80g"},
        {"/config/fleet/pools/0/tensor_parallel_size", 2},
        {"/config/fleet/pools/1/role", "decode"},
        {"/config/fleet/pools/1/gpu", "h100-sxm"},
        {"/config/fleet/pools/1/replicas", 2},
        {"/config/fleet/pools/1/tensor_parallel_size", 1},
        {"/config/fleet/kv_transfer/gb_per_s", 123.5 / 8, true},
        {"/config/fleet/kv_transfer/link", "nvlink"},
        {"/config/fleet/kv_transfer/latency_s", 0.0025}}},
      {{{"gpu-memory-utilization", "0.85"},
        {"block-size", "32"},
        {"runtime-reserve-gib", "0.75"},
        {"frontend-latency-ms", "12.5"}},
       {{"/config/gpu_memory_utilization", 0.85},
        {"/config/block_size", 32},
        {"/config/runtime_reserve_gib", 0.75},
        {"/config/cost_model/frontend_latency_s", 0.0125, true}}},
      {{{"num-gpu-blocks", "5000"}}, {{"/config/num_gpu_blocks", 5000}}},
      {{{"calibration", f.calibration}},
       {{"/config/cost_model/hardware/linear_memory_efficiency", 0.6125}}},
      {{{"cost-model", "table"},
        {"profiles", f.profiles},
        {"model", "llama-2-7b"},
        {"gpu", "a100-80g"},
        {"scheduler", "chunked"}},
       {{"/config/cost_model/name", "table"}, {"/config/cost_model/profiles", f.profiles}}},
      // Scheduler and engine.
      {{{"scheduler", "chunked:1024"}, {"engine", "v1"}, {"max-num-seqs", "96"}},
       {{"/scheduler", "chunked"},
        {"/config/max_num_batched_tokens", 1024},
        {"/config/engine", "v1"},
        {"/config/max_num_seqs", 96}}},
      {{{"max-num-batched-tokens", "3072"},
        {"enable-prefix-caching", "false"},
        {"scheduling-policy", "priority"},
        {"long-prefill-token-threshold", "333"},
        {"async-scheduling", "false"},
        {"scheduler-reserve-full-isl", "false"},
        {"num-priorities", "3"}},
       {{"/config/max_num_batched_tokens", 3072},
        {"/config/enable_prefix_caching", false},
        {"/config/scheduling_policy", "priority"},
        {"/config/long_prefill_token_threshold", 333},
        {"/config/async_scheduling", false},
        {"/config/scheduler_reserve_full_isl", false},
        {"/config/workload/num_priorities", 3}}},
      {{{"no-enable-prefix-caching", ""}, {"no-async-scheduling", ""}},
       {{"/config/enable_prefix_caching", false}, {"/config/async_scheduling", false}}},
      {{{"enable-chunked-prefill", "false"}, {"max-model-len", "4096"}},
       {{"/scheduler", "vllm-v0"}},
       false},
      // Engine features.
      {{{"speculative-config", eagle}, {"spec-acceptance-rate", "0.8,0.55,0.3"}},
       {{"/config/speculative/method", "eagle3"},
        {"/config/speculative/num_speculative_tokens", 3},
        {"/config/speculative/acceptance_rates", json::array({0.8, 0.55, 0.3})}}},
      {{{"kv-offloading-size", "2.5"},
        {"kv-offloading-backend", "lmcache"},
        {"kv-offload-gb-per-s", "31.5"},
        {"kv-offload-latency-s", "2.5e-05"}},
       {{"/config/kv_offloading/backend", "lmcache"},
        {"/config/kv_offloading/link_gb_per_s", 31.5},
        {"/config/kv_offloading/link_latency_s", 2.5e-05}}},
      {{{"kv-transfer-config", offload}},
       {{"/config/kv_offloading/backend", "native"},
        {"/config/kv_offloading/cpu_bytes", 3.0 * kGiB}}},
      {{{"kv-offloading-size", "1.5"}}, {{"/config/kv_offloading/cpu_bytes", 1.5 * kGiB}}},
      {{{"enable-lora", ""},
        {"max-loras", "3"},
        {"max-lora-rank", "32"},
        {"max-cpu-loras", "5"},
        {"lora-rank", "8"},
        {"lora-load-gb-per-s", "3.5"},
        {"lora-load-latency-s", "0.025"},
        {"lora-adapters", "4"},
        {"lora-zipf", "0.5"}},
       {{"/config/lora/max_loras", 3},
        {"/config/lora/max_lora_rank", 32},
        {"/config/lora/max_cpu_loras", 5},
        {"/config/lora/rank", 8},
        {"/config/lora/load_gb_per_s", 3.5},
        {"/config/lora/load_latency_s", 0.025},
        {"/config/workload/lora_adapters", 4},
        {"/config/workload/lora_zipf", 0.5}}},
      // Generated workloads.
      {{{"num-requests", "13"},
        {"request-rate", "7.25"},
        {"burstiness", "0.75"},
        {"input-len", "uniform:10:90"},
        {"output-len", "normal:20.5:3:2:40"},
        {"seed", "11"},
        {"max-concurrency", "3"},
        {"rate-pattern", "spike:0.5:1.5:2.5"}},
       {{"/config/workload/num_requests", 13},
        {"/config/workload/request_rate", 7.25},
        {"/config/workload/burstiness", 0.75},
        {"/config/workload/input_len", "uniform:10:90"},
        {"/config/workload/output_len", "normal:20.5:3:2:40"},
        {"/config/workload/seed", 11},
        {"/config/max_concurrency", 3},
        {"/config/workload/rate_pattern", "spike:0.5:1.5:2.5"}}},
      {{{"num-prompts", "14"}}, {{"/config/workload/num_requests", 14}}},
      {{{"dataset-name", "prefix_repetition"},
        {"num-requests", "12"},
        {"prefix-repetition-prefix-len", "64"},
        {"prefix-repetition-suffix-len", "32"},
        {"prefix-repetition-num-prefixes", "3"},
        {"prefix-repetition-output-len", "9"}},
       {{"/config/workload/dataset_name", "prefix_repetition"},
        {"/config/workload/prefix_len", 64},
        {"/config/workload/suffix_len", 32},
        {"/config/workload/num_prefixes", 3},
        {"/config/workload/output_len", "fixed:9"}}},
      {{{"dataset-name", "multi_turn"}, {"num-turns", "3"}, {"think-time-s", "2.5"}},
       {{"/config/workload/num_turns", 3}, {"/config/workload/think_time_s", 2.5}}},
      {{{"dataset-name", "mixture"},
        {"client-mix",
         "rate=2.5,burstiness=1,input=fixed:100,output=fixed:10;rate=1.5,"
         "burstiness=0.5,input=fixed:50,output=fixed:5"}},
       {{"/config/workload/client_mix",
         "rate=2.5,burstiness=1,input=fixed:100,output=fixed:10;rate=1.5,burstiness=0.5,"
         "input=fixed:50,output=fixed:5"}}},
      {{{"dataset-name", "servegen"},
        {"servegen", f.servegen},
        {"servegen-start-s", "300.5"},
        {"servegen-duration-s", "20.5"},
        {"servegen-rate-scale", "1.5"}},
       {{"/config/workload/clients", f.servegen},
        {"/config/workload/start_s", 300.5},
        {"/config/workload/duration_s", 20.5},
        {"/config/workload/rate_scale", 1.5}}},
      // A timed trace, its import options and the what-if transforms.
      {{{"trace", f.timed},
        {"trace-format", "csv"},
        {"col-arrival", "t_ms"},
        {"col-input", "in"},
        {"col-output", "out"},
        {"col-priority", "prio"},
        {"col-lora", "adapter"},
        {"time-unit", "ms"},
        {"skip-bad-rows", ""},
        {"enable-lora", ""},
        {"max-loras", "2"},
        {"request-rate", "2.5"}},
       {{"/config/workload/file", f.timed},
        {"/config/workload/import/trace_format", "csv"},
        {"/config/workload/import/col_arrival", "t_ms"},
        {"/config/workload/import/col_input", "in"},
        {"/config/workload/import/col_output", "out"},
        {"/config/workload/import/col_priority", "prio"},
        {"/config/workload/import/col_lora", "adapter"},
        {"/config/workload/import/time_unit", "ms"},
        {"/config/workload/import/skip_bad_rows", true},
        {"/config/workload/transforms/request_rate", 2.5},
        {"/overloaded/arrival_rate_req_s", 2.5, true}}},
      {{{"trace", f.timed},
        {"trace-format", "csv"},
        {"col-arrival", "t_ms"},
        {"col-input", "in"},
        {"col-output", "out"},
        {"time-unit", "ms"},
        {"skip-bad-rows", ""},
        {"window", "0.5:8.75"},
        {"max-requests", "20"},
        {"time-scale", "1.5"},
        {"input-trim", "3"},
        {"input-scale", "1.25"},
        {"output-scale", "0.75"},
        {"max-input-len", "150"},
        {"max-output-len", "7"}},
       {{"/config/workload/transforms/window_s", json::array({0.5, 8.75})},
        {"/config/workload/transforms/max_requests", 20},
        {"/config/workload/transforms/time_scale", 1.5},
        {"/config/workload/transforms/input_trim", 3},
        {"/config/workload/transforms/input_scale", 1.25},
        {"/config/workload/transforms/output_scale", 0.75},
        {"/config/workload/transforms/max_input_len", 150},
        {"/config/workload/transforms/max_output_len", 7}}},
      {{{"trace", f.burstgpt},
        {"keep-failed", ""},
        {"model-filter", "ChatGPT"},
        {"log-type", "conversation"}},
       {{"/config/workload/import/keep_failed", true},
        {"/config/workload/import/model_filter", "ChatGPT"},
        {"/config/workload/import/log_type", "conversation"}}},
      {{{"trace", f.mooncake},
        {"hash-block-size", "256"},
        {"max-model-len", "8192"},
        {"model", "llama-3-8b"}},
       {{"/config/workload/import/hash_block_size", 256}}},
      // Metrics and replicates.
      {{{"goodput", "ttft:250.5 tpot:40.5 e2el:5000"}},
       {{"/config/goodput_ms/ttft", 250.5},
        {"/config/goodput_ms/tpot", 40.5},
        {"/config/goodput_ms/e2el", 5000}}},
      // A point's table has fixed columns: sweeps and capacity refuse extra percentiles.
      {{{"metric-percentiles", "50,90,99.9"}},
       {{"/config/metric_percentiles", json::array({50, 90, 99.9})}},
       true,
       false},
  };
}

// The flags whose record is checked in a case of their own below (replicates print another
// JSON): num-seeds, trace-replicates, replicate-block-s, replicate-jitter-s.
const std::set<std::string> kReplicateFlags = {"num-seeds", "trace-replicates", "replicate-block-s",
                                               "replicate-jitter-s"};

// FLAGS as a command line after COMMAND, small unless they say otherwise; UNDERSCORES: each flag
// spelled with vLLM's underscores.
std::vector<std::string> given_args(const std::string& command, const GivenFlags& flags,
                                    bool underscores) {
  std::vector<std::string> args = {command};
  bool requests = false, trace = false;
  for (const auto& [name, value] : flags) {
    requests = requests || name == "num-requests" || name == "num-prompts";
    trace = trace || name == "trace" || name == "dataset-name";
    std::string spelled = name;
    if (underscores) std::replace(spelled.begin(), spelled.end(), '-', '_');
    args.push_back("--" + spelled + (value.empty() ? "" : "=" + value));
  }
  if (!requests && !trace) args.push_back("--num-requests=10");
  return args;
}

json run_summary(const std::vector<std::string>& args, const fs::path& dir) {
  std::vector<std::string> a = args;
  a.insert(a.end(), {"--json", (dir / "run.json").string(), "--out", (dir / "run.h5").string()});
  const CliResult r = call_cli(a);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  return json::parse(slurp(dir / "run.json"));
}

void check_recorded(const json& summary, const Recorded& want, const std::string& where) {
  INFO(where << ": " << want.pointer);
  const json::json_pointer p(want.pointer);
  REQUIRE(summary.contains(p));
  const json& got = summary.at(p);
  if (want.approx) {
    REQUIRE(got.is_number());
    CHECK(got.get<double>() == Approx(want.value.get<double>()).epsilon(1e-12));
  } else {
    CHECK(got == want.value);
  }
}

}  // namespace

TEST_CASE("value given: every run flag has a case", "[cli]") {
  const ValueFixtures f = value_fixtures("value_given_1");
  std::set<std::string> covered = kReplicateFlags;
  for (const ValueCase& c : value_cases(f)) {
    for (const auto& [name, value] : c.flags)
      covered.insert(name);
  }
  for (const std::string& name : cli::run_flag_names()) {
    INFO("--" << name << " has no case in tests/test_value_given.cpp");
    CHECK(covered.count(name) == 1);
  }
}

TEST_CASE("value given: every run flag's value is recorded as used, by every path", "[cli][slow]") {
  const ValueFixtures f = value_fixtures("value_given_2");
  const std::vector<ValueCase> cases = value_cases(f);
  for (size_t k = 0; k < cases.size(); ++k) {
    const ValueCase& c = cases[k];
    const bool underscores = k % 2 == 1;
    const std::vector<std::string> args = given_args("run", c.flags, underscores);
    std::string line;
    for (const std::string& a : args)
      line += " " + a;
    INFO("case " << k << ":" << line);
    const fs::path dir = f.dir / ("case" + std::to_string(k));
    fs::create_directories(dir);
    // run --json, and the results file's record of the same run.
    const json summary = run_summary(args, dir);
    const json stored = read_results_summary((dir / "run.h5").string(),
                                             results_runs((dir / "run.h5").string()).at(0));
    for (const Recorded& want : c.recorded) {
      check_recorded(summary, want, "run --json");
      check_recorded(stored, want, "run --out");
    }
    // The typed patches sweeps, capacity and check specs build from the same flags.
    GivenFlags flags = c.flags;
    if (args.back() == "--num-requests=10") flags.emplace_back("num-requests", "10");
    if (c.point) {
      Inputs inputs;
      const PointRun p = run_point(cli::spec_from_flags(flags), inputs);
      CHECK(json(summary_json(p.run, p.workload)["config"]) == summary["config"]);
    }
    // A --config file holding the flags.
    std::string ini;
    for (const auto& [name, value] : flags)
      ini += name + " = " + (value.empty() ? "true" : value) + "\n";
    write(dir / "flags.ini", ini);
    const json from_file = run_summary({"run", "--config", (dir / "flags.ini").string()}, dir);
    CHECK(from_file["config"] == summary["config"]);
    // compare, one row.
    if (c.compare) {
      std::vector<std::string> cmp = given_args("compare", c.flags, underscores);
      const bool has_scheduler = std::any_of(
          c.flags.begin(), c.flags.end(), [](const auto& fl) { return fl.first == "scheduler"; });
      if (!has_scheduler) cmp.push_back("--scheduler=vllm-v1");
      cmp.insert(cmp.end(), {"--json", (dir / "cmp.json").string()});
      const CliResult r = call_cli(cmp);
      INFO(r.err);
      REQUIRE(r.code == 0);
      const json rows = json::parse(slurp(dir / "cmp.json"))["runs"];
      REQUIRE(rows.size() == 1);
      CHECK(rows[0]["config"] == summary["config"]);
    }
  }
}

TEST_CASE("value given: replicates record each seed and the trace replicate drawn", "[cli]") {
  const ValueFixtures f = value_fixtures("value_given_3");
  const std::string js = (f.dir / "seeds.json").string();
  CliResult r =
      call_cli({"run", "--num-requests", "10", "--seed", "5", "--num-seeds", "3", "--json", js});
  INFO(r.err);
  REQUIRE(r.code == 0);
  json j = json::parse(slurp(js));
  REQUIRE(j["runs"].size() == 3);
  CHECK(j["runs"][2]["config"]["workload"]["seed"] == 7);
  const std::vector<std::string> trace = {"--trace",
                                          f.timed,
                                          "--trace-format",
                                          "csv",
                                          "--col-arrival",
                                          "t_ms",
                                          "--col-input",
                                          "in",
                                          "--col-output",
                                          "out",
                                          "--time-unit",
                                          "ms",
                                          "--skip-bad-rows",
                                          "--num-seeds",
                                          "2"};
  std::vector<std::string> a = {"run"};
  a.insert(a.end(), trace.begin(), trace.end());
  a.insert(a.end(),
           {"--trace-replicates", "jitter", "--replicate-jitter-s", "0.375", "--json", js});
  r = call_cli(a);
  INFO(r.err);
  REQUIRE(r.code == 0);
  j = json::parse(slurp(js));
  CHECK(j["runs"][1]["config"]["workload"]["transforms"]["replicates"] == "jitter");
  CHECK(j["runs"][1]["config"]["workload"]["transforms"]["replicate_jitter_s"] == 0.375);
  a = {"run"};
  a.insert(a.end(), trace.begin(), trace.end());
  a.insert(a.end(), {"--replicate-block-s", "2.5", "--json", js});
  r = call_cli(a);
  INFO(r.err);
  REQUIRE(r.code == 0);
  j = json::parse(slurp(js));
  CHECK(j["runs"][0]["config"]["workload"]["transforms"]["replicates"] == "bootstrap");
  CHECK(j["runs"][0]["config"]["workload"]["transforms"]["replicate_block_s"] == 2.5);
}
