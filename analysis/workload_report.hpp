// The workload section of reports (`run`'s summary line and the JSON summary's
// config.workload): where the requests came from and where every row of a trace went.
// Promises: pure functions of their inputs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "traces/synthetic.hpp"
#include "traces/trace.hpp"

namespace servesim {

nlohmann::ordered_json trace_json(const Trace& t);
std::string trace_text(const Trace& t);
nlohmann::ordered_json synthetic_json(const SyntheticOptions& w);
std::string synthetic_text(const SyntheticOptions& w);

}  // namespace servesim
