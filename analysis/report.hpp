// Reports of a run: the JSON summary (keys documented in docs/manual/run-and-compare.md), the
// per-request CSV, the one-screen text summary of `run` and the one-row-per-policy table of
// `compare` (analysis/report_text.cpp), with warnings where an answer is not what it seems. A
// statistic over no request is null in JSON and "-" in text. Promises: output is a pure function of
// the RunResult (no clocks, no addresses), so equal runs give byte-identical files.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/intervals.hpp"
#include "sim/simulation.hpp"

namespace servesim {

// The scheduler label of a run with its resolved token budget, e.g. "chunked:512".
std::string run_label(const RunResult& r);
// A replica's GPUs: "h100-sxm x4", or with pipeline stages "h100-sxm x8 (TP4 x PP2)".
std::string replica_layout_text(const SimConfig& c);

// Every summary metric as a flat (name, value) list in a fixed order: completed, rejected,
// preemptions, then mean/p50/p90/p95/p99/max of ttft_ms, itl_ms, tpot_ms, e2e_ms, queue_ms and
// otps, then otps_p50_ratio, throughput, GPU use and makespan_s. Sweep and capacity tables use
// these names as columns.
std::vector<std::pair<std::string, double>> summary_metrics(const RunSummary& s);
// Whether summary metric NAME counts things (requests, tokens, steps): a whole number, though
// tables store every metric as a real.
bool summary_metric_is_count(const std::string& name);
// A run that rejects more than this share of its requests is not comparable with the others: no
// verdict names it best, sweep tables flag it (rejection_heavy) and figures mark it.
inline constexpr double kComparableRejectedShare = 0.01;
inline bool rejection_heavy(const RunSummary& s) {
  return s.rejected_share() > kComparableRejectedShare;
}
// Where the cost model's parameters came from, in one line: the hardware's (a fit, a calibration
// file, or the profile table's folder) and the engine's. Sweep and capacity tables carry it per
// row (column cost_source), so that a figure says what its numbers rest on.
std::string cost_source(const SimConfig& c);

// Which servesim wrote an output and the command that did (util/provenance.hpp):
// {"version": ..., "command": ...}, the "servesim" object of every JSON file servesim writes.
nlohmann::ordered_json provenance_json();

// V as JSON, or null when undefined (NaN, a statistic over no request; or infinite).
nlohmann::ordered_json json_number(double v);

// R's JSON summary, its prediction_intervals at INTERVAL_LEVEL (0: none; run --interval).
nlohmann::ordered_json summary_json(const RunResult& r, const nlohmann::ordered_json& workload,
                                    double interval_level = kDefaultIntervalLevel);
// An autoscaled fleet's summary and timeline (GPUS_PER_REPLICA: TP x PP, for the GPU-hours).
nlohmann::ordered_json autoscale_json(const AutoscaleSummary& a, int gpus_per_replica);

// The text of J as dump(INDENT) writes it, except that bytes of a string that are not UTF-8 (a
// Latin-1 file name, trace value or HDF5 attribute) become U+FFFD instead of failing the write.
// Every JSON servesim writes goes through it.
std::string json_text(const nlohmann::ordered_json& j, int indent = -1);

// id,arrival_s,input_tokens,output_tokens,first_token_s,finish_s,ttft_ms,e2e_ms,tpot_ms,otps,
// max_itl_ms,queue_ms,preemptions,cached_tokens,status (cached_tokens: prompt tokens the prefix
// cache held when the request was first scheduled, vLLM's num_cached_tokens), then
// input_NAME_tokens per modality of PARTS when given (ServeGen's multimodal clients)
void write_requests_csv(std::ostream& out, const RunResult& r, const InputParts* parts = nullptr);

// Why a run's numbers are not what they seem, one line each (empty when they are): overload (the
// queue grew instead of draining: latencies then grow with the run's length), rejections (the
// rejected requests are not in the statistics) and features on together whose interaction is
// not modelled (unmodelled_interactions).
std::vector<std::string> run_warnings(const RunResult& r);
// What C switches on together that servesim does not model together (one sentence each), for the
// warnings and the JSON.
std::vector<std::string> unmodelled_interactions(const SimConfig& c);

// Whether a run may be called the best of a comparison: it kept up with its arrivals and
// rejected no more than 1% of its requests.
bool comparable(const RunResult& r);

// Whether R's max_num_seqs is vLLM V1's default capped at its token budget (EngineArgs caps a
// max_num_seqs not given at max_num_batched_tokens): a row of compare then differs from the
// others in max_num_seqs by its own budget.
bool max_num_seqs_capped(const RunResult& r);

// DEFAULT_SCHEDULER: the policy was not named (run_spec.hpp default_scheduler); the header says so.
void print_run_summary(std::ostream& out, const RunResult& r, const std::string& workload,
                       bool default_scheduler = false);
void print_compare_table(std::ostream& out, const std::vector<RunResult>& runs);
// "v1 (async scheduling), API server 5.6 ms": what runs around the model.
std::string engine_text(const SimConfig& c);
// What R's configuration has that REFERENCE's has not, besides its scheduling policy and what
// the policy decides (its token budget, prefix cache, V1 scheduler options): the engine, async
// scheduling, GPU, hardware or engine fit, max_num_seqs, max_model_len, the API server. "" when
// nothing: the rows then differ in their scheduling alone.
std::string row_differences(const RunResult& r, const RunResult& reference);
// One line on what a comparison shows, among the runs that are comparable(); says so when none
// is. Empty for fewer than two runs.
std::string compare_verdict(const std::vector<RunResult>& runs);

}  // namespace servesim
