// A run's metrics as a benchmark tool reports them, so that a simulated report and a measured one
// diff field by field (`run`/`compare --metrics-as TOOL`, docs/manual/run-and-compare.md). The
// tools disagree on what the same names mean:
//  - vllm (vLLM's `vllm bench serve`, benchmarks/benchmark_serving.py, v0.15): per completed
//    request TTFT and E2EL (ms) and TPOT = (E2EL - TTFT) / (output tokens - 1), over the requests
//    with two or more output tokens; ITL is every gap between streamed chunks, pooled over all
//    requests (one token a chunk here, so a gap per token); mean, median, std and the
//    --metric-percentiles (vLLM's default: 99); request and token throughput over the benchmark's
//    duration; goodput when SLOs are given. Keys as its --save-result JSON: mean_ttft_ms, ...
//  - guidellm (GuideLLM, vllm-project/guidellm): per successful request time_to_first_token_ms,
//    request_latency (s), time_per_output_token_ms = request latency / output tokens (the first
//    token included), inter_token_latency_ms = (last token - first token) / (output tokens - 1)
//    (vLLM's TPOT, per request, not per gap); each as mean, median, std_dev, min, max, count and
//    the p001 .. p999 percentiles, unweighted (GuideLLM 0.3-0.4 weighted TPOT by output tokens
//    and ITL by output tokens - 1).
//  - inference-perf (kubernetes-sigs/inference-perf): per successful request, in seconds,
//    request_latency, time_to_first_token, time_per_output_token = (latency - TTFT) /
//    (output tokens - 1), normalized_time_per_output_token = latency / output tokens, and
//    inter_token_latency, every gap pooled (s/token); mean, min, max and p0.1 .. p99.9 with
//    their units; throughput per second of the benchmark window.
// Percentiles use numpy's linear interpolation for every tool (vLLM's and inference-perf's
// method; GuideLLM steps to a neighbour). The pooled gaps come from servesim's ITL histogram.
// Promises: pure functions of the run; NaN (JSON null) where a tool's value is undefined.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace servesim {

enum class MetricsTool { kServesim, kVllm, kGuidellm, kInferencePerf };

// "servesim", "vllm", "guidellm", "inference-perf"; parse throws Error naming --metrics-as.
const char* metrics_tool_name(MetricsTool t);
MetricsTool parse_metrics_tool(const std::string& name);

// R's metrics as TOOL reports them (TOOL != kServesim), with "tool" first. PERCENTILES is vLLM's
// --metric-percentiles (empty: 99); the other tools report their own fixed set.
nlohmann::ordered_json metrics_as_json(const RunResult& r, MetricsTool tool,
                                       const std::vector<double>& percentiles = {});

// The headline fields of metrics_as_json(R, TOOL) as "name value unit" lines.
void print_metrics_as(std::ostream& out, const nlohmann::ordered_json& j);

}  // namespace servesim
