// Shared by analysis/run_spec.cpp and run_workload.cpp only.
#pragma once

#include <utility>

namespace servesim {

// The flags that say how to read a trace file, and the format each is for ("" = any).
extern const std::pair<const char*, const char*> kTraceImportFlags[11];

}  // namespace servesim
