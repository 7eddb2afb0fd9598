#include "analysis/results.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "analysis/diagnose.hpp"
#include "analysis/diagnose_stats.hpp"
#include "analysis/report.hpp"
#include "util/error.hpp"
#include "util/h5_columns.hpp"

namespace servesim {

namespace {

constexpr const char* kMagic = "servesim-results";
constexpr int64_t kVersion = 1;
constexpr hsize_t kMaxRows = hsize_t(1) << 31;

using h5::write_attr;
using h5::write_column;

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

void write_requests(H5::Group& g, const RunResult& r, const InputParts* parts) {
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
  write_column(g, "id", id);
  write_column(g, "arrival_s", arrival);
  write_column(g, "input_tokens", input);
  write_column(g, "output_tokens", output);
  write_column(g, "first_token_s", first);
  write_column(g, "finish_s", finish);
  write_column(g, "ttft_ms", ttft);
  write_column(g, "e2e_ms", e2e);
  write_column(g, "tpot_ms", tpot);
  write_column(g, "otps", otps);
  write_column(g, "max_itl_ms", itl);
  write_column(g, "queue_ms", queue);
  write_column(g, "preemptions", preempt);
  write_column(g, "cached_tokens", cached);
  write_column(g, "status", status);
  write_attr(g, "status_codes", status_codes());
  if (r.summary.kv_offload.enabled) {  // KV offload: tokens loaded from the CPU tier, load time
    std::vector<int64_t> loaded(n);
    std::vector<double> load_ms(n);
    for (size_t i = 0; i < n; ++i) {
      loaded[i] = r.requests[i].kv_loaded_tokens;
      load_ms[i] = r.requests[i].kv_load_s * 1e3;
    }
    write_column(g, "kv_loaded_tokens", loaded);
    write_column(g, "kv_load_ms", load_ms);
  }
  if (parts == nullptr || parts->empty() || parts->tokens.size() != n * parts->names.size()) {
    return;
  }
  std::vector<int64_t> tokens(n);
  for (size_t k = 0; k < parts->names.size(); ++k) {
    for (size_t i = 0; i < n; ++i)
      tokens[i] = parts->at(i, k);
    write_column(g, "input_" + parts->names[k], tokens);
  }
}

void write_steps(H5::Group& g, const std::vector<StepRecord>& steps) {
  const size_t n = steps.size();
  std::vector<double> start(n), dur(n), flops(n), bytes(n);
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
  }
  write_column(g, "start_s", start);
  write_column(g, "duration_s", dur);
  write_column(g, "prefill_tokens", pre);
  write_column(g, "decode_tokens", dec);
  write_column(g, "batch_size", batch);
  write_column(g, "kv_blocks_used", kv);
  write_column(g, "cached_tokens", cached);
  write_column(g, "flops", flops);
  write_column(g, "bytes", bytes);
}

void write_windows(H5::Group& g, const std::vector<Window>& ws) {
  auto col = [&](const char* name, auto member) {
    using T = std::remove_cvref_t<decltype(ws[0].*member)>;
    std::vector<T> v;
    v.reserve(ws.size());
    for (const Window& w : ws)
      v.push_back(w.*member);
    write_column(g, name, v);
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
}

using h5::join_lines;

H5::H5File open_results(const std::string& path) {
  return h5::open_checked(path, kMagic, kVersion, "results file");
}

// Runs one read of a results file, turning HDF5 errors into an Error naming PATH.
template <class F>
auto reading(const std::string& path, F f) {
  H5::Exception::dontPrint();
  try {
    return f();
  } catch (const H5::Exception& e) {
    throw Error(path, 0, "",
                "unreadable servesim results file (truncated or corrupt HDF5?): " +
                    e.getFuncName() + ": " + e.getDetailMsg());
  }
}

}  // namespace

void write_results_h5(const std::string& path, const std::vector<NamedRun>& runs,
                      const nlohmann::ordered_json& workload, const ResultsOptions& options) {
  std::vector<std::string> names;
  for (const NamedRun& nr : runs) {
    if (nr.name.empty() || nr.name.find('/') != std::string::npos || nr.name == "." ||
        nr.name == "..") {
      throw Error(path, 0, "runs", "run name '" + nr.name + "' cannot name an HDF5 group");
    }
    for (const std::string& n : names) {
      if (n == nr.name) throw Error(path, 0, "runs", "two runs are named '" + n + "'");
    }
    names.push_back(nr.name);
  }
  h5::write_file_atomically(path, [&](H5::H5File& f) {
    write_attr(f, "magic", std::string(kMagic));
    write_attr(f, "version", kVersion);
    write_attr(f, "runs", join_lines(names));
    write_attr(f, "period_s", options.period_s);
    write_attr(f, "workload", json_text(workload));
    // The OTPS alarm (servesim diagnose) with the first run as its baseline: the threshold
    // a figure draws, as diagnose would compute it from this file.
    const double fraction = DiagnoseOptions{}.alarm_fraction;
    const double first_otps = runs.empty() ? NAN : log_stats(request_log(*runs[0].run)).p50.otps;
    write_attr(f, "alarm_fraction", fraction);
    write_attr(f, "alarm_baseline_run", runs.empty() ? std::string() : runs[0].name);
    write_attr(f, "alarm_threshold_otps", fraction * first_otps);
    H5::Group root = h5::create_group(f, "runs");
    for (const NamedRun& nr : runs) {
      const RunResult& r = *nr.run;
      H5::Group g = h5::create_group(root, nr.name);
      // Its whole-log p50 OTPS as diagnose takes a baseline's (CloudWatch: p50 output tokens /
      // (p50 E2E - p50 TTFT)); NaN when undefined.
      write_attr(g, "baseline_otps", log_stats(request_log(r)).p50.otps);
      // Whether a figure must flag it as not comparable (report.hpp): 0 or 1.
      write_attr(g, "rejection_heavy", int64_t(rejection_heavy(r.summary)));
      write_attr(g, "overloaded", int64_t(r.summary.overload.overloaded));
      const nlohmann::ordered_json summary =
          summary_json(r, nr.workload ? *nr.workload : workload, options.interval_level);
      write_attr(g, "label", run_label(r));
      write_attr(g, "policy", std::string(policy_name(r.config.scheduler.policy)));
      write_attr(g, "max_num_batched_tokens", r.config.scheduler.max_num_batched_tokens);
      write_attr(g, "summary", json_text(summary));
      write_attr(g, "config", json_text(summary["config"]));
      H5::Group req = h5::create_group(g, "requests");
      write_requests(req, r, options.input_parts);
      if (options.steps) {
        H5::Group steps = h5::create_group(g, "steps");
        write_steps(steps, r.steps);
      }
      H5::Group win = h5::create_group(g, "windows");
      write_windows(win, compute_windows(request_log(r), options.period_s));
      win.close();
      H5::Group itl = h5::create_group(g, "itl");
      std::vector<double> upper;
      std::vector<int64_t> count;
      for (const auto& [u, c] : r.itl_histogram_ms) {
        upper.push_back(u);
        count.push_back(int64_t(c));
      }
      write_column(itl, "upper_ms", upper);
      write_column(itl, "count", count);
    }
  });
}

bool is_hdf5_file(const std::string& path) {
  H5::Exception::dontPrint();
  try {
    return H5::H5File::isHdf5(path.c_str());
  } catch (const H5::Exception&) {
    return false;
  }
}

std::vector<std::string> results_runs(const std::string& path) {
  return reading(path, [&] {
    H5::H5File f = open_results(path);
    std::vector<std::string> names = h5::split_lines(h5::read_string_attr(f, "runs"));
    if (names.empty()) throw Error(path, 0, "runs", "the file holds no run");
    return names;
  });
}

namespace {

// The group of run NAME ("" = the only one).
std::string run_group(const std::string& path, const std::string& name) {
  const std::vector<std::string> names = results_runs(path);
  std::string all;
  for (const std::string& n : names)
    all.append(all.empty() ? "" : ", ").append(n);
  if (name.empty()) {
    if (names.size() == 1) return "runs/" + names[0];
    throw Error(path, 0, "run",
                "holds " + std::to_string(names.size()) + " runs; name one of: " + all);
  }
  for (const std::string& n : names) {
    if (n == name) return "runs/" + n;
  }
  throw Error(path, 0, "run", "no run named '" + name + "' (runs: " + all + ")");
}

}  // namespace

nlohmann::ordered_json read_results_summary(const std::string& path, const std::string& name) {
  const std::string group = run_group(path, name);
  return reading(path, [&] {
    H5::H5File f = open_results(path);
    H5::Group g = f.openGroup(group);
    const std::string text = h5::read_string_attr(g, "summary");
    try {
      return nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(path, 0, group + "/summary", std::string("not JSON: ") + e.what());
    }
  });
}

RequestLog read_results_log(const std::string& path, const std::string& name) {
  const std::string group = run_group(path, name);
  RequestLog result = reading(path, [&] {
    H5::H5File f = open_results(path);
    H5::Group g = f.openGroup(group + "/requests");
    const std::string where = path + ":" + group;
    const hsize_t n = h5::column_length<double>(g, where, "arrival_s", kMaxRows);
    RequestLog log;
    log.source = path + " (" + group.substr(5) + ")";
    log.arrival_s = h5::read_checked<double>(g, where, "arrival_s", n);
    log.ttft_ms = h5::read_checked<double>(g, where, "ttft_ms", n);
    log.e2e_ms = h5::read_checked<double>(g, where, "e2e_ms", n);
    log.output_tokens = h5::read_checked<int64_t>(g, where, "output_tokens", n);
    log.input_tokens = h5::read_checked<int64_t>(g, where, "input_tokens", n);
    log.queue_ms = h5::read_checked<double>(g, where, "queue_ms", n);
    for (size_t i = 0; i < n; ++i) {
      const bool bad_latency =
          std::isfinite(log.e2e_ms[i]) && !(log.ttft_ms[i] >= 0 && log.e2e_ms[i] >= log.ttft_ms[i]);
      if (!std::isfinite(log.arrival_s[i]) || log.output_tokens[i] < 0 || bad_latency) {
        throw Error(where, 0, "requests", "row " + std::to_string(i) + " is not valid");
      }
    }
    return log;
  });
  const nlohmann::ordered_json summary = read_results_summary(path, name);
  if (summary.is_object() && summary.contains("config")) result.config = summary["config"];
  return result;
}

}  // namespace servesim
