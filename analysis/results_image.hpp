// A results file's contents in memory, run by run: exactly what write_results_h5 stores
// (analysis/results.hpp has the layout), for a caller that wants the tables without a file in
// between (the Python module, python/module.cpp). The file is written from these images, so the
// two cannot disagree.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "analysis/windows.hpp"
#include "sim/simulation.hpp"

namespace servesim {

struct ResultsOptions {
  double period_s = 300;  // window length (CloudWatch's 5-minute period)
  bool steps = true;      // keep the per-step table
  // The workload's input by modality, one requests column each (ServeGen's multimodal clients);
  // null or empty: none.
  const InputParts* input_parts = nullptr;
  // The level of each run's summary's prediction_intervals (0: none; run --interval).
  double interval_level = 0.9;
};

struct NamedRun {
  std::string name;  // unique within the file
  const RunResult* run;
  const nlohmann::ordered_json* workload = nullptr;  // this run's, when not the file's
};

// One 1-D column: reals, counts, or the requests' status codes.
using ResultsColumn = std::variant<std::vector<double>, std::vector<int64_t>, std::vector<int8_t>>;

// A table: equal-length columns in the order they are written.
struct ResultsTable {
  std::vector<std::pair<std::string, ResultsColumn>> columns;
};

// One run's group.
struct RunImage {
  std::string name, label, policy;
  int64_t max_num_batched_tokens = 0;
  std::string summary_json, config_json;  // compact JSON text, as the file's attributes hold
  double baseline_otps = 0;  // its whole-log p50 OTPS as diagnose takes a baseline's (or NaN)
  bool rejection_heavy = false, overloaded = false;  // a figure flags it as not comparable
  ResultsTable requests;
  std::string status_codes;           // the requests' status column: "CODE NAME" lines
  std::optional<ResultsTable> steps;  // absent without ResultsOptions::steps
  ResultsTable windows, itl;
};

// The file's own attributes: its runs' names, the window length, the workload and the OTPS alarm
// (servesim diagnose) with the first run as its baseline.
struct ResultsHeader {
  std::vector<std::string> runs;
  double period_s = 0;
  std::string workload_json;
  double alarm_fraction = 0;
  std::string alarm_baseline_run;
  double alarm_threshold_otps = 0;
};

// The header of a file holding RUNS; an Error (naming FILE) for a name that cannot name an HDF5
// group or that two runs share.
ResultsHeader results_header(const std::string& file, const std::vector<NamedRun>& runs,
                             const nlohmann::ordered_json& workload, const ResultsOptions& options);

// Run R's group.
RunImage run_image(const NamedRun& r, const nlohmann::ordered_json& workload,
                   const ResultsOptions& options);

// Every run's header and groups, in memory.
struct ResultsImage {
  ResultsHeader header;
  std::vector<RunImage> runs;
};
ResultsImage results_image(const std::vector<NamedRun>& runs,
                           const nlohmann::ordered_json& workload, const ResultsOptions& options);

}  // namespace servesim
