#include "cli/cli.hpp"

#include <boost/program_options.hpp>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/field_spellings.hpp"
#include "util/distributed.hpp"
#include "util/error.hpp"
#include "util/provenance.hpp"

namespace servesim {

using namespace cli;
namespace po = boost::program_options;

namespace {

const char* kUsage =
    "usage: servesim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run       simulate one scheduler on one workload and print a summary\n"
    "  compare   simulate several schedulers on the same requests, one row each\n"
    "            (with no flags: a built-in default scenario)\n"
    "  trace     import | info | synth: read, inspect and write trace files\n"
    "  calibrate fit the roofline cost model to Vidur profiles or a measured step log\n"
    "  fidelity  compare cost models with measured step times (Vidur profiles)\n"
    "  validate  replay measured vLLM runs (a ground-truth CSV) and report the prediction errors\n"
    "  diagnose  split a latency change into TTFT and OTPS, with a verdict and the OTPS alarm\n"
    "  sweep     run a grid of configurations in parallel into one table (HDF5/CSV)\n"
    "  capacity  the highest request rate a configuration sustains under an SLO\n"
    "  check     the CI gate: run scenarios, compare with a baseline, exit 1 on regression\n"
    "  report    one self-contained HTML page of results files (python/servesim/report)\n"
    "  list      list gpus | models | schedulers\n"
    "\n"
    "`servesim <command> --help` describes a command's options.\n";

int run_spelled(int argc, const char* const* argv, std::ostream& out, const RunHooks* hooks);

// The command ARGV[0] with its arguments, as run_cli runs it; -1 where there is no such command.
// HOOKS: policies chosen outside servesim, for run and compare only. Every flag is also taken
// under its underscore spelling, as vLLM's parser takes it (issue 42); an error names the flag
// as the user spelled it.
int run_named(int argc, const char* const* raw, std::ostream& out, const RunHooks* hooks) {
  install_field_spellings();
  const CommandScope recorded(argc, raw);  // as the user spelled it
  const std::vector<std::string> args = vllm_spellings(argc, raw);
  std::map<std::string, std::string> typed;  // dashed name -> the user's
  std::vector<const char*> spelled;
  for (int i = 0; i < argc; ++i) {
    spelled.push_back(args[size_t(i)].c_str());
    if (args[size_t(i)] == raw[i]) continue;
    const std::string a = args[size_t(i)], r = raw[i];
    typed[a.substr(2, a.find('=') - 2)] = r.substr(2, r.find('=') - 2);
  }
  try {
    return run_spelled(argc, spelled.data(), out, hooks);
  } catch (const Error& e) {
    const auto it = typed.find(e.field());
    if (it == typed.end()) throw;
    throw e.named(it->second);
  } catch (po::error_with_option_name& e) {
    std::string name = e.get_option_name();
    while (!name.empty() && name.front() == '-')
      name.erase(0, 1);
    const auto it = typed.find(name);
    if (it != typed.end()) {
      // An unknown option is named by its token, a known one by its name.
      e.set_original_token("--" + it->second);
      if (!e.get_option_name().empty() && e.get_option_name() != "--" + it->second) {
        e.set_option_name(it->second);
      }
    }
    throw;
  }
}

int run_spelled(int argc, const char* const* argv, std::ostream& out, const RunHooks* hooks) {
  const std::string c = argv[0];
  if (c == "run") return cmd_run(argc, argv, out, hooks);
  if (c == "compare") return cmd_compare(argc, argv, out, hooks);
  if (hooks != nullptr) {
    throw Error("policies",
                "policies written outside servesim run in run and compare, not in " + c);
  }
  if (c == "list") return cmd_list(argc, argv, out);
  if (c == "diagnose") return cmd_diagnose(argc, argv, out);
  if (c == "sweep") return cmd_sweep(argc, argv, out);
  if (c == "capacity") return cmd_capacity(argc, argv, out);
  if (c == "check") return cmd_check(argc, argv, out);
  if (c == "trace") return cmd_trace(argc, argv, out);
  if (c == "calibrate") return cmd_calibrate(argc, argv, out);
  if (c == "fidelity") return cmd_fidelity(argc, argv, out);
  if (c == "validate") return cmd_validate(argc, argv, out);
  if (c == "report") return cmd_report(argc, argv, out);
  return -1;
}

int dispatch(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  if (argc < 2) {
    err << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  try {
    if (mpi::world().distributed() && command != "sweep" && command != "capacity") {
      throw Error("mpirun", "only sweep and capacity spread their points over MPI ranks; run " +
                                command + " as one process");
    }
    const int status = run_named(argc - 1, argv + 1, out, nullptr);
    if (status >= 0) return status;
    if (command == "--help" || command == "-h" || command == "help") {
      out << kUsage;
      return 0;
    }
    err << "servesim: unknown command '" << command
        << "' (commands: run, compare, trace, calibrate, fidelity, diagnose, sweep, capacity, "
           "check, "
           "report, list; see servesim --help)\n";
    return 2;
  } catch (const Error& e) {
    err << "servesim " << command << ": error: " << e.what() << "\n";
    return 2;
  } catch (const po::error& e) {
    err << "servesim " << command << ": error: " << po_error_text(e) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "servesim " << command << ": error: not enough memory for this input\n";
    return 2;
  } catch (const std::exception& e) {
    err << "servesim " << command << ": internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace

int run_command(const std::vector<std::string>& args, std::ostream& out,
                const cli::RunHooks* hooks) {
  if (args.empty()) throw Error("command", "none given");
  std::vector<const char*> argv;
  for (const std::string& a : args)
    argv.push_back(a.c_str());
  try {
    const int status = run_named(int(argv.size()), argv.data(), out, hooks);
    if (status < 0) throw Error("command", "'" + args.front() + "' is not a servesim command");
    return status;
  } catch (const po::error& e) {
    const auto* named = dynamic_cast<const po::error_with_option_name*>(&e);
    std::string field = named != nullptr ? named->get_option_name() : "";
    while (!field.empty() && field.front() == '-')
      field.erase(0, 1);
    throw Error(field, po_error_text(e));
  }
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  int status = dispatch(argc, argv, out, err);
  // A report that could not be written is a failed command, not a success.
  out.flush();
  if (!out && status == 0) {
    err << "servesim: error: cannot write the report to standard output\n";
    status = 2;
  }
  // Under mpirun an error on one rank must end them all: the others may be waiting for it.
  if (status != 0 && mpi::world().distributed()) {
    err << "servesim: rank " << mpi::world().rank << " of " << mpi::world().size
        << " stops the MPI job\n";
    err.flush();
    mpi::abort_all(status);
  }
  return status;
}

}  // namespace servesim
