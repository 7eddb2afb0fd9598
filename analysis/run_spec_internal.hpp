// Shared by analysis/run_spec.cpp and run_workload.cpp only.
#pragma once

#include <span>
#include <utility>

namespace servesim {

// The flags that say how to read a trace file, and the format each is for ("" = any).
std::span<const std::pair<const char*, const char*>> trace_import_flags();

}  // namespace servesim
