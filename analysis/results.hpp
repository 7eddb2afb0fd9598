// The servesim results file: one or more runs in HDF5, with a documented layout
// (docs/manual/run-and-compare.md, "Results files"). Written by `run`/`compare --out`, `check
// --update`; read by `diagnose`, `check` and scripts/plot.py.
//   /                      attrs magic "servesim-results", version, runs (names, one per line),
//                          period_s, workload (JSON); alarm_fraction, alarm_baseline_run (the
//                          first run) and alarm_threshold_otps (fraction x its baseline_otps):
//                          servesim diagnose's OTPS alarm with the first run as the baseline
//   /runs/NAME             attrs label, policy, max_num_batched_tokens, summary (JSON), config
//                          (JSON), baseline_otps (the whole-log p50 OTPS diagnose takes from a
//                          baseline), rejection_heavy and overloaded (0 or 1: a figure flags
//                          the run as not comparable); NAME is the run's label ("chunked:512") or a
//                          scenario name
//   /runs/NAME/requests/   one 1-D column per field of the requests CSV (with the input's
//                          modalities, text_tokens, image_tokens, ..., where the workload has them)
//   /runs/NAME/steps/      start_s, duration_s, prefill_tokens, decode_tokens, batch_size,
//                          kv_blocks_used, flops, bytes (absent with --no-steps)
//   /runs/NAME/windows/    the Window fields (sim/windows.hpp), one row per period
//   /runs/NAME/itl/        upper_ms, count: the inter-token gap histogram
// Promises: byte-identical files for equal inputs (no timestamps are stored); written to a
// temporary file and renamed, so a failed write never leaves half a file; reading checks magic,
// version, types and lengths and reports one Error naming the file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/results_image.hpp"

namespace servesim {

void write_results_h5(const std::string& path, const std::vector<NamedRun>& runs,
                      const nlohmann::ordered_json& workload, const ResultsOptions& options);

// Whether PATH is an HDF5 file (of any kind); false for CSV and text.
bool is_hdf5_file(const std::string& path);

// The run names of a results file, in the order written.
std::vector<std::string> results_runs(const std::string& path);

// The summary JSON of run NAME (as `run --json` writes it).
nlohmann::ordered_json read_results_summary(const std::string& path, const std::string& name);

// The request log of run NAME ("" = the only run; an Error lists the names when there are
// several).
RequestLog read_results_log(const std::string& path, const std::string& name);

}  // namespace servesim
