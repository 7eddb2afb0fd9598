// _servesim: the C++ half of servesim's Python module (python/servesim/ is the rest). It runs any
// servesim command exactly as the command line does (the same flags, checks, errors and output
// bytes: the Python half builds the arguments from keyword arguments and reads the files the
// command writes), with the GIL released while it runs, and hooks policies written in Python
// into run and compare: a waiting request's admission key, the preemption victim, a router's
// scores (scheduler/scheduling_hooks.hpp, sim/router.hpp RouterHook). A command's bad input
// raises servesim.Error with its file, line, field and reason; so does a policy's unusable
// answer (None, text, NaN, an id that is not running), naming the policy. The command runs on a
// thread of its own while the calling thread waits, looking every 50 ms for a signal Python has
// pending (only the main thread sees them): Ctrl-C asks every simulation to stop
// (util/cancel.hpp) and raises KeyboardInterrupt within a fraction of a second.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli.hpp"
#include "cli/run_capture.hpp"
#include "cli/run_flags.hpp"
#include "scheduler/scheduling_hooks.hpp"
#include "sim/router.hpp"
#include "util/cancel.hpp"
#include "util/error.hpp"

namespace py = pybind11;
using namespace servesim;

namespace {

// The fields a request arrives with, as every policy sees them.
py::dict arrival_fields(uint32_t id, double arrival_s, int64_t input_tokens, int64_t output_tokens,
                        int32_t priority, uint16_t lora) {
  py::dict d;
  d["id"] = id;
  d["arrival_s"] = arrival_s;
  d["input_tokens"] = input_tokens;
  d["output_tokens"] = output_tokens;
  d["priority"] = priority;
  d["lora"] = lora;
  return d;
}

// A scheduled request's fields: those it arrived with and its progress.
py::dict request_fields(uint32_t id, const SeqState& s) {
  py::dict d =
      arrival_fields(id, s.workload_arrival_s, s.input_tokens, s.output_tokens, s.priority, s.lora);
  d["generated"] = s.generated;
  d["num_computed_tokens"] = s.num_computed_tokens;
  d["preemptions"] = s.preemptions;
  return d;
}

// What a policy returned (V), for its error: "None", "'text'", "nan", ...
std::string returned(const py::handle& v) {
  std::string r = py::repr(v).cast<std::string>();
  if (r.size() > 80) r = r.substr(0, 77) + "...";
  return r;
}

// V, which policy FIELD returned, as a finite number; an Error naming FIELD if it is not one
// (None, text, a list, NaN, inf). WHAT says what was expected.
double finite_number(const char* field, const py::handle& v, const char* what) {
  if (v.is_none() || PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr()) ||
      !PyNumber_Check(v.ptr())) {
    throw Error(field, "returned " + returned(v) + "; expected " + what);
  }
  const double x = PyFloat_AsDouble(v.ptr());
  if (x == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw Error(field, "returned " + returned(v) + "; expected " + what);
  }
  if (!std::isfinite(x)) {
    throw Error(field, "returned " + returned(v) + "; expected " + what + " (finite: NaN and " +
                           "inf do not order)");
  }
  return x;
}

// Policies written in Python: each of KEY(request) -> number, VICTIM(running requests) -> the id
// of one of them, SCORE(request, replicas) -> one number per replica, or None.
class PyPolicies final : public SchedulingHooks, public RouterHook {
 public:
  PyPolicies(py::object key, py::object victim, py::object score)
      : key_(std::move(key)), victim_(std::move(victim)), score_(std::move(score)) {}
  ~PyPolicies() {
    py::gil_scoped_acquire gil;
    key_ = victim_ = score_ = py::object();
  }

  bool orders_admission() const override { return !key_.is_none(); }
  double admission_key(uint32_t id, const SeqState& s) const override {
    py::gil_scoped_acquire gil;
    return finite_number("admission_key", key_(request_fields(id, s)), "a number");
  }
  bool chooses_victim() const override { return !victim_.is_none(); }
  uint32_t preemption_victim(std::span<const uint32_t> running,
                             std::span<const SeqState> seqs) const override {
    py::gil_scoped_acquire gil;
    py::list requests;
    for (const uint32_t id : running)
      requests.append(request_fields(id, seqs[id]));
    const py::object v = victim_(requests);
    // An int (a numpy integer too), not a bool or a float that happens to be whole.
    if (v.is_none() || PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) {
      throw Error("preemption_victim",
                  "returned " + returned(v) + "; expected a running request's id (an int)");
    }
    const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
    if (!index) throw py::error_already_set();  // its __index__ raised
    int overflow = 0;  // an id too large for a long long is not running either
    const long long id = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    for (const uint32_t r : running) {
      if (overflow == 0 && static_cast<long long>(r) == id) return r;
    }
    throw Error("preemption_victim",
                "returned " + returned(v) + ", which is not the id of a running request");
  }
  void score(const RequestSpec& r, std::span<const ReplicaLoad> loads,
             std::span<double> scores) override {
    py::gil_scoped_acquire gil;
    const py::dict request =
        arrival_fields(r.id, r.arrival_s, r.input_tokens, r.output_tokens, r.priority, r.lora);
    py::list replicas;
    for (const ReplicaLoad& l : loads) {
      py::dict d;
      d["outstanding"] = l.outstanding;
      d["waiting"] = l.waiting;
      d["kv_usage"] = l.kv_usage;
      replicas.append(d);
    }
    const py::object s = score_(request, replicas);
    const char* what = "one number per replica (a list)";
    if (s.is_none() || PyUnicode_Check(s.ptr()) || PyBytes_Check(s.ptr()) ||
        PyDict_Check(s.ptr()) || !PySequence_Check(s.ptr())) {
      throw Error("router_score", "returned " + returned(s) + "; expected " + what);
    }
    const py::sequence seq = py::reinterpret_borrow<py::sequence>(s);
    if (seq.size() != scores.size()) {
      throw Error("router_score", "returned " + std::to_string(seq.size()) + " scores for " +
                                      std::to_string(scores.size()) + " replicas");
    }
    for (size_t i = 0; i < scores.size(); ++i)
      scores[i] = finite_number("router_score", seq[i], "a number for each replica");
  }
  bool routes() const { return !score_.is_none(); }

 private:
  py::object key_, victim_, score_;
};

// What a command left to raise once the GIL is held again.
struct Failure {
  std::string message, file, field;
  std::string field_path;  // the setting's path (util/field_path.hpp), or FIELD where none
  std::string reason;
  int line = 0;
  bool internal = false;
  std::exception_ptr python;  // a policy's own exception, raised as it was
};

// Runs ARGS with HOOKS into OUT and STATUS, any failure caught into FAILURE (on the command's own
// thread: nothing may escape it).
void run_caught(const std::vector<std::string>& args, std::ostringstream& out,
                const cli::RunHooks* hooks, int& status, std::optional<Failure>& failure) {
  try {
    status = run_command(args, out, hooks);
  } catch (const Error& e) {
    failure =
        Failure{e.what(), e.file(), e.field(), e.path(), e.reason(), e.line(), false, nullptr};
  } catch (const py::error_already_set&) {
    failure = Failure{};
    failure->python = std::current_exception();
  } catch (const std::bad_alloc&) {
    failure = Failure{};
    failure->message = "not enough memory for this input";
  } catch (const std::exception& e) {  // Cancelled too: the caller raises KeyboardInterrupt
    failure = Failure{};
    failure->message = e.what();
    failure->internal = true;
  }
}

// Runs servesim command ARGS (ARGS[0] the command, as after the program name) and returns what it
// prints; KEY, VICTIM and SCORE are Python policies (None: vLLM's); CAPTURE (run and compare):
// where their results and JSON go instead of files. The GIL is released while it runs and taken
// back for each policy call, and every 50 ms to look for Ctrl-C.
std::pair<int, std::string> command(const std::vector<std::string>& args, py::object key,
                                    py::object victim, py::object score,
                                    cli::RunCapture* capture = nullptr) {
  if (args.empty()) throw py::value_error("no command");
  std::optional<PyPolicies> policies;
  cli::RunHooks hooks;
  hooks.capture = capture;
  if (!key.is_none() || !victim.is_none() || !score.is_none()) {
    policies.emplace(std::move(key), std::move(victim), std::move(score));
    if (policies->orders_admission() || policies->chooses_victim()) hooks.scheduling = &*policies;
    if (policies->routes()) hooks.router = &*policies;
  }
  std::ostringstream out;
  int status = 0;
  std::optional<Failure> failure;
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread worker([&] {
      run_caught(args, out, policies || capture ? &hooks : nullptr, status, failure);
      const std::lock_guard<std::mutex> lock(m);
      done = true;
      cv.notify_one();
    });
    for (std::unique_lock<std::mutex> lock(m);
         !cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; });) {
      lock.unlock();
      {
        py::gil_scoped_acquire gil;
        // PyErr_CheckSignals runs the handlers; KeyboardInterrupt stays set on this thread,
        // raised below once the run has stopped.
        if (!interrupted && PyErr_CheckSignals() != 0) {
          interrupted = true;
          request_cancel();
        }
      }
      lock.lock();
    }
    worker.join();
    clear_cancel();
  }
  if (interrupted) throw py::error_already_set();
  if (!failure) return {status, out.str()};
  if (failure->python) std::rethrow_exception(failure->python);
  if (failure->internal) throw std::runtime_error("servesim internal error: " + failure->message);
  py::object error = py::module_::import("servesim.errors").attr("Error");
  PyErr_SetObject(error.ptr(), error(failure->message, failure->file, failure->line, failure->field,
                                     failure->reason, failure->field_path)
                                   .ptr());
  throw py::error_already_set();
}

// V as a numpy array that owns V's storage (no copy).
template <class T>
py::array numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  const py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(py::ssize_t(owned->size()), owned->data(), owner);
}

// TABLE's columns by name, in the order written.
py::dict columns(ResultsTable& table) {
  py::dict d;
  for (auto& column : table.columns)
    d[py::str(column.first)] =
        std::visit([](auto& v) { return numpy(std::move(v)); }, column.second);
  return d;
}

// A run's results as the layout of a results file (analysis/results.hpp): its attributes, and
// each table as {column: numpy array}.
py::dict run_dict(RunImage& r) {
  py::dict d;
  d["label"] = r.label;
  d["baseline_otps"] = r.baseline_otps;
  d["rejection_heavy"] = r.rejection_heavy;
  d["overloaded"] = r.overloaded;
  d["summary"] = r.summary_json;
  d["status_codes"] = r.status_codes;
  d["requests"] = columns(r.requests);
  if (r.steps) d["steps"] = columns(*r.steps);
  d["windows"] = columns(r.windows);
  d["itl"] = columns(r.itl);
  return d;
}

// `servesim run` or `compare` ARGS without --out or --json files: (status, what it printed, its
// JSON text, its results as a results file holds them).
py::tuple captured(const std::vector<std::string>& args, py::object key, py::object victim,
                   py::object score) {
  cli::RunCapture capture;
  const auto [status, text] =
      command(args, std::move(key), std::move(victim), std::move(score), &capture);
  if (!capture.results) return py::make_tuple(status, text, capture.json, py::none());
  ResultsImage& image = *capture.results;
  py::dict header;
  header["runs"] = image.header.runs;
  header["period_s"] = image.header.period_s;
  header["workload"] = image.header.workload_json;
  header["alarm_fraction"] = image.header.alarm_fraction;
  header["alarm_baseline_run"] = image.header.alarm_baseline_run;
  header["alarm_threshold_otps"] = image.header.alarm_threshold_otps;
  py::list runs;
  for (RunImage& r : image.runs)
    runs.append(run_dict(r));
  header["run_groups"] = runs;
  return py::make_tuple(status, text, capture.json, header);
}

}  // namespace

PYBIND11_MODULE(_servesim, m) {
  m.doc() = "servesim's C++ core: every command as the command line runs it.";
  m.def(
      "command",
      [](const std::vector<std::string>& args, py::object key, py::object victim,
         py::object score) {
        return command(args, std::move(key), std::move(victim), std::move(score));
      },
      py::arg("args"), py::arg("admission_key") = py::none(),
      py::arg("preemption_victim") = py::none(), py::arg("router_score") = py::none(),
      "Runs a servesim command (args[0] is the command, as after the program name): returns "
      "(exit status, what it printed). Raises servesim.Error on bad input.");
  m.def("captured", &captured, py::arg("args"), py::arg("admission_key") = py::none(),
        py::arg("preemption_victim") = py::none(), py::arg("router_score") = py::none(),
        "Runs `servesim run` or `compare` (args[0]) with its results kept in memory: returns "
        "(exit status, what it printed, its --json text, a dict of its --out file's attributes "
        "and tables as numpy arrays, or None). Raises servesim.Error on bad input.");
  m.def(
      "flag_kind",
      [](const std::string& name) -> std::string {
        if (cli::run_flag_is_switch(name)) return "switch";
        return cli::run_flag_is_numeric(name) ? "number" : "text";
      },
      "A run flag's kind (switch, number or text); raises servesim.Error for no such flag.");
  m.def(
      "flag_separator",
      [](const std::string& name) { return std::string(1, cli::run_flag_separator(name)); },
      "What separates a run flag's values in a sweep or capacity list: '|' for a flag whose one "
      "value is itself a comma list (--replica-gpus), else ','.");
}
