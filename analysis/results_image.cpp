#include "analysis/results_image.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "analysis/diagnose.hpp"
#include "analysis/diagnose_stats.hpp"
#include "analysis/report.hpp"
#include "util/error.hpp"

namespace servesim {

namespace {

// The status column: 0 finished, otherwise 1 + the RejectReason's index.
std::string status_codes() {
  std::string s = "0 completed";
  for (int i = 1; i < kNumRejectReasons; ++i) {
    s.append("\n")
        .append(std::to_string(i))
        .append(" rejected:")
        .append(reason_code(RejectReason(i)));
  }
  return s;
}

template <class T>
void add(ResultsTable& t, std::string name, std::vector<T> v) {
  t.columns.emplace_back(std::move(name), ResultsColumn(std::move(v)));
}

ResultsTable requests_table(const RunResult& r, const InputParts* parts) {
  const size_t n = r.requests.size();
  std::vector<int64_t> id(n), input(n), output(n), preempt(n), cached(n);
  std::vector<double> arrival(n), first(n), finish(n), ttft(n), e2e(n), tpot(n), otps(n), itl(n),
      queue(n);
  std::vector<int8_t> status(n);
  for (size_t i = 0; i < n; ++i) {
    const RequestRecord& q = r.requests[i];
    const bool done = q.finished();
    id[i] = int64_t(i);
    arrival[i] = q.arrival_s;
    input[i] = q.input_tokens;
    output[i] = q.output_tokens;
    first[i] = done ? q.first_token_s : NAN;
    finish[i] = done ? q.last_token_s : NAN;
    ttft[i] = done ? q.ttft_s() * 1e3 : NAN;
    e2e[i] = done ? q.e2e_s() * 1e3 : NAN;
    tpot[i] = done && q.has_decode() ? q.tpot_s() * 1e3 : NAN;
    otps[i] = done && q.has_decode() ? q.otps() : NAN;
    itl[i] = done && q.has_decode() ? q.max_itl_s * 1e3 : NAN;
    queue[i] = done ? q.queue_s() * 1e3 : NAN;
    preempt[i] = q.preemptions;
    cached[i] = std::max(q.cached_tokens, 0);
    status[i] = done ? 0 : int8_t(q.reject);
  }
  ResultsTable t;
  add(t, "id", std::move(id));
  add(t, "arrival_s", std::move(arrival));
  add(t, "input_tokens", std::move(input));
  add(t, "output_tokens", std::move(output));
  add(t, "first_token_s", std::move(first));
  add(t, "finish_s", std::move(finish));
  add(t, "ttft_ms", std::move(ttft));
  add(t, "e2e_ms", std::move(e2e));
  add(t, "tpot_ms", std::move(tpot));
  add(t, "otps", std::move(otps));
  add(t, "max_itl_ms", std::move(itl));
  add(t, "queue_ms", std::move(queue));
  add(t, "preemptions", std::move(preempt));
  add(t, "cached_tokens", std::move(cached));
  add(t, "status", std::move(status));
  if (r.summary.kv_offload.enabled) {  // KV offload: tokens loaded from the CPU tier, load time
    std::vector<int64_t> loaded(n);
    std::vector<double> load_ms(n);
    for (size_t i = 0; i < n; ++i) {
      loaded[i] = r.requests[i].kv_loaded_tokens;
      load_ms[i] = r.requests[i].kv_load_s * 1e3;
    }
    add(t, "kv_loaded_tokens", std::move(loaded));
    add(t, "kv_load_ms", std::move(load_ms));
  }
  if (parts == nullptr || parts->empty() || parts->tokens.size() != n * parts->names.size()) {
    return t;
  }
  for (size_t k = 0; k < parts->names.size(); ++k) {
    std::vector<int64_t> tokens(n);
    for (size_t i = 0; i < n; ++i)
      tokens[i] = parts->at(i, k);
    add(t, "input_" + parts->names[k], std::move(tokens));
  }
  return t;
}

ResultsTable steps_table(const std::vector<StepRecord>& steps) {
  const size_t n = steps.size();
  std::vector<double> start(n), dur(n), flops(n), bytes(n), power(n);
  std::vector<int64_t> pre(n), dec(n), batch(n), kv(n), cached(n);
  for (size_t i = 0; i < n; ++i) {
    const StepRecord& s = steps[i];
    start[i] = s.start_s;
    dur[i] = s.duration_s;
    pre[i] = s.prefill_tokens;
    dec[i] = s.decode_tokens;
    batch[i] = s.batch_size;
    kv[i] = s.kv_blocks_used;
    cached[i] = s.cached_tokens;
    flops[i] = s.flops;
    bytes[i] = s.bytes;
    power[i] = s.power_w;
  }
  ResultsTable t;
  add(t, "start_s", std::move(start));
  add(t, "duration_s", std::move(dur));
  add(t, "prefill_tokens", std::move(pre));
  add(t, "decode_tokens", std::move(dec));
  add(t, "batch_size", std::move(batch));
  add(t, "kv_blocks_used", std::move(kv));
  add(t, "cached_tokens", std::move(cached));
  add(t, "flops", std::move(flops));
  add(t, "bytes", std::move(bytes));
  add(t, "power_w", std::move(power));
  return t;
}

ResultsTable windows_table(const std::vector<Window>& ws) {
  ResultsTable t;
  auto col = [&](const char* name, auto member) {
    using T = std::remove_cvref_t<decltype(ws[0].*member)>;
    std::vector<T> v;
    v.reserve(ws.size());
    for (const Window& w : ws)
      v.push_back(w.*member);
    add(t, name, std::move(v));
  };
  col("start_s", &Window::start_s);
  col("end_s", &Window::end_s);
  col("arrivals", &Window::arrivals);
  col("completions", &Window::completions);
  col("ttft_ms_p50", &Window::ttft_ms_p50);
  col("ttft_ms_p95", &Window::ttft_ms_p95);
  col("e2e_ms_p50", &Window::e2e_ms_p50);
  col("e2e_ms_p95", &Window::e2e_ms_p95);
  col("output_tokens_p50", &Window::output_tokens_p50);
  col("output_tokens_p95", &Window::output_tokens_p95);
  col("otps", &Window::otps);
  col("input_tokens_p50", &Window::input_tokens_p50);
  col("queue_ms_p50", &Window::queue_ms_p50);
  return t;
}

ResultsTable itl_table(const RunResult& r) {
  std::vector<double> upper;
  std::vector<int64_t> count;
  for (const auto& [u, c] : r.itl_histogram_ms) {
    upper.push_back(u);
    count.push_back(int64_t(c));
  }
  ResultsTable t;
  add(t, "upper_ms", std::move(upper));
  add(t, "count", std::move(count));
  return t;
}

}  // namespace

ResultsHeader results_header(const std::string& file, const std::vector<NamedRun>& runs,
                             const nlohmann::ordered_json& workload,
                             const ResultsOptions& options) {
  ResultsHeader h;
  for (const NamedRun& nr : runs) {
    if (nr.name.empty() || nr.name.find('/') != std::string::npos || nr.name == "." ||
        nr.name == "..") {
      throw Error(file, 0, "runs", "run name '" + nr.name + "' cannot name an HDF5 group");
    }
    if (std::find(h.runs.begin(), h.runs.end(), nr.name) != h.runs.end()) {
      throw Error(file, 0, "runs", "two runs are named '" + nr.name + "'");
    }
    h.runs.push_back(nr.name);
  }
  h.period_s = options.period_s;
  h.workload_json = json_text(workload);
  // The threshold a figure draws, as diagnose would compute it from this file.
  h.alarm_fraction = DiagnoseOptions{}.alarm_fraction;
  const double first_otps = runs.empty() ? NAN : log_stats(request_log(*runs[0].run)).p50.otps;
  h.alarm_baseline_run = runs.empty() ? std::string() : runs[0].name;
  h.alarm_threshold_otps = h.alarm_fraction * first_otps;
  return h;
}

RunImage run_image(const NamedRun& nr, const nlohmann::ordered_json& workload,
                   const ResultsOptions& options) {
  const RunResult& r = *nr.run;
  RunImage g;
  g.name = nr.name;
  // CloudWatch's p50 output tokens / (p50 E2E - p50 TTFT); NaN when undefined.
  g.baseline_otps = log_stats(request_log(r)).p50.otps;
  g.rejection_heavy = rejection_heavy(r.summary);
  g.overloaded = r.summary.overload.overloaded;
  const nlohmann::ordered_json summary =
      summary_json(r, nr.workload ? *nr.workload : workload, options.interval_level);
  g.label = run_label(r);
  g.policy = policy_name(r.config.scheduler.policy);
  g.max_num_batched_tokens = r.config.scheduler.max_num_batched_tokens;
  g.summary_json = json_text(summary);
  g.config_json = json_text(summary["config"]);
  g.requests = requests_table(r, options.input_parts);
  g.status_codes = status_codes();
  if (options.steps) g.steps = steps_table(r.steps);
  g.windows = windows_table(compute_windows(request_log(r), options.period_s));
  g.itl = itl_table(r);
  return g;
}

ResultsImage results_image(const std::vector<NamedRun>& runs,
                           const nlohmann::ordered_json& workload, const ResultsOptions& options) {
  ResultsImage image{results_header("results", runs, workload, options), {}};
  for (const NamedRun& nr : runs)
    image.runs.push_back(run_image(nr, workload, options));
  return image;
}

}  // namespace servesim
