#include "cli/field_spellings.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "cli/run_flag_table.hpp"
#include "util/field_path.hpp"

namespace servesim::cli {

namespace {

// A path and its flag (a message refers to it as "--" + flag).
struct Spelling {
  const char* path;
  const char* flag;
};

// The paths whose flag is not a run flag (a run flag's path is in its row of the run flag
// table, cli/run_flag_table.cpp): a command's own flags and keys inside JSON-valued flags. (A path
// without a flag is a test failure: test_field_paths.)
constexpr Spelling kSpellings[] = {
    {field::kNumSpeculativeTokens, "speculative-config.num_speculative_tokens"},
    {field::kSpeculativeModel, "speculative-config.model"},
    {field::kStepLog, "step-log"},
    {field::kAutoscaleTolerance, "autoscale-tolerance"},
    {field::kPeriodS, "period-s"},
    {field::kDiagnoseTolerance, "tolerance"},
    {field::kAlarmFraction, "alarm-fraction"},
    {field::kEvaluationPeriods, "evaluation-periods"},
    {field::kDatapointsToAlarm, "datapoints"},
    {field::kInterval, "interval"},
    {field::kMetricsAs, "metrics-as"},
    {field::kTargetScale, "target-scale"},
    {field::kShard, "shard"},
    {field::kOut, "out"},
    {field::kTimelineWindow, "timeline-window"},
    {field::kDraftTensorParallelSize, "speculative-config.draft_tensor_parallel_size"},
    {field::kJobs, "jobs"},
    {field::kSlo, "slo"},
    {field::kGpuHourCost, "gpu-hour-cost"},
    {field::kSizeGroup, "size-group"},
    {field::kTargetRate, "target-rate"},
    {field::kRateStart, "rate-start"},
    {field::kRateMax, "rate-max"},
    {field::kOverTime, "over-time"},
    {field::kExperiment, "experiment"},
    {field::kValidateMetric, "metric"},
    {field::kCheckUpdate, "update"},
};

// PATH's flag: a run flag's, else a command's own; null for none.
const char* find_flag(std::string_view path) {
  for (const run_flag_table::RunFlag& f : run_flag_table::run_flags()) {
    if (path == f.path) return f.name;
  }
  for (const Spelling& s : kSpellings) {
    if (path == s.path) return s.flag;
  }
  return nullptr;
}

std::string speller(std::string_view path, bool reference) {
  const char* flag = find_flag(path);
  if (flag == nullptr) {
    // A key inside a JSON-valued setting: "speculative.config.method" is
    // "speculative-config.method".
    const size_t dot = path.rfind('.');
    if (dot == std::string_view::npos || path.find('.') == dot) return {};
    const std::string head = speller(path.substr(0, dot), false);
    return head.empty() ? head : head + std::string(path.substr(dot));
  }
  return reference ? std::string("--") + flag : std::string(flag);
}

}  // namespace

std::string field_flag(std::string_view path) {
  const char* flag = find_flag(path);
  return flag != nullptr ? flag : "";
}

void install_field_spellings() {
  set_field_speller(&speller);
}

}  // namespace servesim::cli
