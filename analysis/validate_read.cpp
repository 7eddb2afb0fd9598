// Reading a ground-truth CSV (validate.hpp: read_ground_truth) and the small helpers its rows
// need (ground_truth_gpu, percent_error); replaying the rows is validate.cpp's.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/validate.hpp"
#include "analysis/validate_internal.hpp"
#include "models/gpu.hpp"
#include "util/csv_file.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/lookup.hpp"
#include "util/text_input.hpp"

namespace servesim {

namespace {

// NaN for an empty field, else the number.
double optional_number(const CsvFile& f, int c) {
  return c < 0 || trim(f.text(c)).empty() ? NAN : f.number(c);
}

bool on_off(const CsvFile& f, int c, bool missing) {
  if (c < 0) return missing;
  const std::string v = lowercase(std::string(trim(f.text(c))));
  if (v.empty()) return missing;
  if (v == "on" || v == "true" || v == "1" || v == "yes") return true;
  if (v == "off" || v == "false" || v == "0" || v == "no") return false;
  throw Error(f.path(), f.line(), f.name(c), "expected on or off, got '" + v.substr(0, 40) + "'");
}

// The configuration every row of one experiment must share.
std::string configuration(const GroundTruthRow& r) {
  return format(
      "%s|%s|%d|%lld|%lld|%lld|%lld|%lld|%lld|%lld|%lld|%lld|%d|%d|%.6g|%d|%.6g", r.gpu.c_str(),
      r.model.c_str(), r.tp, (long long)r.system_prompt_tokens, (long long)r.question_tokens,
      (long long)r.output_tokens, (long long)r.prompt_groups, (long long)r.users_per_group,
      (long long)r.max_num_batched_tokens, (long long)r.max_num_seqs, (long long)r.max_model_len,
      (long long)r.vllm_kv_blocks, int(r.prefix_caching), int(r.chunked_prefill),
      r.gpu_memory_utilization, int(r.cpu_kv_offload), r.kv_offloading_size_gib);
}

}  // namespace

std::vector<GroundTruthRow> read_ground_truth(const std::string& path) {
  CsvFile f(path);
  const int c_experiment = f.col("experiment"), c_stage = f.col("stage"), c_gpu = f.col("gpu"),
            c_tp = f.col("tp"), c_model = f.col("model"), c_workload = f.col("workload", false),
            c_sys = f.col("system_prompt_tokens"), c_question = f.col("question_tokens"),
            c_output = f.col("output_tokens"), c_groups = f.col("prompt_groups"),
            c_users = f.col("users_per_group"), c_rate = f.col("rate_req_s"),
            c_duration = f.col("duration_s"), c_budget = f.col("max_num_batched_tokens"),
            c_seqs = f.col("max_num_seqs"), c_len = f.col("max_model_len"),
            c_blocks = f.col("vllm_kv_blocks", false), c_prefix = f.col("prefix_caching", false),
            c_chunked = f.col("chunked_prefill", false), c_offload = f.col("cpu_kv_offload", false),
            c_offload_gib = f.col("kv_offloading_size_gib", false),
            c_util = f.col("gpu_memory_utilization", false);
  std::vector<int> c_metrics;
  for (const validate_detail::LatencyField& m : validate_detail::kLatencyFields)
    c_metrics.push_back(f.col(std::string(m.name) + "_ms"));

  std::vector<GroundTruthRow> rows;
  std::map<std::string, std::string> config_of;  // experiment -> its configuration
  std::map<std::string, std::vector<int>> stages_of;
  std::map<std::string, double> duration_of;  // the stages' seconds so far
  while (f.next()) {
    GroundTruthRow r;
    r.line = f.line();
    r.experiment = std::string(trim(f.text(c_experiment)));
    if (r.experiment.empty()) throw Error(path, f.line(), "experiment", "must not be empty");
    const std::string stage(trim(f.text(c_stage)));
    r.stage = stage == "all" ? -1 : int(f.integer(c_stage, 0, 1000));
    r.gpu = std::string(trim(f.text(c_gpu)));
    r.model = std::string(trim(f.text(c_model)));
    if (c_workload >= 0) r.workload = std::string(trim(f.text(c_workload)));
    r.tp = int(f.integer(c_tp, 1, 64));
    r.system_prompt_tokens = f.integer(c_sys, 0, 1'000'000);
    r.question_tokens = f.integer(c_question, 0, 1'000'000);
    r.output_tokens = f.integer(c_output, 1, 1'000'000);
    r.prompt_groups = f.integer(c_groups, 1, 1'000'000);
    r.users_per_group = f.integer(c_users, 1, 1'000'000);
    if (r.stage >= 0) {
      r.rate_req_s = f.bounded(c_rate, 1e-6, 1e6, "req/s");
      r.duration_s = f.bounded(c_duration, 1e-3, 1e7, "s");
      if (r.rate_req_s > 1e6 || r.duration_s > 1e7 || r.rate_req_s * r.duration_s > 1e7) {
        throw Error(path, f.line(), "rate_req_s",
                    "rate x duration must be at most 10,000,000 requests (rate <= 1e6 req/s, "
                    "duration <= 1e7 s)");
      }
    }
    r.max_num_batched_tokens = f.integer(c_budget, 1, 1 << 24);
    r.max_num_seqs = f.integer(c_seqs, 1, 1 << 20);
    r.max_model_len = f.integer(c_len, 1, 1 << 30);
    if (c_blocks >= 0 && !trim(f.text(c_blocks)).empty()) {
      r.vllm_kv_blocks = f.integer(c_blocks, 1, int64_t(1) << 40);
    }
    r.prefix_caching = on_off(f, c_prefix, true);
    r.chunked_prefill = on_off(f, c_chunked, true);
    r.cpu_kv_offload = on_off(f, c_offload, false);
    r.kv_offloading_size_gib = optional_number(f, c_offload_gib);
    if (!std::isnan(r.kv_offloading_size_gib) &&
        !(r.kv_offloading_size_gib > 0 && r.kv_offloading_size_gib <= 1e6)) {
      throw Error(path, f.line(), "kv_offloading_size_gib", "must be empty or in (0, 1e6] GiB");
    }
    if (!std::isnan(r.kv_offloading_size_gib) && !r.cpu_kv_offload) {
      throw Error(path, f.line(), "kv_offloading_size_gib", "sizes a CPU tier: cpu_kv_offload off");
    }
    if (c_util >= 0 && !trim(f.text(c_util)).empty()) {
      r.gpu_memory_utilization = f.number(c_util);
      if (!(r.gpu_memory_utilization > 0 && r.gpu_memory_utilization <= 1)) {
        throw Error(path, f.line(), "gpu_memory_utilization", "must be in (0, 1]");
      }
    }
    for (size_t i = 0; i < c_metrics.size(); ++i) {
      const double v = optional_number(f, c_metrics[i]);
      if (!(std::isnan(v) || (v >= 1e-6 && v < 1e9))) {
        throw Error(path, f.line(), std::string(validate_detail::kLatencyFields[i].name) + "_ms",
                    "must be empty or in [1e-6, 1e9) ms");
      }
      r.measured.*validate_detail::kLatencyFields[i].member = v;
    }
    const std::string config = configuration(r);
    const auto [it, inserted] = config_of.emplace(r.experiment, config);
    if (!inserted && it->second != config) {
      throw Error(path, f.line(), "experiment",
                  "'" + r.experiment + "': its rows disagree on the server or workload");
    }
    if (r.stage >= 0) {
      std::vector<int>& stages = stages_of[r.experiment];
      if (std::find(stages.begin(), stages.end(), r.stage) != stages.end()) {
        throw Error(path, f.line(), "stage", "stage " + stage + " of '" + r.experiment + "' twice");
      }
      stages.push_back(r.stage);
      // The stages run back to back in one simulation: their durations add up, and the whole
      // must stay well within the simulated time servesim runs (a drain follows the last). 150
      // stages of 1e7 s each failed inside the simulation, naming no row (issue 44).
      double& total = duration_of[r.experiment];
      total += r.duration_s;
      if (total > kMaxSimTime_s / 10) {
        throw Error(path, f.line(), "duration_s",
                    format("the stages of '%s' add up to %g s by this row, past the %g s of "
                           "simulated time an experiment may take",
                           r.experiment.c_str(), total, kMaxSimTime_s / 10));
      }
    }
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw Error(path, 0, "", "no rows");
  for (const GroundTruthRow& r : rows) {
    std::vector<int> stages = stages_of[r.experiment];
    std::sort(stages.begin(), stages.end());
    if (stages.empty()) {
      throw Error(path, int(r.line), "stage", "'" + r.experiment + "' has no stage rows");
    }
    for (size_t i = 0; i < stages.size(); ++i) {
      if (stages[i] != int(i)) {
        throw Error(path, int(r.line), "stage",
                    "the stages of '" + r.experiment + "' must be numbered 0, 1, ...");
      }
    }
  }
  return rows;
}

std::string ground_truth_gpu(const std::string& gpu, std::string& reason) {
  try {
    return find_gpu(gpu).name;
  } catch (const Error&) {
    reason = "GPU '" + gpu + "' is not in the catalogue (servesim list gpus)";
    return "";
  }
}

double percent_error(double predicted, double measured) {
  if (!(std::isfinite(predicted) && std::isfinite(measured) && measured != 0)) return NAN;
  return (predicted - measured) / measured * 100.0;
}

}  // namespace servesim
