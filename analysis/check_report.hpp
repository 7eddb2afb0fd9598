// The CI gate's reports (`servesim check`, check_run.hpp's outcome): the terminal's table
// (scenario, metric, baseline, current, change, its interval, tolerance, verdict and note), its
// last line (passed or FAILED, with the counts), a warning per scenario whose configuration
// differs from its baseline's, and each regressed scenario's cause; --json (every line with its
// numbers, the configuration changes and the causes); --junit (one test case per scenario and
// metric, classname the scenario: a regression is a failure, a new scenario skipped).
// Promises: each report depends only on the spec and the outcome.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/check.hpp"
#include "analysis/check_run.hpp"

namespace servesim {

// The terminal's report of OUTCOME under SPEC.
std::string check_text(const CheckSpec& spec, const CheckOutcome& outcome);
// --update's line: SPEC's baseline rewritten with RUNS runs.
std::string check_updated_text(const CheckSpec& spec, size_t runs);
// --json's document (indented, ending in a line break).
std::string check_json(const CheckSpec& spec, const CheckOutcome& outcome);
// --junit's XML.
std::string check_junit(const std::vector<CheckLine>& lines);

}  // namespace servesim
