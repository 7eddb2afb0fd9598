// Replaying ground-truth rows and comparing them with what servesim predicts (validate.hpp):
// the simulation of each experiment, the error summaries and the reports; reading the CSV is
// validate_read.cpp's.
#include "analysis/validate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "analysis/validate_internal.hpp"
#include "analysis/vllm_args.hpp"
#include "models/model.hpp"
#include "traces/datasets.hpp"
#include "util/csv_file.hpp"
#include "util/error.hpp"
#include "util/field_path.hpp"
#include "util/format.hpp"
#include "util/lookup.hpp"
#include "util/parallel.hpp"
#include "util/stats.hpp"
#include "util/text_input.hpp"

namespace servesim {

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
  if (names.empty())
    throw Error(field::kExperiment, "no experiment matches '" + options.filter + "'");
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
    for (const validate_detail::LatencyField& f : validate_detail::kLatencyFields)
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
  for (const validate_detail::LatencyField& f : validate_detail::kLatencyFields) {
    if (metric == f.name) return {row.predicted.*f.member, row.truth.measured.*f.member};
  }
  throw Error(field::kValidateMetric, "unknown metric '" + metric + "'");
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