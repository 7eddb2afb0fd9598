// The capacity command's report as text (`servesim capacity`'s standard output): a header line
// with the SLO, one row per configuration (scheduler, fleet, model, TP, GPUs, the capacity, each
// SLO term's value at capacity with `*` on the binding term, probes, dollars per million output
// tokens, and with --target-rate the replicas, the simulated fleet and its cost), each row's note
// (capacity_note) after it, and footnotes saying what the columns mean. The table written to
// --out/--csv is capacity.hpp's capacity_table.
// Promises: the text depends only on its arguments.
#pragma once

#include <string>
#include <vector>

#include "analysis/capacity.hpp"

namespace servesim {

// The SLO as the header line says it: SLO (--slo as written), then the goodput form of SPEC
// ("90% of requests with TTFT <= 500 ms and TPOT <= 50 ms") when it has one.
std::string capacity_slo_text(const std::string& slo, const CapacitySpec& spec);

// The report of RESULTS (in configuration order) under SPEC: TARGET is --target-rate (0: none),
// SLO the header's text (capacity_slo_text); DEFAULT_SCHEDULER adds kDefaultSchedulerNote (the
// run flags named no scheduler).
std::string capacity_text(const std::vector<CapacityResult>& results, const CapacitySpec& spec,
                          double target, const std::string& slo, bool default_scheduler);

}  // namespace servesim
