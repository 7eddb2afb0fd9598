// A run's metrics as a benchmark tool reports them (analysis/metrics_as.hpp).
#include "analysis/metrics_as.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "util/error.hpp"
#include "util/format.hpp"
#include "util/stats.hpp"

namespace servesim {

using nlohmann::ordered_json;

namespace {

// The per-request values of one metric, sorted.
struct Sample {
  std::vector<double> v;
  void add(double x) {
    if (std::isfinite(x)) v.push_back(x);
  }
  void finish() { std::sort(v.begin(), v.end()); }
  double mean() const {
    if (v.empty()) return NAN;
    double s = 0;
    for (double x : v)
      s += x;
    return s / double(v.size());
  }
  // Population standard deviation (numpy.std, as vLLM and GuideLLM compute it).
  double std_dev() const {
    if (v.empty()) return NAN;
    const double m = mean();
    double s = 0;
    for (double x : v)
      s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size()));
  }
  double q(double p) const { return percentile_sorted(v, p); }
};

// The per-request samples every tool reads: completed requests only.
struct Samples {
  Sample ttft_ms, e2e_ms, tpot_ms, latency_per_token_ms;
};

Samples samples(const RunResult& r) {
  Samples s;
  for (const RequestRecord& q : r.requests) {
    if (!q.finished()) continue;
    s.ttft_ms.add(q.ttft_s() * 1e3);
    s.e2e_ms.add(q.e2e_s() * 1e3);
    if (q.has_decode()) s.tpot_ms.add(q.tpot_s() * 1e3);
    if (q.output_tokens > 0) s.latency_per_token_ms.add(q.e2e_s() * 1e3 / double(q.output_tokens));
  }
  for (Sample* x : {&s.ttft_ms, &s.e2e_ms, &s.tpot_ms, &s.latency_per_token_ms})
    x->finish();
  return s;
}

// A number, or null when undefined.
ordered_json num(double x) {
  return std::isfinite(x) ? ordered_json(x) : ordered_json();
}

// "99" -> "99", "99.9" -> "99.9": vLLM's key suffix (p99_ttft_ms, p99.9_ttft_ms).
std::string vllm_pct(double p) {
  return format("%g", p);
}

// The pooled inter-token gaps, from the run's ITL summary (its histogram), at percentile P.
double itl_at(const RunSummary& s, double p) {
  const Stats& x = s.itl_ms;
  if (p == 50) return x.p50;
  if (p == 90) return x.p90;
  if (p == 95) return x.p95;
  if (p == 99) return x.p99;
  for (const auto& [q, v] : x.extra) {
    if (q == p) return v;
  }
  return NAN;
}

ordered_json vllm_json(const RunResult& r, const Samples& s, const std::vector<double>& pcts) {
  const RunSummary& m = r.summary;
  ordered_json j;
  j["completed"] = m.completed;
  j["total_input_tokens"] = m.input_tokens;
  j["total_output_tokens"] = m.output_tokens;
  j["duration"] = num(m.makespan_s);
  j["request_throughput"] = num(m.requests_per_s);
  j["output_throughput"] = num(m.output_tokens_per_s);
  j["total_token_throughput"] = num(m.total_tokens_per_s);
  if (std::isfinite(m.goodput_req_s)) j["request_goodput"] = m.goodput_req_s;
  auto add = [&](const char* name, const Sample& x) {
    j[format("mean_%s_ms", name)] = num(x.mean());
    j[format("median_%s_ms", name)] = num(x.q(50));
    j[format("std_%s_ms", name)] = num(x.std_dev());
    for (double p : pcts)
      j[format("p%s_%s_ms", vllm_pct(p).c_str(), name)] = num(x.q(p));
  };
  add("ttft", s.ttft_ms);
  add("tpot", s.tpot_ms);
  // ITL: pooled gaps; servesim keeps them as a histogram (no std).
  j["mean_itl_ms"] = num(m.itl_ms.mean);
  j["median_itl_ms"] = num(m.itl_ms.p50);
  j["std_itl_ms"] = nullptr;
  for (double p : pcts)
    j[format("p%s_itl_ms", vllm_pct(p).c_str())] = num(itl_at(m, p));
  add("e2el", s.e2e_ms);
  return j;
}

// The percentiles GuideLLM and inference-perf report, by their names.
struct ToolPercentile {
  const char* guidellm;
  const char* inference_perf;
  double q;
};
constexpr ToolPercentile kToolPercentiles[] = {
    {"p001", "p0p1", 0.1}, {"p01", "p1", 1},   {"p05", "p5", 5},       {"p10", "p10", 10},
    {"p25", "p25", 25},    {"p50", "p50", 50}, {"p75", "p75", 75},     {"p90", "p90", 90},
    {"p95", "p95", 95},    {"p99", "p99", 99}, {"p999", "p99p9", 99.9}};

// GuideLLM's distribution summary of X (in X's unit, times SCALE).
ordered_json guidellm_summary(const Sample& x, double scale) {
  ordered_json j;
  j["mean"] = num(x.mean() * scale);
  j["median"] = num(x.q(50) * scale);
  j["std_dev"] = num(x.std_dev() * scale);
  j["min"] = num(x.v.empty() ? NAN : x.v.front() * scale);
  j["max"] = num(x.v.empty() ? NAN : x.v.back() * scale);
  j["count"] = x.v.size();
  ordered_json p;
  for (const ToolPercentile& t : kToolPercentiles)
    p[t.guidellm] = num(x.q(t.q) * scale);
  j["percentiles"] = p;
  return j;
}

ordered_json guidellm_json(const RunResult& r, const Samples& s) {
  const RunSummary& m = r.summary;
  ordered_json j;
  j["successful_requests"] = m.completed;
  j["request_latency"] = guidellm_summary(s.e2e_ms, 1e-3);  // seconds
  j["time_to_first_token_ms"] = guidellm_summary(s.ttft_ms, 1);
  j["time_per_output_token_ms"] = guidellm_summary(s.latency_per_token_ms, 1);
  j["inter_token_latency_ms"] = guidellm_summary(s.tpot_ms, 1);
  // Over the whole run (GuideLLM's are per-second rate distributions; their means differ).
  j["requests_per_second_overall"] = num(m.requests_per_s);
  j["output_tokens_per_second_overall"] = num(m.output_tokens_per_s);
  return j;
}

// inference-perf's statistics of X (ms) in seconds, with UNITS.
ordered_json inference_perf_stats(const Sample& x, const char* units) {
  ordered_json j;
  j["mean"] = num(x.mean() * 1e-3);
  j["min"] = num(x.v.empty() ? NAN : x.v.front() * 1e-3);
  j["max"] = num(x.v.empty() ? NAN : x.v.back() * 1e-3);
  for (const ToolPercentile& t : kToolPercentiles)
    j[t.inference_perf] = num(x.q(t.q) * 1e-3);
  j["units"] = units;
  return j;
}

ordered_json inference_perf_json(const RunResult& r, const Samples& s) {
  const RunSummary& m = r.summary;
  ordered_json latency;
  latency["request_latency"] = inference_perf_stats(s.e2e_ms, "s");
  latency["time_to_first_token"] = inference_perf_stats(s.ttft_ms, "s");
  latency["time_per_output_token"] = inference_perf_stats(s.tpot_ms, "s/token");
  latency["normalized_time_per_output_token"] =
      inference_perf_stats(s.latency_per_token_ms, "s/token");
  const Stats& itl = m.itl_ms;  // pooled gaps, from the histogram
  latency["inter_token_latency"] = {{"mean", num(itl.mean * 1e-3)},
                                    {"max", num(itl.max * 1e-3)},
                                    {"p50", num(itl.p50 * 1e-3)},
                                    {"p90", num(itl.p90 * 1e-3)},
                                    {"p95", num(itl.p95 * 1e-3)},
                                    {"p99", num(itl.p99 * 1e-3)},
                                    {"units", "s/token"}};
  ordered_json throughput = {{"requests_per_sec", num(m.requests_per_s)},
                             {"output_tokens_per_sec", num(m.output_tokens_per_s)},
                             {"total_tokens_per_sec", num(m.total_tokens_per_s)}};
  return {{"successes", {{"count", m.completed}, {"latency", latency}, {"throughput", throughput}}},
          {"failures", {{"count", m.total - m.completed}}}};
}

}  // namespace

const char* metrics_tool_name(MetricsTool t) {
  switch (t) {
    case MetricsTool::kVllm:
      return "vllm";
    case MetricsTool::kGuidellm:
      return "guidellm";
    case MetricsTool::kInferencePerf:
      return "inference-perf";
    case MetricsTool::kServesim:
      break;
  }
  return "servesim";
}

MetricsTool parse_metrics_tool(const std::string& name) {
  for (MetricsTool t : {MetricsTool::kServesim, MetricsTool::kVllm, MetricsTool::kGuidellm,
                        MetricsTool::kInferencePerf}) {
    if (name == metrics_tool_name(t)) return t;
  }
  throw Error(field::kMetricsAs,
              "expected vllm, guidellm, inference-perf or servesim, got '" + name + "'");
}

ordered_json metrics_as_json(const RunResult& r, MetricsTool tool,
                             const std::vector<double>& percentiles) {
  const Samples s = samples(r);
  ordered_json j = {{"tool", metrics_tool_name(tool)}};
  ordered_json body;
  switch (tool) {
    case MetricsTool::kVllm:
      body = vllm_json(r, s, percentiles.empty() ? std::vector<double>{99} : percentiles);
      break;
    case MetricsTool::kGuidellm:
      body = guidellm_json(r, s);
      break;
    case MetricsTool::kInferencePerf:
      body = inference_perf_json(r, s);
      break;
    case MetricsTool::kServesim:
      break;
  }
  for (const auto& [key, value] : body.items())
    j[key] = value;
  return j;
}

namespace {

void print_leaves(std::ostream& out, const std::string& prefix, const ordered_json& j) {
  for (const auto& [key, value] : j.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) {
      print_leaves(out, name, value);
    } else if (value.is_number_float()) {
      out << format("  %-52s %.6g\n", name.c_str(), value.get<double>());
    } else {
      out << format("  %-52s %s\n", name.c_str(), value.is_null() ? "-" : value.dump().c_str());
    }
  }
}

}  // namespace

void print_metrics_as(std::ostream& out, const ordered_json& j) {
  out << "\nmetrics as " << j.value("tool", std::string("?")) << " reports them:\n";
  ordered_json rest = j;
  rest.erase("tool");
  print_leaves(out, "", rest);
}

}  // namespace servesim
