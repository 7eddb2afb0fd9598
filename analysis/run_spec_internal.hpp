// Shared by analysis/run_spec.cpp, run_config.cpp and run_workload.cpp only.
#pragma once

#include <initializer_list>
#include <span>
#include <string>

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

// A setting by its flag's name (for messages), and whether it was given.
struct Setting {
  const char* flag;
  bool given;
};
// Error naming the first of SETTINGS that was given, with MESSAGE: a flag that would do nothing.
void refuse_given(std::initializer_list<Setting> settings, const std::string& message);

}  // namespace servesim
