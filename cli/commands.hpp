// The commands of `servesim`, one function each (cli/cli.cpp dispatches to them). Each takes its
// arguments without the program name (argv[0] is the command), writes to OUT, returns the exit
// status, and throws Error (or a Program_options error) for bad input.
#pragma once

#include <ostream>
#include <string>

namespace servesim {
class SchedulingHooks;
class RouterHook;
}  // namespace servesim

namespace servesim::cli {

struct RunCapture;  // cli/run_capture.hpp

// A policy's choices made outside servesim (the Python module's policies), for run and compare:
// null members are vLLM's own. CAPTURE: where run and compare hand back their results and JSON
// summary in memory, as --out and --json would write them (null: files only).
struct RunHooks {
  const SchedulingHooks* scheduling = nullptr;
  RouterHook* router = nullptr;
  RunCapture* capture = nullptr;
};

int cmd_run(int argc, const char* const* argv, std::ostream& out,
            const RunHooks* hooks = nullptr);  // cmd_run.cpp
int cmd_compare(int argc, const char* const* argv, std::ostream& out,
                const RunHooks* hooks = nullptr);                    // cmd_run.cpp
int cmd_list(int argc, const char* const* argv, std::ostream& out);  // cmd_list.cpp
// `servesim trace import | info | synth`.
int cmd_trace(int argc, const char* const* argv, std::ostream& out);
int cmd_calibrate(int argc, const char* const* argv, std::ostream& out);  // cmd_calibrate.cpp
int cmd_fidelity(int argc, const char* const* argv, std::ostream& out);   // cmd_calibrate.cpp
int cmd_diagnose(int argc, const char* const* argv, std::ostream& out);
// `servesim sweep` and `servesim sweep merge`.
int cmd_sweep(int argc, const char* const* argv, std::ostream& out);
int cmd_capacity(int argc, const char* const* argv, std::ostream& out);
int cmd_check(int argc, const char* const* argv, std::ostream& out);
int cmd_validate(int argc, const char* const* argv, std::ostream& out);  // cmd_validate.cpp
int cmd_report(int argc, const char* const* argv, std::ostream& out);    // cmd_report.cpp

}  // namespace servesim::cli
