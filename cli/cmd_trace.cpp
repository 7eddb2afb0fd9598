// `servesim trace import | info | synth`: turn any supported trace into a compact HDF5 file,
// describe a trace, or write the synthetic generator's requests to a file.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "analysis/run_spec.hpp"
#include "analysis/workload_report.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/run_flags.hpp"
#include "traces/import.hpp"
#include "traces/trace_info.hpp"
#include "traces/trace_store.hpp"
#include "util/error.hpp"

namespace servesim::cli {

namespace {

const char* kTraceUsage =
    "usage: servesim trace <import|info|synth> ...\n"
    "  servesim trace import IN [options] -o OUT.h5   read any supported trace, apply what-if "
    "transforms, write HDF5\n"
    "  servesim trace info FILE [options]             requests, rates, burstiness, lengths, "
    "prefix reuse\n"
    "  servesim trace synth [options] -o OUT.h5       the synthetic generator's requests\n";

struct TraceCommandArgs {
  std::string input, output, request_rate, config;
  double burstiness = 1;
  int64_t seed = 0;
  RunSpec t;  // its trace-input and what-if fields
};

po::options_description common(TraceCommandArgs& a, bool with_output) {
  po::options_description d(
      "arrivals (a timed trace is rescaled; a length-only trace gets "
      "Gamma arrivals)");
  d.add_options()("request-rate", po::value(&a.request_rate), "mean rate in req/s, or inf")(
      "burstiness", po::value(&a.burstiness)->default_value(1.0, "1"),
      "Gamma shape for generated arrivals")("seed", po::value(&a.seed)->default_value(0),
                                            "seed for generated arrivals");
  po::options_description other("other");
  if (with_output) {
    other.add_options()("output,o", po::value(&a.output)->required(), "HDF5 file to write");
  }
  other.add_options()("config", po::value(&a.config), "read any of these flags from an INI file")(
      "help,h", "show this help");
  po::options_description all;
  all.add(run_flag_group(FlagGroup::kTraceInput, a.t))
      .add(run_flag_group(FlagGroup::kWhatIf, a.t))
      .add(d)
      .add(other);
  return all;
}

// The what-if transforms of A: rescaled to RATE (0 = keep a trace's timing).
TransformOptions transforms(const TraceCommandArgs& a, double rate) {
  TransformOptions o = a.t.what_if;
  o.request_rate = rate;
  o.burstiness = a.burstiness;
  o.seed = uint64_t(a.seed);
  return o;
}

Trace load(const TraceCommandArgs& a) {
  if (a.seed < 0) throw Error("seed", "must be >= 0");
  const double rate = a.request_rate.empty() ? 0 : parse_rate(a.request_rate);
  // Imported straight into the one copy that is transformed and written (no input cache here: a
  // copy of a 5M-row trace doubled the memory).
  Trace t = import_trace(a.input, a.t.import);
  apply_transforms(t, transforms(a, rate));
  return t;
}

void report_skips(std::ostream& out, const Trace& t) {
  const TraceCounts& c = t.counts;
  if (c.skipped_bad > 0) {
    out << "skipped " << c.skipped_bad << " bad row" << (c.skipped_bad == 1 ? "" : "s")
        << "; the first:\n";
    for (const std::string& e : t.first_errors)
      out << "  " << e << "\n";
  }
  if (c.skipped_failed > 0) {
    out << "skipped " << c.skipped_failed
        << " failed requests (0 response tokens); --keep-failed replays them\n";
  }
}

// Parses a command whose one positional argument is the trace to read; false after --help.
bool parse_with_input(int argc, const char* const* argv, TraceCommandArgs& a, bool with_output,
                      const char* usage, std::ostream& out) {
  po::options_description desc = common(a, with_output);
  desc.add_options()("input", po::value(&a.input)->required(), "trace file to read");
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  return parse_command(argc, argv, desc, vm, out, usage, &pos);
}

int cmd_import(int argc, const char* const* argv, std::ostream& out) {
  TraceCommandArgs a;
  if (!parse_with_input(argc, argv, a, true, "servesim trace import IN [options] -o OUT.h5", out)) {
    return 0;
  }
  PathPlan paths;
  paths.input("input", a.input);
  paths.input("config", a.config);
  paths.output("output", a.output);
  paths.check();
  const auto start = std::chrono::steady_clock::now();
  const Trace t = load(a);
  write_trace_h5(a.output, t);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(a.output, ec);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu requests (%s) -> %s, %.1f MB, in %.2f s\n",
                a.input.c_str(), t.size(), t.format.c_str(), a.output.c_str(),
                ec ? 0.0 : double(bytes) / 1e6, seconds);
  out << buf << trace_text(t) << "\n";
  report_skips(out, t);
  return 0;
}

int cmd_info(int argc, const char* const* argv, std::ostream& out) {
  TraceCommandArgs a;
  if (!parse_with_input(argc, argv, a, false, "servesim trace info FILE [options]", out)) {
    return 0;
  }
  const Trace t = load(a);
  print_trace_info(out, t, trace_info(t));
  return 0;
}

int cmd_synth(int argc, const char* const* argv, std::ostream& out) {
  TraceCommandArgs a;
  int64_t num_requests = 0;
  std::string input_len, output_len;
  po::options_description desc("synthetic workload (as `servesim run`)");
  desc.add_options()("num-requests", po::value(&num_requests)->default_value(kDefaultNumRequests),
                     "requests")("input-len",
                                 po::value(&input_len)->default_value(kDefaultInputLen),
                                 "prompt tokens (forms as in `servesim run --help`)")(
      "output-len", po::value(&output_len)->default_value(kDefaultOutputLen), "output tokens");
  desc.add(common(a, true));
  po::variables_map vm;
  if (!parse_command(argc, argv, desc, vm, out, "servesim trace synth [options] -o OUT.h5")) {
    return 0;
  }
  if (a.seed < 0) throw Error("seed", "must be >= 0");
  PathPlan paths;
  paths.input("config", a.config);
  paths.output("output", a.output);
  paths.check();
  for (const auto& [name, value] : vm) {
    if (!value.defaulted() &&
        run_flag_group(FlagGroup::kTraceInput, a.t).find_nothrow(name, false)) {
      throw Error(name, "has no effect on generated requests: it says how to read a trace file");
    }
  }
  SyntheticOptions w;
  w.num_requests = num_requests;
  w.request_rate = a.request_rate.empty() ? kDefaultRate : parse_rate(a.request_rate);
  w.burstiness = a.burstiness;
  w.input_len = LengthDist::parse(input_len, "input-len");
  w.output_len = LengthDist::parse(output_len, "output-len");
  w.seed = uint64_t(a.seed);
  Trace t = from_workload(generate_synthetic(w));
  t.format = "synthetic";
  t.options = synthetic_text(w);
  apply_transforms(t, transforms(a, 0));
  write_trace_h5(a.output, t);
  out << "wrote " << t.size() << " requests (" << t.options << ") to " << a.output << "\n";
  return 0;
}

}  // namespace

int cmd_trace(int argc, const char* const* argv, std::ostream& out) {
  const std::string sub = argc >= 2 ? argv[1] : "";
  if (sub == "import") return cmd_import(argc - 1, argv + 1, out);
  if (sub == "info") return cmd_info(argc - 1, argv + 1, out);
  if (sub == "synth") return cmd_synth(argc - 1, argv + 1, out);
  if (sub == "--help" || sub == "-h") {
    out << kTraceUsage;
    return 0;
  }
  throw Error("trace", "expected import, info or synth, got '" + sub + "'\n" + kTraceUsage);
}

}  // namespace servesim::cli
