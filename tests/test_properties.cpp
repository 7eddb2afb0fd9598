// Properties of whole runs over at least 500 random valid configurations (issue 14): models, GPUs,
// TP, the three policies and their budgets, batch limits, KV sizes, prefix caching, priorities,
// lengths, rates, datasets, client mixtures, fleets, disaggregation and trace files of every text
// format. Each configuration is drawn as `run` flags (what users type), so invalid combinations
// are refused the way `run` refuses them and a new draw is made. For each valid one:
//  - accounting: every request of the workload is completed or rejected, nothing else, and the
//    summary's counts and output tokens are those of the records;
//  - time: arrival <= first scheduled <= first token <= last token, so E2E >= TTFT >= 0;
//  - no infinite metric, and no NaN latency when something completed;
//  - a rerun from scratch gives byte-identical JSON and per-request CSV;
//  - a client mixture has exactly --num-requests requests; a fleet of one replica of a named GPU
//    runs on that GPU (issue 23);
//  - for one draw in four, `run --json PATH` with PATH drawn among the kinds users give (a new
//    file, an existing one, a link, a dangling link, a missing folder, a folder, a FIFO, the
//    trace it reads): a regular target is written whole (through a link), anything else is
//    refused with exit 2 and left as it was, and no temp file is left behind (issue 23).
#include <boost/program_options/errors.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "analysis/report.hpp"
#include "analysis/run_spec.hpp"
#include "cli/run_flags.hpp"
#include "cli_helpers.hpp"
#include "util/error.hpp"

using namespace servesim;

namespace {

using Flags = std::vector<std::pair<std::string, std::string>>;

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int64_t in(int64_t lo, int64_t hi) {
    return boost::random::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(int percent) { return in(1, 100) <= percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[size_t(in(0, int64_t(v.size()) - 1))];
  }

 private:
  boost::random::mt19937_64 rng_;
};

// Small trace files, one per text format, for configurations that replay a trace.
std::vector<std::string> trace_files() {
  const auto dir = servesim::test::scratch("properties_traces");
  const std::vector<std::pair<std::string, std::string>> files = {
      {"azure.csv",
       "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,480,10\r\n"
       "2023-11-16 18:17:04.0319800,318,8\r\n2023-11-16 18:17:05.9799601,110,27\r\n"
       "2023-11-16 18:17:05.9799601,2000,3\r\n"},
      {"burstgpt.csv",
       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
       "5.0,ChatGPT,472,18,490,Conversation log\n6.0,ChatGPT,1087,0,1087,Conversation log\n"
       "8.0,GPT-4,417,76,493,API log\n8.0,ChatGPT,1360,65,1425,API log\n"},
      {"mooncake.jsonl",
       "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
       "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 7, \"hash_ids\": [0, 2]}\n"
       "{\"timestamp\": 1500, \"input_length\": 900, \"output_length\": 40, \"hash_ids\": [0, "
       "1]}\n"},
      {"vidur.csv",
       "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,4808,10\n0.052,3180,8\n"
       "0.5,200,90\n0.9,64,1\n"}};
  std::vector<std::string> paths;
  for (const auto& [name, text] : files) {
    servesim::test::write(dir / name, text);
    paths.push_back((dir / name).string());
  }
  return paths;
}

std::string flag_value(const Flags& flags, const std::string& flag);

Flags draw_flags(Draw& d, const std::vector<std::string>& traces) {
  Flags f;
  const std::string model = d.pick<std::string>(
      {"llama-2-7b", "llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.1", "mixtral-8x7b", "llama-2-13b",
       "llama-3.1-70b", "llama-4-scout-17b-16e-fp8", "gpt-oss-20b", "qwen3-next-80b-a3b",
       "llama-3.3-70b-fp4"});
  f.emplace_back("model", model);
  f.emplace_back("gpu", d.pick<std::string>({"a100-80g", "a100-40g", "h100-sxm", "h200-sxm", "l40s",
                                             "l4", "mi300x", "b200"}));
  f.emplace_back("tp", std::to_string(d.pick<int>({1, 1, 2, 4, 8})));
  const std::string policy = d.pick<std::string>({"vllm-v0", "chunked", "vllm-v1"});
  const bool v1 = policy == "vllm-v1";
  std::string scheduler = policy;
  if (policy != "vllm-v0" || d.chance(30)) {
    scheduler += ":" + std::to_string(d.pick<int>({16, 64, 256, 512, 2048, 8192}));
  }
  f.emplace_back("scheduler", scheduler);
  f.emplace_back("max-num-seqs", std::to_string(d.pick<int>({1, 4, 16, 64, 256})));
  f.emplace_back("max-model-len", std::to_string(d.pick<int>({512, 2048, 4096})));
  // gpt-oss's blocks hold one KV group's 12 layers: on a large GPU its pool is six times a
  // dense model's (300,000 blocks), whose set-up doubled this test's time under the sanitizers;
  // its pool is always drawn, small enough to press on the window's blocks.
  // Qwen3-Next's blocks of 272-1072 tokens: drawn the same way (its 160 GB of weights fit few
  // of the GPUs drawn, and an override is not checked against memory).
  if (model == "gpt-oss-20b" || model == "qwen3-next-80b-a3b") {
    f.emplace_back("num-gpu-blocks", std::to_string(d.in(64, 4000)));
  } else if (d.chance(30)) {
    f.emplace_back("num-gpu-blocks", std::to_string(d.in(8, 600)));
  }
  // A hybrid model runs without the prefix cache (vLLM's default; servesim refuses it).
  if (v1 && d.chance(40) && model != "qwen3-next-80b-a3b") {
    f.emplace_back("enable-prefix-caching", "");
  }
  if (v1 && d.chance(20)) f.emplace_back("async-scheduling", "");
  if (d.chance(10)) f.emplace_back("quantization", "fp8");
  const int workload = int(d.in(1, 100));
  if (workload <= 25) {
    f.emplace_back("trace", d.pick(traces));
    if (d.chance(30)) f.emplace_back("request-rate", std::to_string(d.in(1, 50)));
    if (d.chance(20)) f.emplace_back("input-scale", "0.5");
    if (d.chance(20)) f.emplace_back("max-output-len", std::to_string(d.in(1, 20)));
  } else {
    f.emplace_back("seed", std::to_string(d.in(0, 1000)));
    f.emplace_back("num-requests", std::to_string(d.in(1, 40)));
    if (d.chance(20)) {
      f.emplace_back("request-rate", "inf");
    } else {
      f.emplace_back("request-rate", std::to_string(d.in(1, 400) / 4.0));
      if (d.chance(30)) f.emplace_back("burstiness", d.pick<std::string>({"0.3", "1", "4"}));
    }
    if (workload <= 40) {
      f.emplace_back("dataset-name", "prefix_repetition");
      f.emplace_back("prefix-repetition-prefix-len", std::to_string(d.in(1, 600)));
      f.emplace_back("prefix-repetition-suffix-len", std::to_string(d.in(1, 200)));
      f.emplace_back("prefix-repetition-num-prefixes", std::to_string(d.in(1, 4)));
      f.emplace_back("prefix-repetition-output-len", std::to_string(d.in(1, 60)));
    } else if (workload <= 50) {
      f.emplace_back("dataset-name", "mixture");
      std::string mix = "rate=" + std::to_string(d.in(1, 20)) +
                        ",input=uniform:1:" + std::to_string(d.in(1, 3000)) +
                        ",output=fixed:" + std::to_string(d.in(1, 50)) + ";rate=2,burstiness=0.5";
      for (int64_t k = d.in(0, 5); k > 0; --k)
        mix += ";rate=" + std::to_string(d.in(1, 1000) / 100.0);
      f.emplace_back("client-mix", mix);
    } else {
      f.emplace_back("input-len",
                     d.chance(50) ? "uniform:1:" + std::to_string(d.in(1, 5000))
                                  : "lognormal:" + std::to_string(d.in(16, 2000)) + ":0.8:1:6000");
      f.emplace_back("output-len", "uniform:1:" + std::to_string(d.in(1, 120)));
    }
  }
  if (v1 && d.chance(20)) {
    f.emplace_back("scheduling-policy", "priority");
    if (workload > 25) f.emplace_back("num-priorities", std::to_string(d.in(1, 4)));
  }
  if (v1 && d.chance(15)) {  // speculative decoding (issue 28)
    const std::string method =
        d.pick<std::string>({"eagle", "eagle3", "mtp", "ngram", "draft_model"});
    std::string json = "{\"method\": \"" + method +
                       "\", \"num_speculative_tokens\": " + std::to_string(d.in(1, 4));
    if (method == "draft_model") json += ", \"model\": \"llama-3.2-1b\"";
    f.emplace_back("speculative-config", json + "}");
    f.emplace_back("spec-acceptance-rate", d.pick<std::string>({"0", "0.5", "0.8", "1"}));
  }
  if (v1 && d.chance(15)) {  // LoRA adapters (issue 28)
    f.emplace_back("enable-lora", "");
    f.emplace_back("max-loras", std::to_string(d.in(1, 4)));
    if (d.chance(50)) f.emplace_back("max-cpu-loras", std::to_string(d.in(1, 8)));
    f.emplace_back("max-lora-rank", d.pick<std::string>({"8", "16", "64"}));
    if (workload > 25) f.emplace_back("lora-adapters", std::to_string(d.in(1, 12)));
    if (d.chance(30)) f.emplace_back("lora-zipf", d.pick<std::string>({"0", "1", "2.5"}));
  }
  if (v1 && d.chance(15)) {  // a CPU KV tier (issue 28)
    f.emplace_back("kv-offloading-size", d.pick<std::string>({"0.05", "0.5", "4"}));
    if (d.chance(30)) f.emplace_back("kv-offloading-backend", "lmcache");
  }
  // Pipeline stages (issue 47); vLLM V0's policies, the features a pipeline does not
  // model and disaggregated pools are refused.
  if (v1 && d.chance(15)) f.emplace_back("pp", std::to_string(d.pick<int>({2, 3, 4})));
  const int fleet = int(d.in(1, 100));
  if (fleet > 94) {  // a fleet of one replica of a named GPU, or of two GPUs
    const std::string gpu = d.pick<std::string>({"a100-80g", "h100-sxm", "l40s", "h200-sxm"});
    f.emplace_back("replica-gpus", gpu + ":1" + (d.chance(50) ? "" : ",h100-sxm:1"));
  } else if (fleet <= 15) {
    f.emplace_back("num-replicas", std::to_string(d.in(2, 4)));
    f.emplace_back("router", d.pick<std::string>({"round-robin", "least-requests", "least-kv",
                                                  "prefix-aware", "session"}));
  } else if (fleet <= 20 && v1) {
    f.emplace_back("prefill-replicas", "1");
    f.emplace_back("decode-replicas", std::to_string(d.in(1, 2)));
  }
  // Expert parallelism over TP, or over the replicas as data-parallel ranks (issue 47).
  const bool moe = model == "mixtral-8x7b" || model == "llama-4-scout-17b-16e-fp8" ||
                   model == "gpt-oss-20b" || model == "qwen3-next-80b-a3b";
  if (v1 && moe && d.chance(50)) {
    f.emplace_back("enable-expert-parallel", "");
    // Skewed routing in a fifth of them, keyed to a value drawn already (a draw of its own would
    // move every later case's).
    if (flag_value(f, "max-num-seqs") == "16") f.emplace_back("expert-skew", "1.5");
  }
  return f;
}

RunSpec spec_of(const Flags& flags) {
  RunSpec s;
  for (const auto& [name, value] : flags)
    cli::parse_run_flag(name, value)(s);
  return s;
}

std::string describe(const Flags& flags) {
  std::string s;
  for (const auto& [name, value] : flags)
    s += " --" + name + (value.empty() ? "" : " " + value);
  return s;
}

// The bytes a run writes: its JSON summary and its per-request CSV.
std::string output_bytes(const PointRun& p) {
  std::ostringstream csv;
  write_requests_csv(csv, p.run);
  return json_text(summary_json(p.run, p.workload), 2) + "\n" + csv.str();
}

// The value of FLAG in FLAGS ("" when absent).
std::string flag_value(const Flags& flags, const std::string& flag) {
  for (const auto& [name, value] : flags) {
    if (name == flag) return value;
  }
  return "";
}

// The first property RUN, simulated from FLAGS, breaks ("" when none).
std::string broken_property(const RunResult& r, const std::vector<GpuPool>& pools,
                            const Flags& flags) {
  const RunSummary& s = r.summary;
  if (flag_value(flags, "dataset-name") == "mixture" &&
      s.total != std::stoull(flag_value(flags, "num-requests"))) {
    return "a mixture of --num-requests requests";
  }
  const std::string fleet = flag_value(flags, "replica-gpus");
  if (!fleet.empty() && fleet.find(',') == std::string::npos &&
      r.config.gpu.name != fleet.substr(0, fleet.find(':'))) {
    return "one replica runs on its GPU";
  }
  if (s.completed + s.rejected != s.total) return "completed + rejected != total";
  if (r.requests.size() != s.total) return "a record per request";
  uint64_t completed = 0, rejected = 0;
  int64_t output_tokens = 0;
  for (const RequestRecord& q : r.requests) {
    if (q.status == SeqStatus::kRejected) {
      ++rejected;
      continue;
    }
    if (!q.finished()) return "a request neither completed nor rejected";
    ++completed;
    output_tokens += q.output_tokens;
    if (!(q.arrival_s <= q.first_scheduled_s && q.first_scheduled_s <= q.first_token_s &&
          q.first_token_s <= q.last_token_s)) {
      return "arrival <= scheduled <= first token <= last token";
    }
    if (!(q.e2e_s() >= q.ttft_s() && q.ttft_s() >= 0)) return "E2E >= TTFT >= 0";
  }
  if (completed != s.completed || rejected != s.rejected) return "summary counts = records";
  if (output_tokens != s.output_tokens) return "output tokens conserved";
  for (const auto& [name, v] : summary_metrics(s)) {
    if (std::isinf(v)) return "infinite " + name;
    const bool latency = name.rfind("ttft_ms", 0) == 0 || name.rfind("e2e_ms", 0) == 0 ||
                         name.rfind("queue_ms", 0) == 0;
    if (latency && s.completed > 0 && std::isnan(v)) return "NaN " + name;
  }
  if (!std::isfinite(s.makespan_s) || s.makespan_s < 0) return "makespan";
  // Busy time counts each moment once, however many batches a pipeline holds.
  if (s.step_time_fraction > 1 + 1e-9) return "a step in flight at most all of the time";
  // Energy (models/power.hpp): every catalogue GPU has a power model; idle <= mean <= peak,
  // the peak within every GPU's TDP, and the per-token figure the energy over the tokens.
  const EnergySummary& e = s.energy;
  if (s.makespan_s > 0 && s.steps > 0) {
    if (!std::isfinite(e.energy_j)) return "energy of a catalogue GPU's run";
    const double tol = 1e-9 * e.peak_power_w;
    if (!(e.idle_power_w <= e.mean_power_w + tol && e.mean_power_w <= e.peak_power_w + tol)) {
      return "idle <= mean <= peak power";
    }
    double tdp_w = 0;
    for (const GpuPool& pool : pools)
      tdp_w += double(pool.gpus()) * find_gpu(pool.gpu).tdp_w;
    if (e.peak_power_w > tdp_w * (1 + 1e-9)) return "peak power within the GPUs' TDP";
    if (s.output_tokens > 0 &&
        std::abs(e.j_per_output_token * double(s.output_tokens) - e.energy_j) > 1e-9 * e.energy_j) {
      return "J per output token x tokens = energy";
    }
  }
  return "";
}

// `run FLAGS --json PATH`, PATH one of the kinds users give, drawn; checks what happened to it.
void check_output_path(Draw& d, const std::filesystem::path& dir, int k, const Flags& flags) {
  namespace fs = std::filesystem;
  const std::string n = std::to_string(k);
  const std::string trace = flag_value(flags, "trace");
  const std::string kind = d.pick<std::string>(
      {"new", "existing", "link", "dangling", "missing-folder", "folder", "fifo", "input"});
  fs::path path = dir / ("out" + n + ".json"), target = path;
  bool refused = false;
  if (kind == "existing") {
    servesim::test::write(path, "old");
  } else if (kind == "link" || kind == "dangling") {
    target = dir / ("target" + n + ".json");
    if (kind == "link") servesim::test::write(target, "old");
    fs::create_symlink(target.filename(), path);
  } else if (kind == "missing-folder") {
    path = dir / ("none" + n) / "x.json";
    refused = true;
  } else if (kind == "folder") {
    fs::create_directories(path);
    refused = true;
  } else if (kind == "fifo") {
    REQUIRE(mkfifo(path.c_str(), 0600) == 0);
    refused = true;
  } else if (kind == "input" && !trace.empty()) {
    path = target = trace;
    refused = true;
  }
  const std::string before =
      refused && fs::is_regular_file(path) ? servesim::test::slurp(path) : "";
  std::vector<std::string> args = {"run"};
  for (const auto& [name, value] : flags) {
    args.push_back("--" + name);
    if (!value.empty()) args.push_back(value);
  }
  args.insert(args.end(), {"--json", path.string()});
  const auto r = servesim::test::call_cli(args);
  INFO("--json " << kind << " " << path.string() << ": " << r.err);
  if (refused) {
    CHECK(r.code == 2);
    if (kind == "folder") CHECK(fs::is_directory(path));
    if (kind == "fifo") CHECK(fs::is_fifo(path));
    if (kind == "input") CHECK(servesim::test::slurp(path) == before);
  } else {
    REQUIRE(r.code == 0);
    CHECK(servesim::test::slurp(target).rfind("{\n", 0) == 0);
    if (kind == "link" || kind == "dangling") CHECK(fs::is_symlink(path));
  }
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".servesim-") == std::string::npos);
}

}  // namespace

TEST_CASE("properties: 500 random valid configurations keep accounting, time and determinism",
          "[properties][slow]") {
  const std::vector<std::string> traces = trace_files();
  const std::filesystem::path outputs = servesim::test::scratch("properties_outputs");
  Draw d(20261202);
  int valid = 0, attempts = 0;
  std::map<std::string, int> policies, refused;
  while (valid < 500 && attempts < 5000) {
    ++attempts;
    const Flags flags = draw_flags(d, traces);
    PointRun first;
    try {
      Inputs inputs;
      first = run_point(spec_of(flags), inputs);
    } catch (const Error& e) {
      ++refused[e.field()];  // an invalid combination, refused as `run` refuses it
      continue;
    } catch (const boost::program_options::error&) {
      ++refused["program_options"];
      continue;
    }
    ++valid;
    for (const auto& [name, value] : flags) {
      if (name == "scheduler") ++policies[value.substr(0, value.find(':'))];
      if (name == "dataset-name" && value == "mixture") ++policies["mixture"];
      if (name == "replica-gpus") ++policies[value.find(',') == std::string::npos ? "one" : "two"];
      if (name == "speculative-config") ++policies["spec"];
      if (name == "kv-offloading-size") ++policies["offload"];
      if (name == "enable-lora") ++policies["lora"];
      if (name == "pp") ++policies["pp"];
      if (name == "enable-expert-parallel") ++policies["ep"];
      if (name == "expert-skew") ++policies["skew"];
      if (name == "model" && value == "qwen3-next-80b-a3b") ++policies["hybrid"];
      if (name == "model" && value == "llama-3.3-70b-fp4") ++policies["nvfp4"];
    }
    INFO("configuration:" << describe(flags));
    const std::string broken = broken_property(first.run, first.pools, flags);
    CHECK(broken == "");
    Inputs fresh;
    const PointRun again = run_point(spec_of(flags), fresh);
    REQUIRE(output_bytes(again) == output_bytes(first));
    if (valid % 4 == 0) check_output_path(d, outputs, valid, flags);
  }
  std::string why;
  for (const auto& [field, n] : refused)
    why += " " + field + ":" + std::to_string(n);
  INFO("refused by field:" << why);
  CHECK(valid == 500);
  // Every policy is well represented among the valid draws.
  for (const char* p : {"vllm-v0", "chunked", "vllm-v1"})
    CHECK(policies[p] >= 100);
  // And the draws issue 23 added: mixtures, and fleets of one and of two named GPUs.
  CHECK(policies["mixture"] >= 20);
  CHECK(policies["one"] >= 5);
  CHECK(policies["two"] >= 5);
  // And issue 28's: speculative decoding and CPU KV offload.
  CHECK(policies["spec"] >= 10);
  CHECK(policies["offload"] >= 10);
  CHECK(policies["lora"] >= 10);
  CHECK(policies["pp"] >= 10);
  CHECK(policies["ep"] >= 5);
  // Issue 47's skewed routing and hybrid model run too.
  CHECK(policies["skew"] >= 1);
  CHECK(policies["hybrid"] >= 1);
  // Issue 48's NVFP4 checkpoint (whose runs also check energy on every draw).
  CHECK(policies["nvfp4"] >= 5);
}
