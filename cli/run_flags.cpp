#include "cli/run_flags.hpp"

#include <algorithm>
#include <cstdio>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "cli/common.hpp"
#include "cli/run_flag_table.hpp"
#include "util/error.hpp"

namespace servesim::cli {

namespace {

using namespace run_flag_table;  // NOLINT: the table's types are this file's vocabulary

// A field's value as a parser writes it in place, and the mark that it was given (nothing for
// a field whose default is never told apart from the same value given).
template <class T>
T& raw(T& field) {
  return field;
}
template <class T>
T& raw(Given<T>& field) {
  return field.value();
}
template <class T>
using Raw = std::remove_reference_t<decltype(raw(std::declval<T&>()))>;
template <class T>
void mark_given(T&) {}
template <class T>
void mark_given(Given<T>& field) {
  field.mark_given();
}
// Whether B binds a field of type T, given-tracked or not.
template <class T>
bool binds(const Binding& b) {
  return std::holds_alternative<Plain<T>>(b) || std::holds_alternative<Plain<Given<T>>>(b);
}

// The flags of `run` that say where results go: not part of a run, refused in a point.
const std::set<std::string>& output_flags() {
  static const std::set<std::string> flags = {"out",      "json",   "requests-csv", "period-s",
                                              "no-steps", "config", "help"};
  return flags;
}

const RunFlag* find_flag(const std::string& name) {
  for (const RunFlag& f : run_flags()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const RunFlag& flag_or_error(const std::string& name) {
  const RunFlag* f = find_flag(name);
  if (f == nullptr) throw Error(name, "not a flag of `servesim run` (see servesim run --help)");
  return *f;
}

const char* group_caption(FlagGroup g) {
  switch (g) {
    case FlagGroup::kHardware:
      return "model and hardware";
    case FlagGroup::kScheduler:
      return "scheduler";
    case FlagGroup::kWorkload:
      return "workload: a trace (--trace) or synthetic, as vLLM's benchmark_serving.py draws it";
    case FlagGroup::kTraceInput:
      return "trace input";
    case FlagGroup::kMetrics:
      return "metrics (vLLM benchmark_serving.py's)";
    case FlagGroup::kWhatIf:
      break;
  }
  return "what-if transforms (in this order; --request-rate rescales a timed trace to that mean "
         "rate)";
}

// How --help shows a default value.
std::string default_text(const std::string& v) {
  return v;
}
std::string default_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
template <class T>
std::string default_text(T v) {
  return std::to_string(v);
}
std::string default_text(const LengthDist& v) {
  return v.spec;
}

// VALUE of NAME as Program_options reads it on a command line, so that errors read the same.
template <class T>
T parse_plain(const std::string& name, const std::string& value) {
  T v{};
  po::options_description d;
  if constexpr (std::is_same_v<T, bool>) {
    d.add_options()(name.c_str(), po::bool_switch(&v));
  } else {
    d.add_options()(name.c_str(), po::value(&v));
  }
  std::vector<std::string> args = {"--" + name};
  if (!std::is_same_v<T, bool>) args.push_back(value);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
  return v;
}

RunSpec& defaults() {
  static RunSpec d;  // only read
  return d;
}

// Each binding's option, bound to TARGET (bind), and its typed patch from one value (patch).
// An option writes its value in place (its default too, when not given); mark_given_flags then
// marks what the command line gave. A patch's value is given.
template <class T>
po::value_semantic* bind(const Plain<T>& b, const RunFlag& f, RunSpec& target) {
  using V = Raw<T>;
  V& field = raw(b.field(target));
  if constexpr (std::is_same_v<V, bool>) {
    return po::bool_switch(&field);
  } else {
    auto* v = po::value(&field);
    if (!f.show_default) return v;
    const V value = raw(b.field(defaults()));
    return v->default_value(value, default_text(value));
  }
}
template <class T>
RunPatch patch(const Plain<T>& b, const std::string& name, const std::string& value) {
  return [field = b.field, v = parse_plain<Raw<T>>(name, value)](RunSpec& s) { field(s) = v; };
}

po::value_semantic* bind(const Rate& b, const RunFlag& f, RunSpec& target) {
  auto* v = po::value<std::string>()->notifier(
      [&target, b](const std::string& text) { b.field(target).value() = parse_rate(text); });
  return f.show_default ? v->default_value(default_text(*b.field(defaults()))) : v;
}
RunPatch patch(const Rate& b, const std::string&, const std::string& value) {
  return [field = b.field, v = parse_rate(value)](RunSpec& s) { field(s) = v; };
}

po::value_semantic* bind(const Length& b, const RunFlag& f, RunSpec& target) {
  const std::string name = f.name;
  auto* v = po::value<std::string>()->notifier([&target, b, name](const std::string& text) {
    b.field(target).value() = LengthDist::parse(text, name);
  });
  return f.show_default ? v->default_value(default_text(*b.field(defaults()))) : v;
}
RunPatch patch(const Length& b, const std::string& name, const std::string& value) {
  return [field = b.field, v = LengthDist::parse(value, name)](RunSpec& s) { field(s) = v; };
}

po::value_semantic* bind(const Window&, const RunFlag&, RunSpec& target) {
  return po::value<std::string>()->notifier(
      [&target](const std::string& v) { parse_window(v, target.what_if); });
}
RunPatch patch(const Window&, const std::string&, const std::string& value) {
  TransformOptions w;
  parse_window(value, w);
  return [w](RunSpec& s) {
    s.what_if.has_window = w.has_window;
    s.what_if.window_start_s = w.window_start_s;
    s.what_if.window_end_s = w.window_end_s;
  };
}

po::value_semantic* bind(const OptionalBool& b, const RunFlag&, RunSpec& target) {
  return po::value(&b.field(target).value())->implicit_value(true, "true");
}
RunPatch patch(const OptionalBool& b, const std::string& name, const std::string& value) {
  bool v = true;
  if (!value.empty()) {
    po::options_description d;
    d.add_options()(name.c_str(), po::value(&v));
    po::variables_map vm;
    po::store(
        po::command_line_parser(std::vector<std::string>{"--" + name, value}).options(d).run(), vm);
    po::notify(vm);
  }
  return [field = b.field, v](RunSpec& s) { field(s) = v; };
}

po::value_semantic* bind(const Goodput&, const RunFlag&, RunSpec& target) {
  return po::value<std::vector<std::string>>()->multitoken()->notifier(
      [&target](const std::vector<std::string>& words) {
        std::string text;
        for (const std::string& w : words)
          text.append(text.empty() ? "" : " ").append(w);
        target.goodput = parse_goodput(text);
      });
}
RunPatch patch(const Goodput&, const std::string&, const std::string& value) {
  return [v = parse_goodput(value)](RunSpec& s) { s.goodput = v; };
}

po::value_semantic* bind(const Percentiles&, const RunFlag&, RunSpec& target) {
  return po::value<std::string>()->notifier(
      [&target](const std::string& text) { target.metric_percentiles = parse_percentiles(text); });
}
RunPatch patch(const Percentiles&, const std::string&, const std::string& value) {
  return [v = parse_percentiles(value)](RunSpec& s) { s.metric_percentiles = v; };
}

po::value_semantic* bind(const GpuGroups&, const RunFlag&, RunSpec& target) {
  return po::value<std::string>()->notifier(
      [&target](const std::string& text) { target.replica_gpus = parse_replica_gpus(text); });
}
RunPatch patch(const GpuGroups&, const std::string&, const std::string& value) {
  return [v = parse_replica_gpus(value)](RunSpec& s) { s.replica_gpus = v; };
}

// F's option, bound to TARGET.
po::value_semantic* semantic(const RunFlag& f, RunSpec& target) {
  return std::visit([&](const auto& b) { return bind(b, f, target); }, f.binding);
}

}  // namespace

po::options_description run_flag_group(FlagGroup g, RunSpec& target) {
  po::options_description d(group_caption(g));
  for (const RunFlag& f : run_flags()) {
    if (f.group != g || std::string(f.name) == "scheduler") continue;
    d.add_options()(f.name, semantic(f, target), f.help);
  }
  return d;
}

void mark_given_flags(const po::variables_map& vm, RunSpec& target) {
  for (const auto& [name, value] : vm) {
    const RunFlag* f = find_flag(name);
    if (f == nullptr || value.defaulted()) continue;
    std::visit(
        [&](const auto& b) {
          if constexpr (requires { b.field(target); }) mark_given(b.field(target));
        },
        f->binding);
  }
}

bool run_flag_is_switch(const std::string& name) {
  if (output_flags().count(name)) return name == "no-steps" || name == "help";
  return binds<bool>(flag_or_error(name).binding);
}

bool run_flag_is_numeric(const std::string& name) {
  if (output_flags().count(name)) return false;
  const Binding& b = flag_or_error(name).binding;
  return binds<int>(b) || binds<int64_t>(b) || binds<double>(b) || std::holds_alternative<Rate>(b);
}

bool run_flag_is_path(const std::string& name) {
  return name == "trace" || name == "gpu-file" || name == "model-file" || name == "calibration" ||
         name == "profiles" || name == "servegen";
}

bool run_flag_is_list(const std::string& name) {
  return name == "servegen" || name == "replica-gpus" || name == "client-mix" ||
         name == "calibration" || name == "metric-percentiles";
}

char run_flag_separator(const std::string& name) {
  return run_flag_is_list(name) ? '|' : ',';
}

std::vector<std::string> run_flag_names() {
  std::vector<std::string> names;
  for (const RunFlag& f : run_flags())
    names.emplace_back(f.name);
  return names;
}

RunPatch parse_run_flag(const std::string& name, const std::string& value) {
  if (output_flags().count(name)) {
    throw Error(name, "not allowed in a point: the command writes the results");
  }
  if (name == "num-seeds" || name == "metric-percentiles") {
    throw Error(name,
                "has no effect on a point: its table has fixed columns (for replicates, "
                "sweep --seed LO:HI:1)");
  }
  return std::visit([&](const auto& b) { return patch(b, name, value); },
                    flag_or_error(name).binding);
}

}  // namespace servesim::cli
