#include "cli/field_spellings.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "util/field_path.hpp"

namespace servesim::cli {

namespace {

// A path and its flag (a message refers to it as "--" + flag).
struct Spelling {
  const char* path;
  const char* flag;
};

// Every field path, with its flag. (A path without a row is a test failure: test_field_paths.)
constexpr Spelling kSpellings[] = {
    {field::kModel, "model"},
    {field::kModelFile, "model-file"},
    {field::kQuantization, "quantization"},
    {field::kMaxModelLen, "max-model-len"},
    {field::kGpu, "gpu"},
    {field::kGpuFile, "gpu-file"},
    {field::kTensorParallelSize, "tensor-parallel-size"},
    {field::kBlockSize, "block-size"},
    {field::kGpuMemoryUtilization, "gpu-memory-utilization"},
    {field::kNumGpuBlocks, "num-gpu-blocks"},
    {field::kKvCacheDtype, "kv-cache-dtype"},
    {field::kRuntimeReserveGib, "runtime-reserve-gib"},
    {field::kScheduler, "scheduler"},
    {field::kEngine, "engine"},
    {field::kMaxNumBatchedTokens, "max-num-batched-tokens"},
    {field::kMaxNumSeqs, "max-num-seqs"},
    {field::kLongPrefillTokenThreshold, "long-prefill-token-threshold"},
    {field::kSchedulingPolicy, "scheduling-policy"},
    {field::kSpeculativeConfig, "speculative-config"},
    {field::kNumSpeculativeTokens, "speculative-config.num_speculative_tokens"},
    {field::kSpeculativeModel, "speculative-config.model"},
    {field::kKvOffloadingSize, "kv-offloading-size"},
    {field::kKvOffloadingBackend, "kv-offloading-backend"},
    {field::kKvTransferConfig, "kv-transfer-config"},
    {field::kEnableLora, "enable-lora"},
    {field::kMaxLoras, "max-loras"},
    {field::kMaxLoraRank, "max-lora-rank"},
    {field::kLoraAdapters, "lora-adapters"},
    {field::kLoraZipf, "lora-zipf"},
    {field::kCostModel, "cost-model"},
    {field::kCalibration, "calibration"},
    {field::kProfiles, "profiles"},
    {field::kFrontendLatencyMs, "frontend-latency-ms"},
    {field::kStepLog, "step-log"},
    {field::kNumReplicas, "num-replicas"},
    {field::kRouter, "router"},
    {field::kRouterSignalDelayS, "router-signal-delay-s"},
    {field::kReplicaGpus, "replica-gpus"},
    {field::kPrefillReplicas, "prefill-replicas"},
    {field::kKvTransferGbps, "kv-transfer-gbps"},
    {field::kKvTransferLatencyS, "kv-transfer-latency-s"},
    {field::kAutoscale, "autoscale"},
    {field::kAutoscaleTarget, "autoscale-target"},
    {field::kAutoscaleTolerance, "autoscale-tolerance"},
    {field::kMinReplicas, "min-replicas"},
    {field::kMaxReplicas, "max-replicas"},
    {field::kAutoscalePeriodS, "autoscale-period-s"},
    {field::kScaleUpWindowS, "scale-up-window-s"},
    {field::kScaleDownWindowS, "scale-down-window-s"},
    {field::kProvisionS, "provision-s"},
    {field::kEngineStartupS, "engine-startup-s"},
    {field::kModelLoadGbPerS, "model-load-gb-per-s"},
    {field::kNumRequests, "num-requests"},
    {field::kRequestRate, "request-rate"},
    {field::kBurstiness, "burstiness"},
    {field::kSeed, "seed"},
    {field::kDatasetName, "dataset-name"},
    {field::kClientMix, "client-mix"},
    {field::kServegen, "servegen"},
    {field::kServegenStartS, "servegen-start-s"},
    {field::kServegenDurationS, "servegen-duration-s"},
    {field::kServegenRateScale, "servegen-rate-scale"},
    {field::kNumPriorities, "num-priorities"},
    {field::kNumTurns, "num-turns"},
    {field::kThinkTimeS, "think-time-s"},
    {field::kInputLen, "input-len"},
    {field::kOutputLen, "output-len"},
    {field::kPrefixRepetitionPrefixLen, "prefix-repetition-prefix-len"},
    {field::kPrefixRepetitionSuffixLen, "prefix-repetition-suffix-len"},
    {field::kPrefixRepetitionOutputLen, "prefix-repetition-output-len"},
    {field::kPrefixRepetitionNumPrefixes, "prefix-repetition-num-prefixes"},
    {field::kTraceFormat, "trace-format"},
    {field::kColArrival, "col-arrival"},
    {field::kColInput, "col-input"},
    {field::kColOutput, "col-output"},
    {field::kColPriority, "col-priority"},
    {field::kColLora, "col-lora"},
    {field::kSkipBadRows, "skip-bad-rows"},
    {field::kKeepFailed, "keep-failed"},
    {field::kModelFilter, "model-filter"},
    {field::kTimeUnit, "time-unit"},
    {field::kLogType, "log-type"},
    {field::kHashBlockSize, "hash-block-size"},
    {field::kTraceReplicates, "trace-replicates"},
    {field::kReplicateBlockS, "replicate-block-s"},
    {field::kReplicateJitterS, "replicate-jitter-s"},
    {field::kWindow, "window"},
    {field::kTimeScale, "time-scale"},
    {field::kInputScale, "input-scale"},
    {field::kOutputScale, "output-scale"},
    {field::kInputTrim, "input-trim"},
    {field::kMaxInputLen, "max-input-len"},
    {field::kMaxOutputLen, "max-output-len"},
    {field::kMaxRequests, "max-requests"},
    {field::kPeriodS, "period-s"},
    {field::kDiagnoseTolerance, "tolerance"},
    {field::kAlarmFraction, "alarm-fraction"},
    {field::kEvaluationPeriods, "evaluation-periods"},
    {field::kDatapointsToAlarm, "datapoints"},
    {field::kSpecAcceptanceRate, "spec-acceptance-rate"},
    {field::kDecodeReplicas, "decode-replicas"},
    {field::kInterval, "interval"},
    {field::kMetricsAs, "metrics-as"},
    {field::kMaxCpuLoras, "max-cpu-loras"},
    {field::kLoraRank, "lora-rank"},
    {field::kLoraLoadGbPerS, "lora-load-gb-per-s"},
    {field::kLoraLoadLatencyS, "lora-load-latency-s"},
    {field::kKvOffloadGbPerS, "kv-offload-gb-per-s"},
    {field::kKvOffloadLatencyS, "kv-offload-latency-s"},
    {field::kDataParallelSize, "data-parallel-size"},
    {field::kPrefixIndex, "prefix-index"},
    {field::kTp, "tp"},
    {field::kKvTransferLink, "kv-transfer-link"},
    {field::kNoEnablePrefixCaching, "no-enable-prefix-caching"},
    {field::kEnablePrefixCaching, "enable-prefix-caching"},
    {field::kNoAsyncScheduling, "no-async-scheduling"},
    {field::kAsyncScheduling, "async-scheduling"},
    {field::kTrace, "trace"},
    {field::kRatePattern, "rate-pattern"},
    {field::kTargetScale, "target-scale"},
    {field::kMaxConcurrency, "max-concurrency"},
    {field::kNumSeeds, "num-seeds"},
    {field::kNumPrompts, "num-prompts"},
    {field::kEnableChunkedPrefill, "enable-chunked-prefill"},
    {field::kGoodput, "goodput"},
    {field::kPercentiles, "metric-percentiles"},
    {field::kShard, "shard"},
    {field::kOut, "out"},
    {field::kTimelineWindow, "timeline-window"},
    {field::kSchedulerReserveFullIsl, "scheduler-reserve-full-isl"},
    {field::kPrefillTp, "prefill-tp"},
    {field::kDecodeTp, "decode-tp"},
    {field::kDraftTensorParallelSize, "speculative-config.draft_tensor_parallel_size"},
    {field::kPrefillGpu, "prefill-gpu"},
    {field::kDecodeGpu, "decode-gpu"},
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

const Spelling* find_spelling(std::string_view path) {
  for (const Spelling& s : kSpellings) {
    if (path == s.path) return &s;
  }
  return nullptr;
}

std::string speller(std::string_view path, bool reference) {
  const Spelling* s = find_spelling(path);
  if (s == nullptr) {
    // A key inside a JSON-valued setting: "speculative.config.method" is
    // "speculative-config.method".
    const size_t dot = path.rfind('.');
    if (dot == std::string_view::npos || path.find('.') == dot) return {};
    const std::string head = speller(path.substr(0, dot), false);
    return head.empty() ? head : head + std::string(path.substr(dot));
  }
  return reference ? std::string("--") + s->flag : std::string(s->flag);
}

}  // namespace

std::string field_flag(std::string_view path) {
  const Spelling* s = find_spelling(path);
  return s != nullptr ? s->flag : "";
}

void install_field_spellings() {
  set_field_speller(&speller);
}

}  // namespace servesim::cli
