// `servesim validate`: replays measured runs of real vLLM servers and compares what servesim
// predicts with what was measured. The measurements come as a CSV in the format of
// ../shared/groundtruth/vllm-0.15.1-h100.csv: one row per load stage of an experiment (`stage`
// 0, 1, ...) and one summary row per experiment (`stage` = all), each with the server's
// configuration, the inference-perf shared_prefix workload that drove it, the KV blocks vLLM
// logged and the client-side latencies (TTFT, E2E: mean, p90, p99; TPOT mean, derived as
// (E2E mean - TTFT mean) / (mean output - 1)).
// Every request generates the mean output length the summary row's figures imply (see
// implied_output_tokens), or the max_tokens asked for when they do not say.
// Each experiment is simulated once, its stages back to back (stage 1 starts with stage 0's
// queue and prefix cache), and each row is compared on the requests that arrived in its stage
// (all of them for the summary row).
// Promises: bad input is an Error naming the file, line and field; rows servesim cannot model
// (a model or GPU it does not know, chunked prefill off) are kept, with the reason,
// and predict nothing; a prediction whose waiting queue grew through its stage is marked
// overloaded.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/intervals.hpp"
#include "analysis/run_spec.hpp"

namespace servesim {

// The latencies compared, in milliseconds (NaN: not measured or not predicted).
struct LatencyFigures {
  double ttft_mean = NAN, ttft_p90 = NAN, ttft_p99 = NAN, tpot_mean = NAN, e2e_mean = NAN,
         e2e_p90 = NAN, e2e_p99 = NAN;
};

// One row of a ground-truth CSV.
struct GroundTruthRow {
  int64_t line = 0;  // in the file
  std::string experiment, gpu, model, workload;
  int stage = -1;  // -1: the experiment's summary row (`all`)
  int tp = 1;
  int64_t system_prompt_tokens = 0, question_tokens = 0, output_tokens = 0, prompt_groups = 0,
          users_per_group = 0;
  double rate_req_s = NAN, duration_s = NAN;  // stage rows only
  int64_t max_num_batched_tokens = 0, max_num_seqs = 0, max_model_len = 0;
  int64_t vllm_kv_blocks = 0;  // 0 when not given
  bool prefix_caching = true, chunked_prefill = true, cpu_kv_offload = false;
  // The CPU tier's size, GiB, all GPUs (optional column kv_offloading_size_gib; NaN: not given,
  // ValidateOptions' size then).
  double kv_offloading_size_gib = NAN;
  double gpu_memory_utilization = 0.9;
  LatencyFigures measured;
};

// Reads PATH. Throws Error(path, line, field) on a missing column, a bad value, an experiment
// whose rows disagree on its configuration, or one without stage rows.
std::vector<GroundTruthRow> read_ground_truth(const std::string& path);

// The catalogue name of a ground-truth row's GPU, matched exactly as find_gpu matches it
// ("H100-80GB-SXM" is h100-sxm, "H100 NVL" h100-nvl, never the SXM part); "" with REASON when
// the catalogue has no such GPU.
std::string ground_truth_gpu(const std::string& gpu, std::string& reason);

struct ValidateOptions {
  RunSpec base;        // cost model, calibration files, seed; the rest comes from each row
  int jobs = 1;        // experiments simulated at once
  std::string filter;  // only experiments whose name contains this ("" = all)
  // Model INI files (--model-file's format) for models the catalogue lacks or that the user
  // describes otherwise: a row's model is the file whose hf_id it names (fine-tunes mapped as the
  // catalogue maps them), else the catalogue's.
  std::string model_dir;
  bool use_measured_kv = false;  // the KV blocks vLLM logged as the cache, where the row has them
  // The CPU KV tier of rows with cpu_kv_offload on that do not say its size, GiB: 8, as the
  // servers of the public BLIS sim-to-real study ran (--kv-offloading-size 8: vLLM's
  // OffloadingConnector with cpu_bytes_to_use 8589934592).
  double kv_offloading_size_gib = 8;
  // The prediction intervals' level (analysis/intervals.hpp; 0: none): validate reports how many
  // measured figures fall inside them.
  double interval_level = 0.9;
};

struct ValidateRow {
  GroundTruthRow truth;
  LatencyFigures predicted;
  int64_t predicted_kv_blocks = 0;
  int64_t requests = 0, rejected = 0;  // of the predicted stage
  // The waiting queue grew through the stage (the summary row: through any stage): a prediction
  // of a server that could not keep up, whatever the measurement says.
  bool overloaded = false;
  std::string skipped;  // why nothing was predicted ("" when predicted)
  // The run's load (the whole experiment's) and the intervals around its predictions.
  Regime regime;
  IntervalSet intervals;
  // The approximated vLLM behaviours the replay leans on (analysis/vllm_args.hpp).
  std::vector<std::string> approximations;
};

// The mean output length R's measurements imply, (E2E mean - TTFT mean) / TPOT mean + 1 (the
// study's TPOT definition inverted), rounded and at most the max_tokens asked for; 0 when R lacks
// them. Real servers stop some answers early (Llama-2-7B, a base model, averages 195 of 247).
int64_t implied_output_tokens(const GroundTruthRow& r);

// Percentage error of PREDICTED against MEASURED, (p - m) / m x 100; NaN when either is.
double percent_error(double predicted, double measured);

// Simulates every experiment of ROWS and fills in the predictions, in the rows' order.
std::vector<ValidateRow> validate_ground_truth(const std::vector<GroundTruthRow>& rows,
                                               const ValidateOptions& options);

// The errors of one metric over the rows that have it: median and mean absolute percentage
// error, and the worst row.
struct ErrorSummary {
  size_t rows = 0;
  double median_ape = NAN, mape = NAN, worst_ape = NAN;
  std::string worst;  // experiment (and stage) of the worst row
};
// METRIC: ttft_mean, ttft_p90, ttft_p99, tpot_mean, e2e_mean, e2e_p90, e2e_p99 or kv_blocks.
// SUMMARY_ROWS: the experiments' summary rows only (one per experiment), else the stage rows.
ErrorSummary summarize_errors(const std::vector<ValidateRow>& rows, const std::string& metric,
                              bool summary_rows);
const std::vector<std::string>& validate_metrics();

// How many stage rows' measured METRIC falls inside its prediction interval, and the median f.
struct IntervalCoverage {
  size_t rows = 0, inside = 0;
  double median_factor = NAN;
};
IntervalCoverage interval_coverage(const std::vector<ValidateRow>& rows, IntervalMetric m);
void print_interval_coverage(std::ostream& out, const std::vector<ValidateRow>& rows);

// The text report: a row per stage and per experiment, then each metric's errors and the
// experiments predicted overloaded.
void print_validation(std::ostream& out, const std::vector<ValidateRow>& rows);
// Every measured and predicted figure, a line per row.
void write_validation_csv(const std::string& path, const std::vector<ValidateRow>& rows);

}  // namespace servesim
