// Field paths: the names of the settings a run is configured by, as the code below cli/ knows
// them (issue 45). A path is a dotted name in the configuration's tree, modelled on vLLM's own
// VllmConfig (model, parallel, cache, scheduler, speculative, lora, kv_transfer) with servesim's
// own sections (cost, fleet, autoscale, workload, trace, what_if, run). Code below cli/ names a
// setting only by its path: `throw Error(field::kMaxNumSeqs, ...)`, and `field::ref(path)` where
// a message points the user at another setting. How a user spells a setting (a flag with dashes
// or underscores, an INI or check-spec key, a sweep grid name, a Python keyword) is cli/'s
// business: it installs a FieldSpeller (cli/field_spellings.cpp), which Error applies, so that
// messages name what the user typed and no layer under cli/ spells a flag.
// Promises: every path is declared once, in SERVESIM_FIELDS; a misspelled path does not compile;
// without a speller (a test of one layer) a message names the path itself.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

// X(IDENTIFIER, "section.name"): every field path, one line each.
// clang-format off
#define SERVESIM_FIELDS(X)                                                  \
  X(kModel, "model.name")                                                     \
  X(kModelFile, "model.file")                                                 \
  X(kQuantization, "model.quantization")                                      \
  X(kMaxModelLen, "model.max_model_len")                                      \
  X(kGpu, "hardware.gpu")                                                     \
  X(kGpuFile, "hardware.gpu_file")                                            \
  X(kTensorParallelSize, "parallel.tensor_parallel_size")                     \
  X(kPipelineParallelSize, "parallel.pipeline_parallel_size")                 \
  X(kEnableExpertParallel, "parallel.enable_expert_parallel")                 \
  X(kExpertSkew, "parallel.expert_skew")                                      \
  X(kBlockSize, "cache.block_size")                                           \
  X(kGpuMemoryUtilization, "cache.gpu_memory_utilization")                    \
  X(kNumGpuBlocks, "cache.num_gpu_blocks")                                    \
  X(kKvCacheDtype, "cache.kv_cache_dtype")                                    \
  X(kRuntimeReserveGib, "cache.runtime_reserve_gib")                          \
  X(kScheduler, "scheduler.policy")                                           \
  X(kEngine, "scheduler.engine")                                              \
  X(kMaxNumBatchedTokens, "scheduler.max_num_batched_tokens")                 \
  X(kMaxNumSeqs, "scheduler.max_num_seqs")                                    \
  X(kLongPrefillTokenThreshold, "scheduler.long_prefill_token_threshold")     \
  X(kSchedulingPolicy, "scheduler.scheduling_policy")                         \
  X(kSpeculativeConfig, "speculative.config")                                 \
  X(kNumSpeculativeTokens, "speculative.num_speculative_tokens")              \
  X(kSpeculativeModel, "speculative.model")                                   \
  X(kKvOffloadingSize, "kv_transfer.offloading_size_gib")                     \
  X(kKvOffloadingBackend, "kv_transfer.offloading_backend")                   \
  X(kKvTransferConfig, "kv_transfer.config")                                  \
  X(kEnableLora, "lora.enable")                                               \
  X(kMaxLoras, "lora.max_loras")                                              \
  X(kMaxLoraRank, "lora.max_lora_rank")                                       \
  X(kLoraAdapters, "lora.adapters")                                           \
  X(kLoraZipf, "lora.zipf")                                                   \
  X(kCostModel, "cost.model")                                                 \
  X(kCalibration, "cost.calibration")                                         \
  X(kProfiles, "cost.profiles")                                               \
  X(kFrontendLatencyMs, "cost.frontend_latency_ms")                           \
  X(kStepLog, "cost.step_log")                                                \
  X(kNumReplicas, "fleet.num_replicas")                                       \
  X(kRouter, "fleet.router")                                                  \
  X(kRouterSignalDelayS, "fleet.router_signal_delay_s")                       \
  X(kReplicaGpus, "fleet.replica_gpus")                                       \
  X(kPrefillReplicas, "fleet.prefill_replicas")                               \
  X(kKvTransferGbps, "fleet.kv_transfer_gbps")                                \
  X(kKvTransferLatencyS, "fleet.kv_transfer_latency_s")                       \
  X(kAutoscale, "autoscale.metric")                                           \
  X(kAutoscaleTarget, "autoscale.target")                                     \
  X(kAutoscaleTolerance, "autoscale.tolerance")                               \
  X(kMinReplicas, "autoscale.min_replicas")                                   \
  X(kMaxReplicas, "autoscale.max_replicas")                                   \
  X(kAutoscalePeriodS, "autoscale.period_s")                                  \
  X(kScaleUpWindowS, "autoscale.scale_up_window_s")                           \
  X(kScaleDownWindowS, "autoscale.scale_down_window_s")                       \
  X(kProvisionS, "autoscale.provision_s")                                     \
  X(kEngineStartupS, "autoscale.engine_startup_s")                            \
  X(kModelLoadGbPerS, "autoscale.model_load_gb_per_s")                        \
  X(kNumRequests, "workload.num_requests")                                    \
  X(kRequestRate, "workload.request_rate")                                    \
  X(kBurstiness, "workload.burstiness")                                       \
  X(kSeed, "workload.seed")                                                   \
  X(kDatasetName, "workload.dataset_name")                                    \
  X(kClientMix, "workload.client_mix")                                        \
  X(kServegen, "workload.servegen")                                           \
  X(kServegenStartS, "workload.servegen_start_s")                             \
  X(kServegenDurationS, "workload.servegen_duration_s")                       \
  X(kServegenRateScale, "workload.servegen_rate_scale")                       \
  X(kNumPriorities, "workload.num_priorities")                                \
  X(kNumTurns, "workload.num_turns")                                          \
  X(kThinkTimeS, "workload.think_time_s")                                     \
  X(kInputLen, "workload.input_len")                                          \
  X(kOutputLen, "workload.output_len")                                        \
  X(kPrefixRepetitionPrefixLen, "workload.prefix_repetition_prefix_len")      \
  X(kPrefixRepetitionSuffixLen, "workload.prefix_repetition_suffix_len")      \
  X(kPrefixRepetitionOutputLen, "workload.prefix_repetition_output_len")      \
  X(kPrefixRepetitionNumPrefixes, "workload.prefix_repetition_num_prefixes")  \
  X(kTraceFormat, "trace.format")                                             \
  X(kColArrival, "trace.col_arrival")                                         \
  X(kColInput, "trace.col_input")                                             \
  X(kColOutput, "trace.col_output")                                           \
  X(kColPriority, "trace.col_priority")                                       \
  X(kColLora, "trace.col_lora")                                               \
  X(kSkipBadRows, "trace.skip_bad_rows")                                      \
  X(kKeepFailed, "trace.keep_failed")                                         \
  X(kModelFilter, "trace.model_filter")                                       \
  X(kTimeUnit, "trace.time_unit")                                             \
  X(kLogType, "trace.log_type")                                               \
  X(kHashBlockSize, "trace.hash_block_size")                                  \
  X(kTraceReplicates, "trace.replicates")                                     \
  X(kReplicateBlockS, "trace.replicate_block_s")                              \
  X(kReplicateJitterS, "trace.replicate_jitter_s")                            \
  X(kWindow, "what_if.window")                                                \
  X(kTimeScale, "what_if.time_scale")                                         \
  X(kInputScale, "what_if.input_scale")                                       \
  X(kOutputScale, "what_if.output_scale")                                     \
  X(kInputTrim, "what_if.input_trim")                                         \
  X(kMaxInputLen, "what_if.max_input_len")                                    \
  X(kMaxOutputLen, "what_if.max_output_len")                                  \
  X(kMaxRequests, "what_if.max_requests")                                     \
  X(kPeriodS, "output.period_s")                                              \
  X(kDiagnoseTolerance, "diagnose.tolerance")                                 \
  X(kAlarmFraction, "diagnose.alarm_fraction")                                \
  X(kEvaluationPeriods, "diagnose.evaluation_periods")                        \
  X(kDatapointsToAlarm, "diagnose.datapoints_to_alarm")                       \
  X(kSpecAcceptanceRate, "speculative.acceptance_rate")                       \
  X(kDecodeReplicas, "fleet.decode_replicas")                                 \
  X(kInterval, "metrics.interval")                                            \
  X(kMetricsAs, "metrics.as")                                                 \
  X(kMaxCpuLoras, "lora.max_cpu_loras")                                       \
  X(kLoraRank, "lora.rank")                                                   \
  X(kLoraLoadGbPerS, "lora.load_gb_per_s")                                    \
  X(kLoraLoadLatencyS, "lora.load_latency_s")                                 \
  X(kKvOffloadGbPerS, "kv_transfer.offload_gb_per_s")                         \
  X(kKvOffloadLatencyS, "kv_transfer.offload_latency_s")                      \
  X(kDataParallelSize, "fleet.data_parallel_size")                            \
  X(kPrefixIndex, "fleet.prefix_index")                                       \
  X(kTp, "parallel.tp")                                                       \
  X(kPp, "parallel.pp")                                                       \
  X(kKvTransferLink, "fleet.kv_transfer_link")                                \
  X(kNoEnablePrefixCaching, "cache.no_enable_prefix_caching")                 \
  X(kEnablePrefixCaching, "cache.enable_prefix_caching")                      \
  X(kNoAsyncScheduling, "scheduler.no_async_scheduling")                      \
  X(kAsyncScheduling, "scheduler.async_scheduling")                           \
  X(kTrace, "workload.trace")                                                 \
  X(kRatePattern, "workload.rate_pattern")                                    \
  X(kTargetScale, "capacity.target_scale")                                    \
  X(kMaxConcurrency, "workload.max_concurrency")                              \
  X(kNumSeeds, "metrics.num_seeds")                                           \
  X(kNumPrompts, "workload.num_prompts")                                      \
  X(kEnableChunkedPrefill, "scheduler.enable_chunked_prefill")                \
  X(kGoodput, "metrics.goodput")                                              \
  X(kPercentiles, "metrics.percentiles")                                      \
  X(kShard, "sweep.shard")                                                    \
  X(kOut, "output.out")                                                       \
  X(kTimelineWindow, "output.timeline_window")                                \
  X(kSchedulerReserveFullIsl, "scheduler.reserve_full_isl")                   \
  X(kPrefillTp, "fleet.prefill_tp")                                           \
  X(kDecodeTp, "fleet.decode_tp")                                             \
  X(kDraftTensorParallelSize, "speculative.draft_tensor_parallel_size")       \
  X(kPrefillGpu, "fleet.prefill_gpu")                                         \
  X(kDecodeGpu, "fleet.decode_gpu")                                           \
  X(kJobs, "run.jobs")                                                        \
  X(kSlo, "capacity.slo")                                                     \
  X(kGpuHourCost, "cost.gpu_hour_cost")                                       \
  X(kSizeGroup, "capacity.size_group")                                        \
  X(kTargetRate, "capacity.target_rate")                                      \
  X(kRateStart, "capacity.rate_start")                                        \
  X(kRateMax, "capacity.rate_max")                                            \
  X(kOverTime, "capacity.over_time")                                          \
  X(kExperiment, "validate.experiment")                                       \
  X(kValidateMetric, "validate.metric")                                       \
  X(kCheckUpdate, "check.update")
// clang-format on

namespace servesim {

namespace field {
#define SERVESIM_FIELD_CONSTANT(id, path) inline constexpr const char id[] = path;
SERVESIM_FIELDS(SERVESIM_FIELD_CONSTANT)
#undef SERVESIM_FIELD_CONSTANT

// Every path, in declaration order (tests hold each to a spelling).
#define SERVESIM_FIELD_ITEM(id, path) path,
inline constexpr const char* kAll[] = {SERVESIM_FIELDS(SERVESIM_FIELD_ITEM)};
#undef SERVESIM_FIELD_ITEM

// A reference to PATH inside a message ("raise {{parallel.tp}}"), which the
// speller turns into the user's spelling of it ("--tp").
inline std::string ref(std::string_view path) {
  return std::string("{{").append(path).append("}}");
}
}  // namespace field

// How the boundary spells a path for its user: the name a message's field slot shows (REFERENCE
// false: "max-num-seqs") or a reference in its text (true: "--max-num-seqs"); nullptr or an
// empty string for a text that is no known path (it is then shown as it is).
using FieldSpeller = std::string (*)(std::string_view path, bool reference);

// Installs SPELLER for the whole process (cli/ does, before any command runs; idempotent).
inline std::atomic<FieldSpeller>& field_speller() {
  static std::atomic<FieldSpeller> speller{nullptr};
  return speller;
}
inline void set_field_speller(FieldSpeller speller) {
  field_speller().store(speller);
}

// PATH as the installed speller names it (REFERENCE: as a reference), else PATH itself.
inline std::string spell_field(std::string_view path, bool reference = false) {
  const FieldSpeller s = field_speller().load(std::memory_order_relaxed);
  std::string spelled = s != nullptr ? s(path, reference) : std::string();
  return spelled.empty() ? std::string(path) : spelled;
}

// TEXT with every {{path}} reference spelled (a {{...}} that is no known path stays as it is).
inline std::string spell_refs(std::string_view text) {
  std::string out;
  size_t at = 0;
  for (size_t open = text.find("{{"); open != std::string_view::npos; open = text.find("{{", at)) {
    const size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    const std::string_view path = text.substr(open + 2, close - open - 2);
    const FieldSpeller s = field_speller().load(std::memory_order_relaxed);
    const std::string spelled = s != nullptr ? s(path, true) : std::string();
    out.append(text.substr(at, open - at));
    if (spelled.empty()) {
      out.append(text.substr(open, close + 2 - open));
    } else {
      out.append(spelled);
    }
    at = close + 2;
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace servesim
