// The workload section of reports (`run`'s summary line and the JSON summary's
// config.workload): where the requests came from and where every row of a trace went.
// Promises: pure functions of their inputs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "traces/import.hpp"
#include "traces/synthetic.hpp"
#include "traces/trace.hpp"
#include "traces/transform.hpp"

namespace servesim {

nlohmann::ordered_json trace_json(const Trace& t);
std::string trace_text(const Trace& t);
nlohmann::ordered_json synthetic_json(const SyntheticOptions& w);
// The what-if transforms and a trace's import options as used, value by value (the "options"
// text says them as flags): every one, at its default too, so that a value given is found.
nlohmann::ordered_json transforms_json(const TransformOptions& o);
nlohmann::ordered_json import_json(const ImportOptions& o);
std::string synthetic_text(const SyntheticOptions& w);

}  // namespace servesim
