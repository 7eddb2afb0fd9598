// Differential test of the vllm-v1 policy against vLLM's real V1 scheduler: the oracle in
// ../shared/vllm-oracle runs vllm/v1/core/sched/scheduler.py and kv_cache_manager.py (commit
// 9aaf83ef5) on CPU with a fake model runner and commits one JSON line per engine step
// (scenarios/NAME/steps.jsonl). This test drives servesim's Scheduler exactly as the oracle's
// driver (run_v1.py, common.py) drives vLLM's: arrivals before each schedule(), one sampled token
// per chunk that is not a partial prefill, stop at max_tokens; and compares every step: the
// scheduled requests in order with their tokens, computed tokens, kind and prefix-cache hit,
// preemptions, finished requests, KV free and used blocks, and the running and waiting queues.
//
// Async scheduling (vLLM's AsyncScheduler, async_scheduling=true) is driven as run_v1.py drives
// it, EngineCore.step_with_batch_queue with a batch queue of 2: each schedule() comes before the
// previous step's output is applied, which is applied once two batches are queued or nothing was
// scheduled. A config's "batch_queue_size" (oracle-v1-features.py) sets the queue for the sync
// scheduler too: pipeline parallelism's batch queue of one batch a stage. Not modelled step by
// step: disabled chunked prefill, explicit prompt token ids; a scenario that needs them fails. V0
// scenarios: tests/test_oracle_v0.cpp.
//
// Speculative decoding (a config's "speculative" object) comes from the project's driver,
// scripts/oracle-v1-features.py, which feeds vLLM's scheduler the drafter's proposals and the
// verifications' tokens with servesim's acceptance draws: its records also carry each scheduled
// item's drafts ("spec", servesim's SeqShape::draft_tokens) and each applied batch's "outputs"
// (the tokens each request received, the drafts accepted), compared when present. LoRA (a
// config's "max_loras", a request's "lora" adapter) comes from the same driver: each scheduled
// item's adapter is compared, the replay's block hasher (sim/workload_block_hasher) keys each
// block by its request's adapter as vLLM's does (_gen_lora_extra_hash_keys), and the waiting
// queue compared is vLLM's `waiting` then `skipped_waiting`, where the adapter limit skips
// requests to.
//
// A hidden test ([.oracle-random]) runs the same comparison on every case folder under
// $SERVESIM_ORACLE_DIR (scripts/oracle-v1-random.py writes them) and prints one line per case.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "oracle_common.hpp"
#include "scheduler/v0_scheduler.hpp"
#include "scheduler/v1_scheduler.hpp"
#include "shared_data.hpp"
#include "sim/workload_block_hasher.hpp"
#include "traces/request.hpp"

using namespace servesim;
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace servesim::test::oracle;

namespace {

// run_v1.py's DEFAULTS, overridden by the scenario's config.json.
struct OracleConfig : DriverConfig {
  bool async_scheduling = false;
  bool priority = false;
  bool reserve_full_isl = true;
  // oracle-v1-features.py's keys: "speculative", "max_num_scheduled_tokens", "max_loras".
  SpecDecodeConfig spec;
  int64_t max_num_scheduled_tokens = 0;  // 0: max_num_batched_tokens
  int max_loras = 0;                     // 0: no LoRA config
  int batch_queue_size = 0;              // 0: 2 under async scheduling, else 1
  int sliding_window = 0;                // 0: one full-attention group; else a sliding one too
  int mamba_groups = 0;                  // 0: no Mamba groups; else that many (mode none) first
};

// oracle-v1-features.py's "speculative" object: {method, num_speculative_tokens,
// acceptance_rates, seed}.
SpecDecodeConfig parse_speculative(const json& j) {
  SpecDecodeConfig spec;
  spec.method = parse_spec_method(j.at("method").get<std::string>(), "speculative.method");
  spec.num_speculative_tokens = j.at("num_speculative_tokens").get<int>();
  const json rates = j.value("acceptance_rates", json::array());
  if (spec.num_speculative_tokens > kMaxSpecTokens || rates.size() > size_t(kMaxSpecTokens)) {
    throw std::runtime_error("speculative: more than kMaxSpecTokens drafts");
  }
  for (size_t i = 0; i < rates.size(); ++i)
    spec.acceptance_rates[i] = rates[i].get<double>();
  spec.seed = j.value("seed", uint64_t(0));
  return spec;
}

OracleConfig parse_config(const json& j) {
  OracleConfig c;  // DriverConfig's defaults are run_v1.py's
  read_driver_config(j, c);
  c.async_scheduling = j.value("async_scheduling", c.async_scheduling);
  c.priority = c.policy == "priority";
  c.reserve_full_isl = j.value("scheduler_reserve_full_isl", c.reserve_full_isl);
  if (j.contains("speculative") && !j["speculative"].is_null()) {
    c.spec = parse_speculative(j["speculative"]);
  }
  if (j.contains("max_num_scheduled_tokens") && !j["max_num_scheduled_tokens"].is_null()) {
    c.max_num_scheduled_tokens = j["max_num_scheduled_tokens"].get<int64_t>();
  }
  if (j.contains("batch_queue_size") && !j["batch_queue_size"].is_null()) {
    c.batch_queue_size = j["batch_queue_size"].get<int>();
    if (c.batch_queue_size < 1 || c.batch_queue_size > kMaxBatchesInFlight) {
      throw std::runtime_error("batch_queue_size: 1 to kMaxBatchesInFlight");
    }
  }
  if (j.contains("max_loras") && !j["max_loras"].is_null()) {
    c.max_loras = j["max_loras"].get<int>();
    if (c.max_loras < 1) throw std::runtime_error("max_loras: at least 1");
  }
  if (j.contains("sliding_window") && !j["sliding_window"].is_null()) {
    c.sliding_window = j["sliding_window"].get<int>();
    if (c.sliding_window < 1) throw std::runtime_error("sliding_window: at least 1");
  }
  if (j.contains("mamba_groups") && !j["mamba_groups"].is_null()) {
    c.mamba_groups = j["mamba_groups"].get<int>();
    if (c.mamba_groups < 1) throw std::runtime_error("mamba_groups: at least 1");
  }
  return c;
}

// Why servesim cannot replay this scenario step by step, or "" when it can.
std::string unsupported(const OracleConfig& c, const json& workload) {
  if (!c.enable_chunked_prefill) return "enable_chunked_prefill false is not modelled in vllm-v1";
  // servesim's state groups are vLLM's Mamba groups in mode "none": no cached states to hit, and
  // one block a group, where a drafter makes it 1 + k (MambaSpec.num_speculative_blocks).
  if (c.mamba_groups > 0 && c.enable_prefix_caching) {
    return "mamba_groups with prefix caching (vLLM's mode align) is not modelled";
  }
  if (c.mamba_groups > 0 && c.spec.enabled()) {
    return "mamba_groups with speculative decoding (1 + k state blocks) is not modelled";
  }
  for (const json& r : workload["requests"]) {
    if (r.contains("prompt_token_ids")) return "explicit prompt_token_ids are not modelled";
  }
  return "";
}

// common.py build_prompt(): [shared_prefix tokens][prefix_blocks tokens][unique filler], as
// servesim token names: a shared prefix is a stream read from 0, each prefix block a stream of
// block_size tokens, and the filler the request's own tokens (no span).
Workload build_workload(const std::vector<OracleRequest>& reqs, int block_size) {
  Workload w(reqs.size());
  for (size_t id = 0; id < reqs.size(); ++id) {
    const OracleRequest& r = reqs[id];
    RequestSpec& s = w[id];
    s.id = uint32_t(id);
    s.arrival_s = r.arrival_time;
    s.input_tokens = r.prompt_len;
    s.output_tokens = r.max_tokens;
    s.priority = r.priority;
    s.lora = r.lora;  // an extra key of each of its block hashes, as vLLM's lora_name
    s.first_span = uint32_t(w.spans.size());
    int32_t pos = 0;
    if (r.spec.contains("shared_prefix")) {
      const json& sp = r.spec["shared_prefix"];
      const int32_t len = sp["len"].get<int32_t>();
      if (len > 0) {
        w.spans.push_back({stream_id(StreamKind::kPrefix, sp["id"].get<uint64_t>()), 0, pos, len});
      }
      pos += len;
    }
    for (const json& b : r.spec.value("prefix_blocks", json::array())) {
      w.spans.push_back(
          {stream_id(StreamKind::kTraceBlock, b.get<uint64_t>()), 0, pos, int32_t(block_size)});
      pos += block_size;
    }
    if (pos > r.prompt_len) {
      throw std::runtime_error("request " + r.name + ": shared part longer than prompt_len");
    }
    s.num_spans = uint32_t(w.spans.size()) - s.first_span;
  }
  return w;
}

SchedulerConfig scheduler_config(const OracleConfig& c) {
  SchedulerConfig s;
  s.policy = Policy::kVllmV1;
  s.max_num_batched_tokens = c.max_num_batched_tokens;
  s.max_num_seqs = c.max_num_seqs;
  s.max_model_len = c.max_model_len;
  s.block_size = c.block_size;
  s.enable_prefix_caching = c.enable_prefix_caching;
  s.scheduling_policy = c.priority ? WaitingOrder::kPriority : WaitingOrder::kFcfs;
  s.long_prefill_token_threshold = c.long_prefill_token_threshold;
  s.async_scheduling = c.async_scheduling;  // AsyncScheduler, or the sync EngineCore.step()
  s.reserve_full_isl = c.reserve_full_isl;
  s.spec = c.spec;
  s.max_num_scheduled_tokens = c.max_num_scheduled_tokens;
  s.max_loras = c.max_loras;
  s.batch_queue_size = c.batch_queue_size;
  s.sliding_window = c.sliding_window;
  s.state_groups = c.mamba_groups;  // one block a group a request, before its full-attention ones
  return s;
}

// Whether the oracle's records carry oracle-v1-features.py's fields (drafts scheduled, tokens
// received): Replay then writes them too.
bool has_feature_fields(const std::vector<json>& steps) {
  for (const json& rec : steps) {
    if (rec.contains("outputs")) return true;
    for (const json& it : rec.value("scheduled", json::array())) {
      if (it.contains("spec")) return true;
    }
  }
  return false;
}

// Drives servesim's Scheduler as run_v1.py drives vLLM's, recording each step in the oracle's
// format (the fields compared); with FEATURES, also oracle-v1-features.py's fields.
class Replay {
 public:
  Replay(const OracleConfig& c, std::vector<OracleRequest> reqs, bool features)
      : cfg_(c),
        features_(features),
        reqs_(std::move(reqs)),
        workload_(build_workload(reqs_, c.block_size)),
        hasher_(workload_, c.block_size),
        sched_(scheduler_config(c), c.num_gpu_blocks, reqs_.size(), &hasher_) {}

  std::vector<json> run() {
    std::vector<json> out;
    for (int step = 0; step < cfg_.max_steps; ++step) {
      json rec = {{"step", step}};
      rec["arrived"] = arrive(sched_, reqs_, next_, step, rejected_);
      // vLLM has_requests(): unfinished requests, or requests finished since the last schedule().
      const bool has_requests =
          !sched_.running().empty() || sched_.num_waiting() > 0 || finished_since_schedule_;
      if (!has_requests && queue_.empty()) {
        if (next_ == reqs_.size()) break;
        rec["idle"] = true;
        out.push_back(std::move(rec));
        continue;
      }
      if (!has_requests) {
        // Async: nothing to schedule, only the oldest batch to wait for.
        rec["schedule_called"] = false;
        process(rec);
      } else {
        schedule(rec);
        // Sync: every step's output is applied at once. A batch queue (async: 2; a pipeline: its
        // stages): once it is full, or when nothing was scheduled (model_executed false).
        queue_.push_back(!sched_.batch().empty());
        const size_t depth = size_t(scheduler_config(cfg_).max_batches_in_flight());
        if (queue_.size() >= depth || sched_.batch().empty()) process(rec);
      }
      snapshot(rec);
      out.push_back(std::move(rec));
    }
    return out;
  }

 private:
  void schedule(json& rec) {
    finished_since_schedule_ = false;  // _update_after_schedule clears finished_req_ids
    const std::vector<int32_t> preemptions_before = preemption_counts(sched_, reqs_.size());
    const Batch& b = sched_.schedule();
    const auto admitted = sched_.new_prefills();
    json items = json::array();
    for (size_t i = 0; i < b.size(); ++i) {
      const uint32_t id = b.ids()[i];
      const SeqShape& shape = b.shapes()[i];
      const bool is_new = std::find(admitted.begin(), admitted.end(), id) != admitted.end();
      json it = {{"id", reqs_[id].name},
                 {"n", shape.new_tokens},
                 {"computed_before", shape.context_tokens},
                 {"kind", !is_new                      ? "running"
                          : preemptions_before[id] > 0 ? "resumed"
                                                       : "new"},
                 {"samples", shape.emits_token}};
      if (is_new) it["cached"] = shape.context_tokens;
      if (features_) it["spec"] = shape.draft_tokens;
      if (const uint16_t lora = sched_.seq(id).lora; lora > 0) it["lora"] = lora;
      items.push_back(std::move(it));
    }
    rec["scheduled"] = std::move(items);
    rec["num_batched_tokens"] = b.num_tokens();
    rec["preempted"] = preempted_since(sched_, preemptions_before, reqs_);
    rec["kv_free_after_schedule"] = sched_.kv_cache_manager()->free_blocks();
  }

  // Applies the oldest queued batch (an empty one applies nothing).
  void process(json& rec) {
    std::vector<uint32_t> finished;
    const bool nonempty = queue_.front();
    queue_.erase(queue_.begin());
    json outputs = json::array();
    if (nonempty) {
      // The verifications' accepted drafts, as servesim counted them (each entry's Applied, in
      // the order of the token callbacks), and summed in SpecDecodeStats.
      const SpecDecodeStats* stats = sched_.spec_decode_stats();
      const int64_t accepted_before = stats ? stats->num_accepted_tokens : 0;
      sched_.update_from_output([&](uint32_t id, int32_t tokens, bool, bool done) {
        if (done) finished.push_back(id);
        outputs.push_back({{"id", reqs_[id].name}, {"tokens", tokens}});
      });
      size_t k = 0;
      int64_t accepted_sum = 0;
      for (const Scheduler::Applied& a : sched_.last_applied()) {
        if (a.tokens == 0) continue;
        if (a.accepted >= 0) {
          outputs[k]["accepted"] = a.accepted;
          accepted_sum += a.accepted;
        }
        ++k;
      }
      if (stats != nullptr && stats->num_accepted_tokens - accepted_before != accepted_sum) {
        throw std::runtime_error("the entries' accepted drafts do not add up to the stats'");
      }
    }
    if (!finished.empty()) finished_since_schedule_ = true;
    rec["finished"] = finished_json(finished, sched_, reqs_);
    if (features_) rec["outputs"] = sorted_by_id(std::move(outputs));
  }

  void snapshot(json& rec) {
    if (!rec.contains("finished")) rec["finished"] = json::array();
    const KvCacheManager& kv = *sched_.kv_cache_manager();
    rec["kv"] = {{"free", kv.free_blocks()}, {"used", kv.used_blocks()}};
    rec["running"] = queue_names(sched_.running(), reqs_);
    rec["waiting"] = waiting_names();
    if (!rejected_.empty()) rec["rejected"] = rejected_;
  }

  // vLLM's `waiting` then `skipped_waiting` (oracle-v1-features.py; run_v1.py's has only the
  // first), each as Python iterates it: FCFS, the deque in order; priority, the heap in pop order,
  // (priority, arrival time, request id), servesim's ids being in arrival order.
  json waiting_names() const {
    json names = json::array();
    for (const WaitingQueue* q : {&sched_.waiting_queue(), &sched_.skipped_waiting()}) {
      std::vector<uint32_t> ids;
      q->for_each([&ids](uint32_t id) { ids.push_back(id); });
      if (q->priority()) {
        std::sort(ids.begin(), ids.end(),
                  [this, q](uint32_t a, uint32_t b) { return q->before(a, b, sched_.seqs()); });
      }
      for (uint32_t id : ids)
        names.push_back(reqs_[id].name);
    }
    return names;
  }

  OracleConfig cfg_;
  bool features_;
  std::vector<OracleRequest> reqs_;
  Workload workload_;
  WorkloadBlockHasher hasher_;
  V1Scheduler sched_;
  size_t next_ = 0;
  bool finished_since_schedule_ = false;
  // The batches scheduled and not yet applied, oldest first: whether each is non-empty.
  std::vector<bool> queue_;
  std::vector<std::string> rejected_;
};

// The fields of an oracle step record that servesim reproduces, in the form Replay writes them.
json comparable(const json& rec) {
  json c = {{"step", rec["step"]}, {"arrived", rec["arrived"]}};
  if (rec.value("idle", false)) {
    c["idle"] = true;
    return c;
  }
  if (!rec.value("schedule_called", true)) c["schedule_called"] = false;
  json items = json::array();
  for (const json& it : rec.value("scheduled", json::array())) {
    json x = {{"id", it["id"]},
              {"n", it["n"]},
              {"computed_before", it["computed_before"]},
              {"kind", it["kind"]},
              {"samples", it["samples"]}};
    if (it.contains("cached")) x["cached"] = it["cached"];
    if (it.contains("spec")) x["spec"] = it["spec"];
    if (it.contains("lora")) x["lora"] = it["lora"];
    items.push_back(std::move(x));
  }
  if (rec.contains("scheduled")) c["scheduled"] = std::move(items);
  for (const char* k : {"num_batched_tokens", "preempted", "kv_free_after_schedule", "running",
                        "waiting", "rejected"}) {
    if (rec.contains(k)) c[k] = rec[k];
  }
  c["finished"] = comparable_finished(rec);
  if (rec.contains("outputs")) c["outputs"] = rec["outputs"];
  if (rec.contains("kv")) c["kv"] = {{"free", rec["kv"]["free"]}, {"used", rec["kv"]["used"]}};
  return c;
}

struct Outcome {
  enum Kind { kMatch, kMismatch, kSkipped, kNotV1 } kind = kMatch;
  std::string detail;
};

// DUMP: also write servesim's steps to DIR/servesim_steps.jsonl.
Outcome compare_case(const fs::path& dir, bool dump = false) {
  const json config = read_json(dir / "config.json");
  if (config.value("scheduler", std::string()) != "v1") return {Outcome::kNotV1, ""};
  const json workload = read_json(dir / "workload.json");
  const OracleConfig cfg = parse_config(config);
  if (std::string why = unsupported(cfg, workload); !why.empty()) {
    return {Outcome::kSkipped, why};
  }
  const std::vector<json> expected = read_steps(dir / "steps.jsonl");
  Replay replay(cfg, load_requests(workload, cfg.step_duration_s), has_feature_fields(expected));
  const std::vector<json> got = replay.run();
  if (dump) {
    std::ofstream out(dir / "servesim_steps.jsonl");
    for (const json& rec : got)
      out << rec.dump() << "\n";
  }
  const std::string diff = first_difference(expected, got, comparable);
  if (diff.empty()) return {Outcome::kMatch, ""};
  return {Outcome::kMismatch, diff};
}

}  // namespace

TEST_CASE("vllm-v1 matches vLLM's real V1 scheduler step by step on the oracle's scenarios",
          "[shared][oracle]") {
  if (!servesim::test::have_shared("vllm-oracle/scenarios")) return;
  const fs::path root = servesim::test::shared_path("vllm-oracle/scenarios");
  int compared = 0;
  std::set<std::string> skipped;
  for (const fs::path& dir : case_dirs(root)) {
    const std::string name = dir.filename().string();
    const Outcome o = compare_case(dir);
    switch (o.kind) {
      case Outcome::kNotV1:
        break;
      case Outcome::kSkipped:  // a scenario servesim cannot replay fails
        skipped.insert(name);
        FAIL_CHECK("oracle scenario " << name
                                      << " needs what servesim does not model: " << o.detail);
        break;
      case Outcome::kMismatch:
        ++compared;
        FAIL_CHECK("oracle scenario " << name << " differs from vLLM at " << o.detail);
        break;
      case Outcome::kMatch:
        ++compared;
        SUCCEED("oracle scenario " << name << " matches vLLM");
        break;
    }
  }
  CHECK(skipped.empty());
  CHECK(compared >= 6);
}

// Run by scripts/oracle-v1-random.py: every case folder (workload.json, config.json, steps.jsonl)
// under $SERVESIM_ORACLE_DIR, or that one case folder; prints one line per case,
// "oracle-random CASE match|MISMATCH|skip", and fails if any case differs. With
// SERVESIM_ORACLE_DUMP set, servesim's steps go to CASE/servesim_steps.jsonl, beside the oracle's.
TEST_CASE("vllm-v1 matches vLLM on the random cases in SERVESIM_ORACLE_DIR", "[.oracle-random]") {
  const char* env = std::getenv("SERVESIM_ORACLE_DIR");
  if (env == nullptr) FAIL("set SERVESIM_ORACLE_DIR to a folder of oracle cases");
  int matched = 0, mismatched = 0, skipped = 0;
  // A folder of cases, or one case.
  const fs::path root(env);
  const std::vector<fs::path> dirs =
      fs::exists(root / "config.json") ? std::vector<fs::path>{root} : case_dirs(root);
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    const Outcome o = compare_case(dir, std::getenv("SERVESIM_ORACLE_DUMP") != nullptr);
    if (o.kind == Outcome::kMatch) {
      ++matched;
      std::cout << "oracle-random " << name << " match\n";
    } else if (o.kind == Outcome::kMismatch) {
      ++mismatched;
      std::cout << "oracle-random " << name << " MISMATCH " << o.detail << "\n";
    } else {
      ++skipped;
      std::cout << "oracle-random " << name << " skip " << o.detail << "\n";
    }
  }
  std::cout << "oracle-random total: " << matched << " match, " << mismatched << " mismatch, "
            << skipped << " skipped" << std::endl;
  CHECK(mismatched == 0);
}
