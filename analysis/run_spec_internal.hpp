// Shared by analysis/run_spec.cpp and run_workload.cpp only.
#pragma once

#include <span>

#include "traces/import.hpp"

namespace servesim {

// A setting of how to read a trace file: its flag (for messages), the format it is for ("" =
// any), and whether OPTIONS set it (away from ImportOptions' default: an import option at its
// default reads every trace as it would without it).
struct TraceImportSetting {
  const char* flag;
  const char* format;
  bool (*set)(const ImportOptions& options);
};
std::span<const TraceImportSetting> trace_import_settings();

}  // namespace servesim
