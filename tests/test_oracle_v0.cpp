// Differential test of the vllm-v0 and chunked policies against vLLM's real V0 scheduler: the
// oracle in ../shared/vllm-oracle runs vllm/core/scheduler.py and block_manager.py of v0.6.3 and
// v0.8.5 (the files as released) with a fake model executor, one JSON line per engine step
// (run_v0.py: LLMEngine.step() with synchronous output processing). This test drives servesim's
// V0Scheduler as run_v0.py drives vLLM's: arrivals before each schedule(), every scheduled chunk's
// tokens computed, one token sampled where vLLM samples, stop at max_tokens, the finished freed;
// and compares every step: the scheduled requests in vLLM's order (new prefills, running
// prefills, decodes) with their tokens, computed tokens, phase and whether they sample; the
// preempted, the finished, the KV blocks free after scheduling and after the step, and the
// running and waiting queues.
//
// Not modelled: max_num_partial_prefills > 1 (v0.8.5's concurrent partial prefills) and V0's
// prefix caching; such scenarios are known gaps, replayed anyway by the gaps' test case, which
// asserts the divergence exactly: it fails when the gap closes (or moves), never passes silently.
#include <catch2/catch.hpp>
#include <set>

#include "oracle_common.hpp"
#include "scheduler/v0_scheduler.hpp"
#include "shared_data.hpp"

using namespace servesim;
using namespace servesim::test::oracle;

namespace {

// run_v0.py's DEFAULTS, overridden by the scenario's config.json.
struct V0Config : DriverConfig {
  std::string version = "0.6.3";
  int64_t max_num_partial_prefills = 1;
};

V0Config parse_v0_config(const json& j) {
  V0Config c;
  c.max_num_seqs = 256;  // run_v0.py's defaults where they are not run_v1.py's
  c.max_model_len = 2048;
  c.enable_chunked_prefill = false;
  read_driver_config(j, c);
  c.version = j.value("version", c.version);
  c.max_num_partial_prefills = j.value("max_num_partial_prefills", c.max_num_partial_prefills);
  return c;
}

// Why servesim cannot replay this scenario step by step, or "" when it can.
std::string unsupported(const V0Config& c) {
  if (c.max_num_partial_prefills > 1) {
    return "max_num_partial_prefills > 1 (concurrent partial prefills, v0.8.5) is not modelled";
  }
  if (c.long_prefill_token_threshold > 0) {
    return "long_prefill_token_threshold is not modelled on V0";
  }
  if (c.enable_prefix_caching) return "V0's prefix caching is not modelled";
  if (c.policy != "fcfs") return "V0's priority policy is not modelled";
  return "";
}

SchedulerConfig v0_scheduler_config(const V0Config& c) {
  SchedulerConfig s;
  s.policy = c.enable_chunked_prefill ? Policy::kChunked : Policy::kVllmV0;
  s.max_num_batched_tokens = c.max_num_batched_tokens;
  s.max_num_seqs = c.max_num_seqs;
  s.max_model_len = c.max_model_len;
  s.block_size = c.block_size;
  return s;  // watermark 0.01: vLLM's CacheConfig default, as run_v0.py leaves it
}

// Drives a V0Scheduler as run_v0.py drives vLLM's, recording each step in the oracle's format.
class V0Replay {
 public:
  V0Replay(const V0Config& c, std::vector<OracleRequest> reqs)
      : cfg_(c),
        reqs_(std::move(reqs)),
        sched_(v0_scheduler_config(c), c.num_gpu_blocks, reqs_.size()) {}

  std::vector<json> run() {
    std::vector<json> out;
    for (int step = 0; step < cfg_.max_steps; ++step) {
      json rec = {{"step", step}};
      rec["arrived"] = arrive(sched_, reqs_, next_, step, rejected_);
      // vLLM has_unfinished_seqs(): waiting, running or swapped.
      if (sched_.running().empty() && sched_.num_waiting() == 0) {
        if (next_ == reqs_.size()) break;
        rec["idle"] = true;
        out.push_back(std::move(rec));
        continue;
      }
      schedule(rec);
      update(rec);
      out.push_back(std::move(rec));
    }
    return out;
  }

 private:
  int64_t free_blocks() const { return sched_.usable_blocks() - sched_.used_blocks(); }

  void schedule(json& rec) {
    const std::vector<int32_t> preemptions_before = preemption_counts(sched_, reqs_.size());
    const Batch& b = sched_.schedule();
    const auto admitted = sched_.new_prefills();
    // vLLM's scheduled_seq_groups order: new prefills, then running prefills, then decodes
    // (_schedule_chunked_prefill; _schedule_default has either new prefills or decodes).
    json groups[3] = {json::array(), json::array(), json::array()};
    for (size_t i = 0; i < b.size(); ++i) {
      const uint32_t id = b.ids()[i];
      const SeqShape& shape = b.shapes()[i];
      const SeqState& s = sched_.seq(id);
      const bool is_new = std::find(admitted.begin(), admitted.end(), id) != admitted.end();
      // A prompt run again after a preemption carries its output: vLLM's is_prompt with
      // get_output_len() > 0.
      const char* phase = !shape.prefill ? "decode" : s.generated > 0 ? "recompute" : "prefill";
      json it = {{"id", reqs_[id].name},
                 {"n", shape.new_tokens},
                 {"computed_before", shape.context_tokens},
                 {"phase", phase},
                 {"prompt_len", s.input_tokens},
                 {"num_tokens", s.num_tokens()},
                 {"samples", shape.emits_token}};
      groups[is_new ? 0 : shape.prefill ? 1 : 2].push_back(std::move(it));
    }
    json items = json::array();
    for (json& g : groups)
      for (json& it : g)
        items.push_back(std::move(it));
    rec["scheduled"] = std::move(items);
    rec["num_batched_tokens"] = b.num_tokens();
    const std::vector<std::string> preempted = preempted_since(sched_, preemptions_before, reqs_);
    rec["num_preempted"] = preempted.size();
    rec["preempted"] = preempted;
    rec["ignored"] = json::array();  // servesim rejects at arrival what vLLM would ignore
    rec["kv_free_after_schedule"] = free_blocks();
  }

  void update(json& rec) {
    std::vector<uint32_t> finished;
    sched_.update_from_output([&](uint32_t id, int32_t, bool, bool done) {
      if (done) finished.push_back(id);
    });
    rec["finished"] = finished_json(finished, sched_, reqs_);
    rec["kv"] = {{"free", free_blocks()}, {"used", sched_.used_blocks()}};
    rec["running"] = queue_names(sched_.running(), reqs_);
    rec["waiting"] = queue_names(sched_.waiting(), reqs_);
    if (!rejected_.empty()) rec["rejected"] = rejected_;
  }

  V0Config cfg_;
  std::vector<OracleRequest> reqs_;
  V0Scheduler sched_;
  size_t next_ = 0;
  std::vector<std::string> rejected_;
};

// The fields of a V0 oracle record that servesim reproduces, in V0Replay's form.
json comparable(const json& rec) {
  json c = {{"step", rec["step"]}, {"arrived", rec["arrived"]}};
  if (rec.value("idle", false)) {
    c["idle"] = true;
    return c;
  }
  json items = json::array();
  for (const json& it : rec["scheduled"]) {
    items.push_back({{"id", it["id"]},
                     {"n", it["n"]},
                     {"computed_before", it["computed_before"]},
                     {"phase", it["phase"]},
                     {"prompt_len", it["prompt_len"]},
                     {"num_tokens", it["num_tokens"]},
                     {"samples", it["samples"]}});
  }
  c["scheduled"] = std::move(items);
  for (const char* k : {"num_batched_tokens", "num_preempted", "preempted", "ignored",
                        "kv_free_after_schedule", "running", "waiting", "swapped"}) {
    if (rec.contains(k)) c[k] = rec[k];
  }
  c["finished"] = comparable_finished(rec);
  c["kv"] = {{"free", rec["kv"]["free"]}, {"used", rec["kv"]["used"]}};
  return c;
}

// "" when servesim matches the scenario in DIR, else the first difference (or why it cannot
// replay it, unless ANYWAY); NOT_V0 when the scenario is not a V0 one.
std::string compare_v0_case(const fs::path& dir, bool& not_v0, bool& unsupported_case,
                            bool anyway = false) {
  const json config = read_json(dir / "config.json");
  not_v0 = config.value("scheduler", std::string()) != "v0";
  unsupported_case = false;
  if (not_v0) return "";
  const V0Config cfg = parse_v0_config(config);
  if (std::string why = unsupported(cfg); !why.empty()) {
    unsupported_case = true;
    if (!anyway) return why;
  }
  const json workload = read_json(dir / "workload.json");
  V0Replay replay(cfg, load_requests(workload, cfg.step_duration_s));
  return first_difference(read_steps(dir / "steps.jsonl"), replay.run(), comparable);
}

// The V0 scenarios servesim cannot replay yet (the gaps' test case replays them).
const std::set<std::string> kKnownGaps = {"v0_085_partial_prefills"};

}  // namespace

TEST_CASE("vllm-v0 and chunked match vLLM's real V0 scheduler step by step (v0.6.3, v0.8.5)",
          "[shared][oracle]") {
  if (!servesim::test::have_shared("vllm-oracle/scenarios")) return;
  const fs::path root = servesim::test::shared_path("vllm-oracle/scenarios");
  int compared = 0;
  std::set<std::string> skipped;
  for (const fs::path& dir : case_dirs(root)) {
    const std::string name = dir.filename().string();
    bool not_v0 = false, gap = false;
    const std::string diff = compare_v0_case(dir, not_v0, gap);
    if (not_v0) continue;
    if (gap) {
      skipped.insert(name);
      WARN("oracle scenario " << name << " is a known gap: " << diff);
      continue;
    }
    ++compared;
    INFO("oracle scenario " << name);
    CHECK(diff == "");
  }
  CHECK(skipped == kKnownGaps);
  CHECK(compared >= 4);  // chunked and default with preemption, at both versions
}

TEST_CASE("vllm-v0's known gaps against the oracle: concurrent partial prefills (v0.8.5)",
          "[shared][oracle]") {
  if (!servesim::test::have_shared("vllm-oracle/scenarios")) return;
  const fs::path root = servesim::test::shared_path("vllm-oracle/scenarios");
  REQUIRE(kKnownGaps == std::set<std::string>{"v0_085_partial_prefills"});
  bool not_v0 = false, gap = false;
  const std::string diff =
      compare_v0_case(root / "v0_085_partial_prefills", not_v0, gap, /*anyway=*/true);
  // The gap, exactly: v0.8.5 with max_num_partial_prefills 2 splits the first step's budget
  // between two prompts (a: 32 tokens, b: all 30); servesim, with one partial prefill, gives a
  // 64 and leaves b waiting. When servesim models it, this fails: move the scenario out of
  // kKnownGaps so that the step-by-step test compares it.
  INFO(diff);
  CHECK(gap);
  CHECK(diff.rfind("step 0:", 0) == 0);
  CHECK_THAT(diff, Catch::Contains("num_batched_tokens: vLLM 62, servesim 64"));
  CHECK_THAT(diff, Catch::Contains(R"(running: vLLM ["a","b"], servesim ["a"])"));
}
