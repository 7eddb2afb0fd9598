#include "analysis/results.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <variant>

#include "util/error.hpp"
#include "util/h5_columns.hpp"
#include "util/provenance.hpp"

namespace servesim {

namespace {

constexpr const char* kMagic = "servesim-results";
constexpr int64_t kVersion = 1;
constexpr hsize_t kMaxRows = hsize_t(1) << 31;

using h5::write_attr;

// TABLE's columns into G; the requests' status codes (STATUS_CODES, when not empty) right after
// their status column, where the file has always had them.
void write_table(H5::Group& g, const ResultsTable& table, const std::string& status_codes = "") {
  for (const auto& column : table.columns) {
    const std::string& name = column.first;
    std::visit([&](const auto& v) { h5::write_column(g, name, v); }, column.second);
    if (name == "status" && !status_codes.empty()) write_attr(g, "status_codes", status_codes);
  }
}

void write_run(H5::Group& root, const RunImage& r) {
  H5::Group g = h5::create_group(root, r.name);
  write_attr(g, "baseline_otps", r.baseline_otps);
  write_attr(g, "rejection_heavy", int64_t(r.rejection_heavy));
  write_attr(g, "overloaded", int64_t(r.overloaded));
  write_attr(g, "label", r.label);
  write_attr(g, "policy", r.policy);
  write_attr(g, "max_num_batched_tokens", r.max_num_batched_tokens);
  write_attr(g, "summary", r.summary_json);
  write_attr(g, "config", r.config_json);
  H5::Group req = h5::create_group(g, "requests");
  write_table(req, r.requests, r.status_codes);
  if (r.steps) {
    H5::Group steps = h5::create_group(g, "steps");
    write_table(steps, *r.steps);
  }
  H5::Group win = h5::create_group(g, "windows");
  write_table(win, r.windows);
  win.close();
  H5::Group itl = h5::create_group(g, "itl");
  write_table(itl, r.itl);
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
  const ResultsHeader h = results_header(path, runs, workload, options);
  h5::write_file_atomically(path, [&](H5::H5File& f) {
    write_attr(f, "magic", std::string(kMagic));
    write_attr(f, "version", kVersion);
    write_attr(f, "servesim_version", std::string(servesim_version()));
    write_attr(f, "command_line", current_command_line());
    write_attr(f, "runs", join_lines(h.runs));
    write_attr(f, "period_s", h.period_s);
    write_attr(f, "workload", h.workload_json);
    write_attr(f, "alarm_fraction", h.alarm_fraction);
    write_attr(f, "alarm_baseline_run", h.alarm_baseline_run);
    write_attr(f, "alarm_threshold_otps", h.alarm_threshold_otps);
    H5::Group root = h5::create_group(f, "runs");
    for (const NamedRun& nr : runs)  // one run's tables in memory at a time
      write_run(root, run_image(nr, workload, options));
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
