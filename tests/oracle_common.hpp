// What the oracle replays of ../shared/vllm-oracle share (tests/test_oracle_v0.cpp, _v1.cpp):
// reading a scenario's files, the requests in the drivers' arrival order (common.py), and the
// first difference between vLLM's step records and servesim's.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "scheduler/scheduler.hpp"

namespace servesim::test::oracle {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return json::parse(in);
}

// steps.jsonl without its summary line.
inline std::vector<json> read_steps(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::vector<json> steps;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j = json::parse(line);
    if (!j.contains("summary")) steps.push_back(std::move(j));
  }
  return steps;
}

struct OracleRequest {
  std::string name;
  int64_t arrival_step = 0;
  double arrival_time = 0;
  int32_t prompt_len = 0, max_tokens = 0, priority = 0;
  uint16_t lora = 0;   // oracle-v1-features.py's "lora": its adapter, 0 for the base model
  size_t listing = 0;  // index in workload.json (common.py's req_idx)
  json spec;
};

// common.py arrival_steps(): (step, time) of each request.
inline void set_arrival(OracleRequest& r, double dt) {
  const json& j = r.spec;
  if (j.contains("arrival_step")) {
    r.arrival_step = j["arrival_step"].get<int64_t>();
    r.arrival_time = j.value("arrival_time", double(r.arrival_step) * (dt > 0 ? dt : 1.0));
  } else if (j.contains("arrival_time")) {
    if (dt <= 0) throw std::runtime_error("arrival_time needs config step_duration_s");
    r.arrival_time = j["arrival_time"].get<double>();
    r.arrival_step = std::max<int64_t>(0, int64_t(std::ceil(r.arrival_time / dt - 1e-12)));
  }
}

// The requests in run_v1.py's arrival order (step, time, listing order); servesim's id of a
// request is its index here, so ids are in arrival order as servesim's scheduler assumes.
inline std::vector<OracleRequest> load_requests(const json& workload, double dt) {
  std::vector<OracleRequest> reqs;
  for (const json& j : workload["requests"]) {
    OracleRequest r;
    r.name = j["id"].get<std::string>();
    r.prompt_len = j["prompt_len"].get<int32_t>();
    r.max_tokens = j["max_tokens"].get<int32_t>();
    r.priority = j.value("priority", 0);
    r.lora = j.value("lora", uint16_t(0));
    r.listing = reqs.size();
    r.spec = j;
    set_arrival(r, dt);
    reqs.push_back(std::move(r));
  }
  std::stable_sort(reqs.begin(), reqs.end(), [](const OracleRequest& a, const OracleRequest& b) {
    if (a.arrival_step != b.arrival_step) return a.arrival_step < b.arrival_step;
    return a.arrival_time < b.arrival_time;
  });
  return reqs;
}

// What both drivers' configs hold (run_v0.py's and run_v1.py's DEFAULTS differ: the caller sets
// them before read_driver_config).
struct DriverConfig {
  int block_size = 16;
  int64_t num_gpu_blocks = 1000;
  int64_t max_num_batched_tokens = 2048;
  int64_t max_num_seqs = 128;
  int64_t max_model_len = 4096;
  int64_t long_prefill_token_threshold = 0;
  bool enable_prefix_caching = false;
  bool enable_chunked_prefill = true;
  std::string policy = "fcfs";
  double step_duration_s = 0;  // 0: none
  int max_steps = 200;
};

// J's values over C's defaults.
inline void read_driver_config(const json& j, DriverConfig& c) {
  c.block_size = j.value("block_size", c.block_size);
  c.num_gpu_blocks = j.value("num_gpu_blocks", c.num_gpu_blocks);
  c.max_num_batched_tokens = j.value("max_num_batched_tokens", c.max_num_batched_tokens);
  c.max_num_seqs = j.value("max_num_seqs", c.max_num_seqs);
  c.max_model_len = j.value("max_model_len", c.max_model_len);
  c.long_prefill_token_threshold =
      j.value("long_prefill_token_threshold", c.long_prefill_token_threshold);
  c.enable_prefix_caching = j.value("enable_prefix_caching", c.enable_prefix_caching);
  c.enable_chunked_prefill = j.value("enable_chunked_prefill", c.enable_chunked_prefill);
  c.policy = j.value("policy", c.policy);
  if (j.contains("step_duration_s") && !j["step_duration_s"].is_null()) {
    c.step_duration_s = j["step_duration_s"].get<double>();
  }
  c.max_steps = j.value("max_steps", c.max_steps);
}

// Each request's preemptions so far.
inline std::vector<int32_t> preemption_counts(const Scheduler& s, size_t n) {
  std::vector<int32_t> counts(n);
  for (size_t id = 0; id < n; ++id)
    counts[id] = s.seq(uint32_t(id)).preemptions;
  return counts;
}

// The names of the requests preempted since BEFORE (preemption_counts), sorted as the drivers
// sort them.
inline std::vector<std::string> preempted_since(const Scheduler& s,
                                                const std::vector<int32_t>& before,
                                                const std::vector<OracleRequest>& reqs) {
  std::vector<std::string> names;
  for (size_t id = 0; id < reqs.size(); ++id) {
    if (s.seq(uint32_t(id)).preemptions > before[id]) names.push_back(reqs[id].name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Q's requests by name, in order.
inline json queue_names(const RequestQueue& q, const std::vector<OracleRequest>& reqs) {
  json names = json::array();
  for (size_t i = 0; i < q.size(); ++i)
    names.push_back(reqs[q[i]].name);
  return names;
}

// The finished requests of a step as the drivers record them.
inline json finished_json(const std::vector<uint32_t>& ids, const Scheduler& s,
                          const std::vector<OracleRequest>& reqs) {
  json fin = json::array();
  for (uint32_t id : ids)
    fin.push_back({{"id", reqs[id].name}, {"num_output_tokens", s.seq(id).generated}});
  return fin;
}

// The driver's arrivals before step STEP's schedule(): every request from NEXT on whose arrival
// step has come is added to S (vLLM's add_request, with its priority, arrival time and LoRA
// adapter); returns
// their names, and records those servesim rejects in REJECTED.
inline json arrive(Scheduler& s, const std::vector<OracleRequest>& reqs, size_t& next, int step,
                   std::vector<std::string>& rejected) {
  json arrived = json::array();
  for (; next < reqs.size() && reqs[next].arrival_step <= step; ++next) {
    const OracleRequest& r = reqs[next];
    const RejectReason why = s.add_request(uint32_t(next), r.prompt_len, r.max_tokens, r.priority,
                                           r.arrival_time, /*external_tokens=*/0, r.lora);
    arrived.push_back(r.name);
    if (why != RejectReason::kNone) {
      rejected.push_back(r.name + " (servesim rejects it: " + reason_code(why) + ")");
    }
  }
  return arrived;
}

// The record's finished requests with the fields servesim reproduces.
inline json comparable_finished(const json& rec) {
  json fin = json::array();
  for (const json& f : rec.value("finished", json::array()))
    fin.push_back({{"id", f["id"]}, {"num_output_tokens", f["num_output_tokens"]}});
  return fin;
}

// The scenario folders under ROOT (those with a config.json), sorted.
inline std::vector<fs::path> case_dirs(const fs::path& root) {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && fs::exists(e.path() / "config.json")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// A step's per-request entries (finished requests, outputs) sorted by request name.
inline json sorted_by_id(json entries) {
  std::sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
    return a["id"].get<std::string>() < b["id"].get<std::string>();
  });
  return entries;
}

inline json sorted_finished(json fin) {
  return sorted_by_id(std::move(fin));
}

// The first difference between the oracle's steps and servesim's, or "" when they agree.
// COMPARABLE: the fields of a vLLM record that servesim reproduces, in servesim's form.
inline std::string first_difference(const std::vector<json>& expected, const std::vector<json>& got,
                                    const std::function<json(const json&)>& comparable) {
  const size_t n = std::min(expected.size(), got.size());
  for (size_t i = 0; i < n; ++i) {
    json e = comparable(expected[i]), g = got[i];
    if (e.contains("finished")) e["finished"] = sorted_finished(e["finished"]);
    if (g.contains("finished")) g["finished"] = sorted_finished(g["finished"]);
    if (e == g) continue;
    std::ostringstream msg;
    msg << "step " << i << ":";
    for (const auto& [key, value] : e.items()) {
      if (!g.contains(key)) {
        msg << "\n  " << key << ": vLLM " << value.dump() << ", servesim (absent)";
      } else if (g[key] != value) {
        msg << "\n  " << key << ": vLLM " << value.dump() << ", servesim " << g[key].dump();
      }
    }
    for (const auto& [key, value] : g.items()) {
      if (!e.contains(key)) msg << "\n  " << key << ": vLLM (absent), servesim " << value.dump();
    }
    msg << "\n  vLLM step:     " << e.dump() << "\n  servesim step: " << g.dump();
    return msg.str();
  }
  if (expected.size() != got.size()) {
    std::ostringstream msg;
    msg << "vLLM ran " << expected.size() << " steps, servesim " << got.size();
    if (got.size() > n) msg << "; servesim's step " << n << ": " << got[n].dump();
    if (expected.size() > n) msg << "; vLLM's step " << n << ": " << comparable(expected[n]).dump();
    return msg.str();
  }
  return "";
}

}  // namespace servesim::test::oracle
