#include "cli/common.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "cli/config_file.hpp"
#include "util/error.hpp"

namespace servesim::cli {

using nlohmann::ordered_json;

bool parse_command(int argc, const char* const* argv, const po::options_description& desc,
                   po::variables_map& vm, std::ostream& out, const std::string& usage,
                   const po::positional_options_description* positional) {
  po::command_line_parser parser(argc, argv);
  parser.options(desc);
  if (positional != nullptr) parser.positional(*positional);
  po::parsed_options cmd = parser.run();
  po::store(cmd, vm);
  if (vm.count("help")) {
    out << "usage: " << usage << "\n" << desc;
    return false;
  }
  if (vm.count("config")) {
    std::set<std::string> given;
    for (const po::option& o : cmd.options)
      given.insert(o.string_key);
    store_ini_file(vm["config"].as<std::string>(), desc, vm, given);
  }
  po::notify(vm);
  return true;
}

GpuSpec gpu_from_flags(const std::string& name, const std::string& file) {
  return file.empty() ? find_gpu(name) : load_gpu_file(file);
}

ModelSpec model_from_flags(const std::string& name, const std::string& file) {
  return file.empty() ? find_model(name) : load_model_file(file);
}

double parse_rate(const std::string& text) {
  if (text == "inf") return INFINITY;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v > 0) || !std::isfinite(v)) {
    throw Error("request-rate", "'" + text + "' is not a positive number or inf");
  }
  return v;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(path, 0, "", "cannot open for writing");
  f << text;
  if (!f.flush()) throw Error(path, 0, "", "write failed");
}

po::options_description trace_input_options(TraceArgs& a) {
  po::options_description d("trace input");
  d.add_options()(
      "trace-format", po::value(&a.import.format),
      "azure | burstgpt | mooncake | vidur | csv | servesim (default: read off the file)")(
      "col-arrival", po::value(&a.import.col_arrival),
      "csv: arrival-time column (none = length-only)")("col-input", po::value(&a.import.col_input),
                                                       "csv: prompt-token column")(
      "col-output", po::value(&a.import.col_output), "csv: output-token column")(
      "time-unit", po::value(&a.import.time_unit)->default_value("s"), "csv: s | ms | us")(
      "skip-bad-rows", po::bool_switch(&a.import.skip_bad_rows),
      "skip and count malformed rows instead of stopping at the first")(
      "keep-failed", po::bool_switch(&a.import.keep_failed),
      "burstgpt: keep failed requests (0 response tokens) as 1-token answers")(
      "model-filter", po::value(&a.import.model_filter),
      "burstgpt: only this Model (ChatGPT, GPT-4)")("log-type", po::value(&a.import.log_type),
                                                    "burstgpt: only conversation | api rows")(
      "hash-block-size", po::value(&a.import.hash_block_size)->default_value(0),
      "mooncake: prompt tokens per hash id (0 = 512)");
  return d;
}

po::options_description transform_options(TraceArgs& a) {
  po::options_description d(
      "what-if transforms (in this order; --request-rate rescales a timed "
      "trace to that mean rate)");
  d.add_options()("window", po::value(&a.window), "keep arrivals in START:END seconds")(
      "max-requests", po::value(&a.what_if.max_requests)->default_value(0),
      "keep the first N (0 = all)")("time-scale",
                                    po::value(&a.what_if.time_scale)->default_value(1.0, "1"),
                                    "stretch arrival times (0.5 = twice the rate)")(
      "input-trim", po::value(&a.what_if.input_trim)->default_value(0),
      "remove N tokens from every prompt (floor 1)")(
      "input-scale", po::value(&a.what_if.input_scale)->default_value(1.0, "1"),
      "multiply prompt lengths")("output-scale",
                                 po::value(&a.what_if.output_scale)->default_value(1.0, "1"),
                                 "multiply output lengths")(
      "max-input-len", po::value(&a.what_if.max_input_len)->default_value(0),
      "clip prompts to N tokens (0 = no clip)")(
      "max-output-len", po::value(&a.what_if.max_output_len)->default_value(0),
      "clip outputs to N tokens (0 = no clip)");
  return d;
}

ImportOptions import_options(const TraceArgs& a) {
  if (a.import.hash_block_size < 0) throw Error("hash-block-size", "must be >= 0");
  return a.import;
}

TransformOptions transforms(const TraceArgs& a, double request_rate, double burstiness,
                            uint64_t seed) {
  TransformOptions o = a.what_if;
  if (!a.window.empty()) parse_window(a.window, o);
  o.request_rate = request_rate;
  o.burstiness = burstiness;
  o.seed = seed;
  return o;
}

Trace load_trace(const std::string& path, const TraceArgs& a, double request_rate,
                 double burstiness, uint64_t seed, bool cached) {
  const ImportOptions opt = import_options(a);
  Trace t;
  std::error_code ec;
  if (cached && std::filesystem::is_regular_file(path, ec)) {
    // Many points of one sweep replay one file: import it once per process. The key holds the
    // file's size and modification time, so a rewritten file is read again.
    static std::mutex m;
    static std::map<std::string, std::shared_ptr<const Trace>> cache;
    const auto size = std::filesystem::file_size(path, ec);
    const auto mtime = std::filesystem::last_write_time(path, ec).time_since_epoch().count();
    const std::string key =
        path + "\n" + opt.describe() + "\n" + std::to_string(size) + "\n" + std::to_string(mtime);
    std::shared_ptr<const Trace> hit;
    {
      const std::lock_guard<std::mutex> lock(m);
      auto it = cache.find(key);
      if (it == cache.end()) {
        it = cache.emplace(key, std::make_shared<const Trace>(import_trace(path, opt))).first;
      }
      hit = it->second;
    }
    t = *hit;
  } else {
    t = import_trace(path, opt);
  }
  apply_transforms(t, transforms(a, request_rate, burstiness, seed));
  return t;
}

ordered_json trace_json(const Trace& t) {
  const TraceCounts& c = t.counts;
  return {{"kind", "trace"},
          {"file", t.source},
          {"format", t.format},
          {"options", t.options},
          {"timed", t.timed},
          {"rows_read", c.rows_read},
          {"replayed", t.size()},
          {"skipped_bad", c.skipped_bad},
          {"skipped_failed", c.skipped_failed},
          {"filtered", c.filtered},
          {"outside_window", c.outside_window},
          {"beyond_max", c.beyond_max},
          {"kept_failed", c.kept_failed},
          {"clipped_input", c.clipped_input},
          {"clipped_output", c.clipped_output},
          {"first_errors", t.first_errors}};
}

std::string trace_text(const Trace& t) {
  std::ostringstream s;
  s << "trace " << t.source << " (" << t.format << ")";
  if (!t.options.empty()) s << " " << t.options;
  s << ": " << t.counts.rows_read << " rows, " << t.size() << " replayed, " << t.counts.skipped()
    << " skipped";
  if (t.counts.skipped() > 0) {
    s << " (" << t.counts.skipped_bad << " bad, " << t.counts.skipped_failed << " failed, "
      << t.counts.filtered << " filtered, " << t.counts.outside_window << " outside window, "
      << t.counts.beyond_max << " beyond --max-requests)";
  }
  for (const std::string& e : t.first_errors)
    s << "\n  skipped: " << e;
  return s.str();
}

ordered_json synthetic_json(const SyntheticOptions& w) {
  ordered_json rate =
      std::isinf(w.request_rate) ? ordered_json("inf") : ordered_json(w.request_rate);
  return {{"kind", "synthetic"},
          {"num_requests", w.num_requests},
          {"request_rate", rate},
          {"burstiness", w.burstiness},
          {"input_len", w.input_len.spec},
          {"output_len", w.output_len.spec},
          {"seed", w.seed}};
}

std::string synthetic_text(const SyntheticOptions& w) {
  std::ostringstream s;
  s << w.num_requests << " requests, ";
  if (std::isinf(w.request_rate)) {
    s << "all at t=0";
  } else {
    s << (w.burstiness == 1.0 ? "Poisson " : "Gamma(" + std::to_string(w.burstiness) + ") ")
      << w.request_rate << " req/s";
  }
  s << ", input " << w.input_len.spec << ", output " << w.output_len.spec << ", seed " << w.seed;
  return s.str();
}

}  // namespace servesim::cli
