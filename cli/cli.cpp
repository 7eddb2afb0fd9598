#include "cli/cli.hpp"

#include <boost/program_options.hpp>
#include <new>
#include <string>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "util/distributed.hpp"
#include "util/error.hpp"

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
    "  list      list gpus | models | schedulers\n"
    "\n"
    "`servesim <command> --help` describes a command's options.\n";

}  // namespace

namespace {

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
    if (command == "run") return cmd_run(argc - 1, argv + 1, out);
    if (command == "compare") return cmd_compare(argc - 1, argv + 1, out);
    if (command == "list") return cmd_list(argc - 1, argv + 1, out);
    if (command == "diagnose") return cmd_diagnose(argc - 1, argv + 1, out);
    if (command == "sweep") return cmd_sweep(argc - 1, argv + 1, out);
    if (command == "capacity") return cmd_capacity(argc - 1, argv + 1, out);
    if (command == "check") return cmd_check(argc - 1, argv + 1, out);
    if (command == "trace") return cmd_trace(argc - 1, argv + 1, out);
    if (command == "calibrate") return cmd_calibrate(argc - 1, argv + 1, out);
    if (command == "fidelity") return cmd_fidelity(argc - 1, argv + 1, out);
    if (command == "validate") return cmd_validate(argc - 1, argv + 1, out);
    if (command == "--help" || command == "-h" || command == "help") {
      out << kUsage;
      return 0;
    }
    err << "servesim: unknown command '" << command
        << "' (commands: run, compare, trace, calibrate, fidelity, diagnose, sweep, capacity, "
           "check, "
           "list; see servesim --help)\n";
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
