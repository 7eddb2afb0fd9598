#include "analysis/validate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "analysis/vllm_args.hpp"
#include "models/model.hpp"
#include "traces/datasets.hpp"
#include "util/csv_file.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/lookup.hpp"
#include "util/parallel.hpp"
#include "util/stats.hpp"
#include "util/text_input.hpp"

namespace servesim {

namespace {

// The latencies a row carries: the metric's name (its CSV column adds "_ms") and its field.
struct LatencyField {
  const char* name;
  double LatencyFigures::*member;
};
constexpr LatencyField kLatencyFields[] = {
    {"ttft_mean", &LatencyFigures::ttft_mean}, {"ttft_p90", &LatencyFigures::ttft_p90},
    {"ttft_p99", &LatencyFigures::ttft_p99},   {"tpot_mean", &LatencyFigures::tpot_mean},
    {"e2e_mean", &LatencyFigures::e2e_mean},   {"e2e_p90", &LatencyFigures::e2e_p90},
    {"e2e_p99", &LatencyFigures::e2e_p99}};

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
  for (const LatencyField& m : kLatencyFields)
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
        throw Error(path, f.line(), std::string(kLatencyFields[i].name) + "_ms",
                    "must be empty or in [1e-6, 1e9) ms");
      }
      r.measured.*kLatencyFields[i].member = v;
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

namespace {

struct Experiment {
  std::vector<size_t> rows;    // indices into the rows, summary row included
  std::vector<size_t> stages;  // stage rows, by stage number
};

// Requests that had arrived by T and not yet started.
int64_t waiting_at(const std::vector<RequestRecord>& requests, double t) {
  int64_t n = 0;
  for (const RequestRecord& r : requests) {
    if (r.arrival_s <= t && (r.first_scheduled_s < 0 || r.first_scheduled_s > t)) ++n;
  }
  return n;
}

// Requests that had arrived by T and had neither finished nor been rejected.
int64_t in_system_at(const std::vector<RequestRecord>& requests, double t) {
  int64_t n = 0;
  for (const RequestRecord& r : requests) {
    if (r.arrival_s > t || r.status == SeqStatus::kRejected) continue;
    n += !(r.finished() && r.last_token_s <= t);
  }
  return n;
}

// Whether the replica fell behind the requests arriving in [FROM, TO): sim/metrics.hpp's
// Overload rule (ArrivalCounts), on the stage's own arrivals, counted from the records.
bool diverged(const std::vector<RequestRecord>& requests, double from, double to) {
  std::vector<double> arrivals;
  for (const RequestRecord& r : requests) {
    if (r.arrival_s >= from && r.arrival_s < to) arrivals.push_back(r.arrival_s);
  }
  if (arrivals.size() < 2) return false;
  std::sort(arrivals.begin(), arrivals.end());
  const size_t median = (arrivals.size() + 1) / 2;  // arrivals up to the median one
  const double t_median = arrivals[median - 1], t_last = arrivals.back();
  ArrivalCounts c;
  c.span_s = t_last - arrivals.front();
  c.late_arrivals = int64_t(arrivals.size() - median);
  c.in_system_at_median = in_system_at(requests, t_median);
  c.in_system_at_last = in_system_at(requests, t_last);
  c.waiting_at_median = waiting_at(requests, t_median);
  c.waiting_at_last = waiting_at(requests, t_last);
  c.admitted = double(arrivals.size());
  return c.overloaded();
}

// What the requests arriving in [FROM, TO) measure, as the study reports it.
void measure(const RunResult& run, double from, double to, ValidateRow& row) {
  std::vector<double> ttft, e2e;
  double output = 0;
  for (const RequestRecord& r : run.requests) {
    if (r.arrival_s < from || r.arrival_s >= to) continue;
    ++row.requests;
    if (!r.finished()) {
      ++row.rejected;
      continue;
    }
    ttft.push_back(r.ttft_s() * 1e3);
    e2e.push_back(r.e2e_s() * 1e3);
    output += r.output_tokens;
  }
  if (ttft.empty()) return;
  const Stats t = summarize(ttft), e = summarize(e2e);
  LatencyFigures& p = row.predicted;
  p.ttft_mean = t.mean;
  p.ttft_p90 = t.p90;
  p.ttft_p99 = t.p99;
  p.e2e_mean = e.mean;
  p.e2e_p90 = e.p90;
  p.e2e_p99 = e.p99;
  const double mean_output = output / double(ttft.size());
  // The study's TPOT: (E2E mean - TTFT mean) / (mean output - 1).
  if (mean_output > 1) p.tpot_mean = (e.mean - t.mean) / (mean_output - 1);
}

}  // namespace

int64_t implied_output_tokens(const GroundTruthRow& r) {
  const LatencyFigures& m = r.measured;
  const double out = (m.e2e_mean - m.ttft_mean) / m.tpot_mean + 1;
  if (!(std::isfinite(out) && out >= 1)) return 0;
  return std::min<int64_t>(std::llround(out), r.output_tokens);
}

namespace {

// Output tokens each request of experiment X generates: what its summary row implies (the
// models stop before max_tokens at times), else the max_tokens asked for.
int64_t replayed_output_tokens(const std::vector<GroundTruthRow>& rows, const Experiment& x) {
  for (const size_t i : x.rows) {
    if (rows[i].stage < 0 && implied_output_tokens(rows[i]) > 0) {
      return implied_output_tokens(rows[i]);
    }
  }
  return rows[x.stages.front()].output_tokens;
}

// Why servesim cannot model row R's server ("" when it can).
std::string unsupported(const GroundTruthRow& r) {
  if (!r.chunked_prefill)
    return "chunked prefill off is not a vLLM V1 configuration servesim models";
  return "";
}

// The model INI files of a --model-dir (its .ini files, in name order), read once: a bad one is
// an error naming its line, not a skipped row.
using ModelFiles = std::vector<std::pair<std::string, ModelSpec>>;
ModelFiles load_model_dir(const std::string& dir) {
  ModelFiles models;
  if (dir.empty()) return models;
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".ini") files.push_back(e.path().string());
  }
  if (ec) throw Error(dir, 0, "model-dir", "cannot read the directory: " + ec.message());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files)
    models.emplace_back(f, load_model_file(f));
  return models;
}

// The file of MODELS whose hf_id is ID, exactly or as the catalogue maps fine-tunes; "" when none.
std::string model_file_for(const ModelFiles& models, const std::string& id) {
  std::string fine_tune;
  for (const auto& [file, m] : models) {
    if (m.hf_id.empty()) continue;
    if (lowercase(m.hf_id) == lowercase(id)) return file;
    if (fine_tune.empty() && same_architecture_id(m.hf_id, id)) fine_tune = file;
  }
  return fine_tune;
}

// The base's calibration files that apply to GPU: those whose hardware keys are another GPU's
// are left out for this row (they apply to the rows of their own GPU).
std::string calibrations_for(const std::string& files, const GpuSpec& gpu, Inputs& inputs) {
  std::string kept;
  std::istringstream in(files);
  for (std::string path; std::getline(in, path, ',');) {
    if (!path.empty() && inputs.calibration(path)->applies_to(gpu)) {
      kept += (kept.empty() ? "" : ",") + path;
    }
  }
  return kept;
}

// The RunSpec of experiment row R: the base's cost model and seed, the row's server.
RunSpec experiment_spec(const GroundTruthRow& r, const ValidateOptions& o, const std::string& gpu) {
  const RunSpec& base = o.base;
  RunSpec s = base;
  s.model = r.model;
  s.gpu = gpu;
  s.tensor_parallel_size = r.tp;
  s.tp.forget();
  s.gpu_memory_utilization = r.gpu_memory_utilization;
  s.max_model_len = r.max_model_len;
  s.max_num_seqs = r.max_num_seqs;
  s.scheduler = "vllm-v1:" + std::to_string(r.max_num_batched_tokens);
  s.enable_prefix_caching = r.prefix_caching;
  s.no_enable_prefix_caching.forget();
  if (r.cpu_kv_offload) {
    s.kv_offloading_size =
        std::isnan(r.kv_offloading_size_gib) ? o.kv_offloading_size_gib : r.kv_offloading_size_gib;
  }
  return s;
}

void simulate_experiment(const std::vector<GroundTruthRow>& rows, const Experiment& x,
                         const ValidateOptions& options, const ModelFiles& models,
                         std::vector<ValidateRow>& out) {
  const GroundTruthRow& first = rows[x.stages.front()];
  std::string reason;
  const std::string gpu = ground_truth_gpu(first.gpu, reason);
  if (gpu.empty() || !unsupported(first).empty()) {
    for (const size_t i : x.rows)
      out[i].skipped = gpu.empty() ? reason : unsupported(first);
    return;
  }
  try {
    RunSpec spec = experiment_spec(first, options, gpu);
    Inputs inputs;
    spec.model_file = model_file_for(models, first.model);
    if (!spec.model_file.empty()) spec.model.forget();  // the row's model, read from its file
    spec.calibration = calibrations_for(spec.calibration, find_gpu(gpu), inputs);
    if (options.use_measured_kv && first.vllm_kv_blocks > 0) {
      spec.num_gpu_blocks = first.vllm_kv_blocks;
    }
    check_flags(spec);
    const SimConfig config =
        policy_config(base_config(spec, inputs), spec, parse_scheduler(spec.scheduler));
    SharedPrefixOptions w;
    w.num_groups = first.prompt_groups;
    w.users_per_group = first.users_per_group;
    w.system_prompt_len = first.system_prompt_tokens;
    w.question_len = first.question_tokens;
    w.output_len = replayed_output_tokens(rows, x);
    w.seed = uint64_t(*options.base.seed);
    w.stages.clear();
    for (const size_t i : x.stages)
      w.stages.push_back({rows[i].rate_req_s, rows[i].duration_s});
    const Workload requests = generate_shared_prefix(w);
    const RunResult run = simulate(config, requests);
    double start = 0;
    bool any_overloaded = false;
    for (const size_t i : x.stages) {
      measure(run, start, start + rows[i].duration_s, out[i]);
      out[i].overloaded = diverged(run.requests, start, start + rows[i].duration_s);
      any_overloaded |= out[i].overloaded;
      start += rows[i].duration_s;
    }
    const Regime regime = regime_of(run);
    for (const size_t i : x.rows) {
      out[i].regime = regime;
      out[i].approximations = approximated_args(run.config);
      out[i].intervals = prediction_intervals(regime, options.interval_level);
      out[i].predicted_kv_blocks = run.memory.num_gpu_blocks;
      if (rows[i].stage < 0) {
        measure(run, 0, INFINITY, out[i]);
        out[i].overloaded = any_overloaded;
      }
    }
  } catch (const Error& e) {
    std::string why = e.what();
    why = why.substr(0, why.find(" (known: "));  // the catalogue's list is for the command line
    for (const size_t i : x.rows)
      out[i].skipped = why;
  }
}

}  // namespace

std::vector<ValidateRow> validate_ground_truth(const std::vector<GroundTruthRow>& rows,
                                               const ValidateOptions& options) {
  std::vector<ValidateRow> out(rows.size());
  std::vector<std::string> names;
  std::map<std::string, Experiment> experiments;
  for (size_t i = 0; i < rows.size(); ++i) {
    out[i].truth = rows[i];
    const std::string& name = rows[i].experiment;
    if (!options.filter.empty() && name.find(options.filter) == std::string::npos) continue;
    if (!experiments.count(name)) names.push_back(name);
    Experiment& x = experiments[name];
    x.rows.push_back(i);
    if (rows[i].stage >= 0) {
      if (x.stages.size() <= size_t(rows[i].stage)) x.stages.resize(size_t(rows[i].stage) + 1);
      x.stages[size_t(rows[i].stage)] = i;
    }
  }
  if (names.empty()) throw Error("experiment", "no experiment matches '" + options.filter + "'");
  if (!options.model_dir.empty() && !std::filesystem::is_directory(options.model_dir)) {
    throw Error(options.model_dir, 0, "model-dir", "cannot read the directory: not a directory");
  }
  const ModelFiles models = load_model_dir(options.model_dir);
  parallel_for(
      names.size(), options.jobs, "experiments",
      [&](size_t k) { simulate_experiment(rows, experiments.at(names[k]), options, models, out); },
      [](size_t) {});
  // Rows of experiments left out by the filter are dropped.
  std::vector<ValidateRow> kept;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (experiments.count(rows[i].experiment)) kept.push_back(std::move(out[i]));
  }
  return kept;
}

const std::vector<std::string>& validate_metrics() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> names;
    for (const LatencyField& f : kLatencyFields)
      names.emplace_back(f.name);
    names.emplace_back("kv_blocks");
    return names;
  }();
  return m;
}

namespace {

// (predicted, measured) of METRIC in ROW.
std::pair<double, double> metric_pair(const ValidateRow& row, const std::string& metric) {
  if (metric == "kv_blocks") {
    return {row.predicted_kv_blocks > 0 ? double(row.predicted_kv_blocks) : NAN,
            row.truth.vllm_kv_blocks > 0 ? double(row.truth.vllm_kv_blocks) : NAN};
  }
  for (const LatencyField& f : kLatencyFields) {
    if (metric == f.name) return {row.predicted.*f.member, row.truth.measured.*f.member};
  }
  throw Error("metric", "unknown metric '" + metric + "'");
}

std::string row_name(const GroundTruthRow& r) {
  return r.experiment + (r.stage < 0 ? "" : " stage " + std::to_string(r.stage));
}

}  // namespace

ErrorSummary summarize_errors(const std::vector<ValidateRow>& rows, const std::string& metric,
                              bool summary_rows) {
  ErrorSummary s;
  std::vector<double> ape;
  for (const ValidateRow& row : rows) {
    if ((row.truth.stage < 0) != summary_rows) continue;
    const auto [p, m] = metric_pair(row, metric);
    const double e = std::fabs(percent_error(p, m));
    if (std::isnan(e)) continue;
    ape.push_back(e);
    if (!(e <= s.worst_ape)) {
      s.worst_ape = e;
      s.worst = row_name(row.truth);
    }
  }
  s.rows = ape.size();
  if (ape.empty()) return s;
  const Stats st = summarize(ape);
  s.median_ape = st.p50;
  s.mape = st.mean;
  return s;
}

IntervalCoverage interval_coverage(const std::vector<ValidateRow>& rows, IntervalMetric m) {
  IntervalCoverage c;
  std::vector<double> factors;
  for (const ValidateRow& row : rows) {
    if (!row.skipped.empty() || row.truth.stage < 0 || row.intervals.level == 0) continue;
    const auto [p, meas] = metric_pair(row, interval_metric_name(m));
    if (std::isnan(p) || std::isnan(meas)) continue;
    ++c.rows;
    c.inside += meas >= row.intervals.lo(m, p) && meas <= row.intervals.hi(m, p);
    factors.push_back(row.intervals.factor[size_t(m)]);
  }
  if (!factors.empty()) c.median_factor = summarize(factors).p50;
  return c;
}

void print_interval_coverage(std::ostream& out, const std::vector<ValidateRow>& rows) {
  double level = 0;
  std::set<std::string> extrapolated;
  for (const ValidateRow& row : rows) {
    level = std::max(level, row.intervals.level);
    if (!row.intervals.extrapolated.empty()) extrapolated.insert(row.truth.experiment);
  }
  if (level == 0) return;
  out << format(
      "\n%.0f%% prediction intervals (held-out error on %zu real vLLM stage rows; --interval): "
      "measured figures inside, of the stage rows, and the median interval [point / f, point x "
      "f]\n",
      level * 100, prediction_intervals(Regime{}, level).calibration_rows);
  for (int k = 0; k < kNumIntervalMetrics; ++k) {
    const IntervalCoverage c = interval_coverage(rows, IntervalMetric(k));
    out << format("  %-10s %3zu of %3zu inside (%5.1f%%), median f %.3f\n",
                  interval_metric_name(IntervalMetric(k)), c.inside, c.rows,
                  c.rows ? 100.0 * double(c.inside) / double(c.rows) : NAN, c.median_factor);
  }
  if (!extrapolated.empty()) {
    std::string names;
    for (const std::string& n : extrapolated)
      names += (names.empty() ? "" : ", ") + n;
    out << "  outside the fitted range (the widest interval): " << names << "\n";
  }
}

void print_validation(std::ostream& out, const std::vector<ValidateRow>& rows) {
  out << format("%-44s %5s  %-23s %-23s %-25s %-25s %s\n", "experiment", "stage",
                "TTFT mean ms meas/pred", "TPOT mean ms meas/pred", "E2E mean ms meas/pred",
                "E2E p99 ms meas/pred", "KV blocks meas/pred");
  const auto cell = [](double m, double p, const char* fmt) {
    const double e = percent_error(p, m);
    const std::string v = format(fmt, m, p);
    return std::isnan(e) ? v : v + format(" %+4.0f%%", e);
  };
  for (const ValidateRow& row : rows) {
    const GroundTruthRow& t = row.truth;
    const std::string stage = t.stage < 0 ? "all" : std::to_string(t.stage);
    std::string name = t.experiment.size() > 44 ? t.experiment.substr(0, 43) + "~" : t.experiment;
    if (!row.skipped.empty()) {
      out << format("%-44s %5s  skipped: %s\n", name.c_str(), stage.c_str(), row.skipped.c_str());
      continue;
    }
    const LatencyFigures &m = t.measured, &p = row.predicted;
    out << format(
        "%-44s %5s  %-23s %-23s %-25s %-25s %s%s\n", name.c_str(), stage.c_str(),
        cell(m.ttft_mean, p.ttft_mean, "%.1f/%.1f").c_str(),
        cell(m.tpot_mean, p.tpot_mean, "%.2f/%.2f").c_str(),
        cell(m.e2e_mean, p.e2e_mean, "%.0f/%.0f").c_str(),
        cell(m.e2e_p99, p.e2e_p99, "%.0f/%.0f").c_str(),
        cell(double(t.vllm_kv_blocks), double(row.predicted_kv_blocks), "%.0f/%.0f").c_str(),
        row.overloaded ? "  OVERLOADED" : "");
  }
  out << "\nabsolute percentage error      stage rows: median  mean   worst       experiments: "
         "median  mean   worst (experiment)\n";
  for (const std::string& metric : validate_metrics()) {
    const ErrorSummary st = summarize_errors(rows, metric, false);
    const ErrorSummary ex = summarize_errors(rows, metric, true);
    if (st.rows == 0 && ex.rows == 0) {
      // Issue 44: "nan%" for a metric nothing measured (no experiments predicted, or a file
      // without the vllm_kv_blocks column).
      out << format("  %-10s no measured figures to compare\n", metric.c_str());
      continue;
    }
    // A side with no rows (no summary rows in the file, say) prints dashes, not "nan%".
    const auto errors = [](const ErrorSummary& e, const char* layout) {
      return e.rows == 0
                 ? format(layout, "-", "-", "-")
                 : format(layout, format("%.1f%%", e.median_ape).c_str(),
                          format("%.1f%%", e.mape).c_str(), format("%.1f%%", e.worst_ape).c_str());
    };
    out << format("  %-10s %2zu stage rows %s   %2zu experiments %s%s\n", metric.c_str(), st.rows,
                  errors(st, "%20s %6s %7s").c_str(), ex.rows, errors(ex, "%7s %6s %7s").c_str(),
                  ex.rows == 0 ? "" : (" (" + ex.worst + ")").c_str());
  }
  print_interval_coverage(out, rows);
  std::map<std::string, std::vector<std::string>> leans;  // approximation -> experiments
  for (const ValidateRow& row : rows) {
    if (row.truth.stage >= 0) continue;
    for (const std::string& a : row.approximations)
      leans[a].push_back(row.truth.experiment);
  }
  for (const auto& [what, names] : leans) {
    std::string list;
    for (const std::string& n : names)
      list += (list.empty() ? "" : ", ") + n;
    out << "approximated (servesim list vllm-args): " << what << ": " << list << "\n";
  }
  // Per experiment: predicted or skipped, and overloaded in any stage.
  std::vector<std::string> names;
  std::map<std::string, std::pair<bool, bool>> state;  // (skipped, overloaded)
  for (const ValidateRow& row : rows) {
    if (!state.count(row.truth.experiment)) names.push_back(row.truth.experiment);
    auto& [skipped, overloaded] = state[row.truth.experiment];
    skipped = !row.skipped.empty();
    overloaded = overloaded || row.overloaded;
  }
  std::string overloaded;
  size_t predicted = 0, n_overloaded = 0;
  for (const std::string& name : names) {
    if (state[name].first) continue;
    ++predicted;
    if (state[name].second) {
      ++n_overloaded;
      overloaded += (overloaded.empty() ? "" : ", ") + name;
    }
  }
  out << format("\n%zu experiments predicted, %zu skipped; predicted overloaded: %zu%s\n",
                predicted, names.size() - predicted, n_overloaded,
                n_overloaded ? (" (" + overloaded + ")").c_str() : "");
}

void write_validation_csv(const std::string& path, const std::vector<ValidateRow>& rows) {
  std::ostringstream f;
  f << "experiment,stage,requests,rejected";
  for (const std::string& metric : validate_metrics())
    f << ',' << metric << "_measured," << metric << "_predicted," << metric << "_error_pct";
  f << ",overloaded,skipped,decode_batch,context_tokens,interval_level";
  for (int m = 0; m < kNumIntervalMetrics; ++m) {
    const char* name = interval_metric_name(IntervalMetric(m));
    f << ',' << name << "_lo," << name << "_hi";
  }
  f << ",extrapolated\n";
  for (const ValidateRow& row : rows) {
    f << csv_field(row.truth.experiment) << ','
      << (row.truth.stage < 0 ? "all" : std::to_string(row.truth.stage)) << ',' << row.requests
      << ',' << row.rejected;
    for (const std::string& metric : validate_metrics()) {
      const auto [p, m] = metric_pair(row, metric);
      f << format(",%.6g,%.6g,%.3f", m, p, percent_error(p, m));
    }
    f << ',' << (row.overloaded ? 1 : 0) << ',' << csv_field(row.skipped);
    f << format(",%.6g,%.6g,%g", row.regime.decode_batch, row.regime.context_tokens,
                row.intervals.level);
    for (int m = 0; m < kNumIntervalMetrics; ++m) {
      const double p = metric_pair(row, interval_metric_name(IntervalMetric(m))).first;
      f << format(",%.6g,%.6g", row.intervals.lo(IntervalMetric(m), p),
                  row.intervals.hi(IntervalMetric(m), p));
    }
    std::string why;
    for (const std::string& w : row.intervals.extrapolated)
      why += (why.empty() ? "" : "; ") + w;
    f << ',' << csv_field(why) << '\n';
  }
  write_text_file(path, f.str());
}

}  // namespace servesim
