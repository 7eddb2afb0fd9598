#include "analysis/run_spec.hpp"
#include "analysis/run_spec_internal.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

#include "analysis/workload_report.hpp"
#include "models/calibration.hpp"
#include "scheduler/policy.hpp"
#include "traces/datasets.hpp"
#include "traces/rate_pattern.hpp"
#include "traces/servegen.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/text_input.hpp"

namespace servesim {

using nlohmann::ordered_json;

namespace {

// vLLM bench's --dataset-name values.
const char* const kDatasets[] = {"random", "prefix_repetition", "multi_turn", "servegen",
                                 "mixture"};

// --dataset-name and the flags of one dataset: Error when one would do nothing.
void check_dataset_flags(const RunSpec& s) {
  if (!s.trace.empty() && s.dataset_name.given()) {
    throw Error(field::kDatasetName,
                "not used with {{workload.trace}}: the trace gives the requests");
  }
  if (!s.trace.empty() && s.num_priorities.given()) {
    throw Error(
        field::kNumPriorities,
        "not used with {{workload.trace}}: a csv trace's {{trace.col_priority}} gives them");
  }
  if (!s.trace.empty() && !s.rate_pattern.empty()) {
    throw Error(
        field::kRatePattern,
        "shapes generated arrivals; a trace keeps its own (capacity {{capacity.target_scale}} "
        "scales a trace's rate)");
  }
  if (!s.rate_pattern.empty()) RatePattern::parse(s.rate_pattern, field::kRatePattern);
  const std::string& d = s.dataset_name;
  if (std::find(std::begin(kDatasets), std::end(kDatasets), d) == std::end(kDatasets)) {
    throw Error(
        field::kDatasetName,
        "expected random, prefix_repetition, multi_turn, servegen or mixture, got '" + d + "'");
  }
  // The settings that shape only one dataset.
  const std::pair<Setting, const char*> dataset_settings[] = {
      {{field::kPrefixRepetitionPrefixLen, s.prefix_repetition_prefix_len.given()},
       "prefix_repetition"},
      {{field::kPrefixRepetitionSuffixLen, s.prefix_repetition_suffix_len.given()},
       "prefix_repetition"},
      {{field::kPrefixRepetitionNumPrefixes, s.prefix_repetition_num_prefixes.given()},
       "prefix_repetition"},
      {{field::kPrefixRepetitionOutputLen, s.prefix_repetition_output_len.given()},
       "prefix_repetition"},
      {{field::kNumTurns, s.num_turns.given()}, "multi_turn"},
      {{field::kThinkTimeS, s.think_time_s.given()}, "multi_turn"},
      {{field::kServegen, s.servegen.given()}, "servegen"},
      {{field::kServegenStartS, s.servegen_start_s.given()}, "servegen"},
      {{field::kServegenDurationS, s.servegen_duration_s.given()}, "servegen"},
      {{field::kServegenRateScale, s.servegen_rate_scale.given()}, "servegen"},
      {{field::kClientMix, s.client_mix.given()}, "mixture"}};
  for (const auto& [setting, dataset] : dataset_settings) {
    const char* flag = setting.flag;
    if (setting.given && (!s.trace.empty() || d != dataset)) {
      throw Error(flag,
                  std::string("has no effect without {{workload.dataset_name}} ") + dataset +
                      (s.trace.empty() ? "" : " (and {{workload.trace}} gives the requests)"));
    }
  }
  if (s.trace.empty() && d == "servegen") {
    if (s.servegen->empty())
      throw Error(field::kServegen, "name the clients' chunk-N-trace.csv files");
    refuse_given({{field::kInputLen, s.input_len.given()},
                  {field::kOutputLen, s.output_len.given()},
                  {field::kNumRequests, s.num_requests.given()},
                  {field::kNumPrompts, s.num_prompts.given()},
                  {field::kBurstiness, s.burstiness.given()}},
                 "has no effect with --dataset-name servegen: the clients' windows give the "
                 "arrivals and lengths");
  }
  if (s.trace.empty() && d == "mixture") {
    if (s.client_mix->empty())
      throw Error(field::kClientMix, "name the client classes of the mixture");
    refuse_given({{field::kInputLen, s.input_len.given()},
                  {field::kOutputLen, s.output_len.given()},
                  {field::kBurstiness, s.burstiness.given()}},
                 "has no effect with --dataset-name mixture: each class of --client-mix sets "
                 "its own");
  }
  if (!s.trace.empty() || d != "prefix_repetition") return;
  refuse_given({{field::kInputLen, s.input_len.given()}, {field::kOutputLen, s.output_len.given()}},
               "has no effect with --dataset-name prefix_repetition: prompts are "
               "--prefix-repetition-prefix-len + --prefix-repetition-suffix-len tokens, outputs "
               "--prefix-repetition-output-len");
  if (num_requests(s) < s.prefix_repetition_num_prefixes) {  // as vLLM's ValueError
    throw Error(field::kPrefixRepetitionNumPrefixes,
                "must be <= the number of requests (" + std::to_string(num_requests(s)) +
                    "): each prefix starts num-requests / num-prefixes prompts");
  }
}

}  // namespace

#define IMPORT_SET(member) \
  +[](const ImportOptions& o) { return o.member != ImportOptions{}.member; }
namespace {
const TraceImportSetting kTraceImportSettings[] = {
    {field::kTraceFormat, "", IMPORT_SET(format)},
    {field::kSkipBadRows, "", IMPORT_SET(skip_bad_rows)},
    {field::kColArrival, "csv", IMPORT_SET(col_arrival)},
    {field::kColInput, "csv", IMPORT_SET(col_input)},
    {field::kColOutput, "csv", IMPORT_SET(col_output)},
    {field::kTimeUnit, "csv", IMPORT_SET(time_unit)},
    {field::kKeepFailed, "burstgpt", IMPORT_SET(keep_failed)},
    {field::kModelFilter, "burstgpt", IMPORT_SET(model_filter)},
    {field::kLogType, "burstgpt", IMPORT_SET(log_type)},
    {field::kHashBlockSize, "mooncake", IMPORT_SET(hash_block_size)},
    {field::kColPriority, "csv", IMPORT_SET(col_priority)},
    {field::kColLora, "csv", IMPORT_SET(col_lora)}};
}  // namespace
#undef IMPORT_SET

std::span<const TraceImportSetting> trace_import_settings() {
  return kTraceImportSettings;
}

void refuse_given(std::initializer_list<Setting> settings, const std::string& message) {
  for (const Setting& g : settings) {
    if (g.given) throw Error(g.flag, message);
  }
}

void check_flags(const RunSpec& s) {
  tensor_parallel_size(s);
  pipeline_parallel_size(s);
  simulate_options(s);  // the fleet's flags
  num_requests(s);
  scheduler_choice(s);
  if (s.seed < 0) throw Error(field::kSeed, "must be >= 0");
  if (s.max_concurrency < 0) throw Error(field::kMaxConcurrency, "must be >= 1 (or 0: open loop)");
  if (s.num_seeds < 1 || s.num_seeds > 1000) throw Error(field::kNumSeeds, "must be in [1, 1000]");
  if (s.trace_replicates != "auto") parse_resample(s.trace_replicates);
  if (s.seed > std::numeric_limits<int64_t>::max() - (s.num_seeds - 1)) {
    throw Error(field::kNumSeeds,
                "seeds {{workload.seed}} .. {{workload.seed}} + N - 1 would pass 2^63 - 1: lower "
                "{{workload.seed}}");
  }
  SchedulerConfig sched;  // the values' ranges, before any point is simulated
  sched.max_num_batched_tokens = s.max_num_batched_tokens;
  sched.max_num_seqs = s.max_num_seqs;
  sched.block_size = s.block_size;
  sched.long_prefill_token_threshold = s.long_prefill_token_threshold;
  check_scheduler_values(sched);
  // vLLM's CacheConfig takes these block sizes (BlockSize, vllm/config/cache.py, v0.11 to 0.15).
  if (!std::set<int>{1, 8, 16, 32, 64, 128, 256}.count(s.block_size)) {
    throw Error(field::kBlockSize,
                "must be one of 1, 8, 16, 32, 64, 128, 256 (vLLM's CacheConfig "
                "refuses " +
                    std::to_string(s.block_size) + ")");
  }
  MemoryPlanOptions memory;
  memory.gpu_memory_utilization = s.gpu_memory_utilization;
  memory.runtime_reserve_gib = s.runtime_reserve_gib.given() ? *s.runtime_reserve_gib : NAN;
  memory.num_gpu_blocks_override = s.num_gpu_blocks;
  check_memory_values(memory);
  // A file and a name for the same thing: which one was meant is not ours to guess.
  if (!s.model_file.empty() && s.model.given()) {
    throw Error(field::kModelFile, "and {{model.name}} both name the model: give one");
  }
  if (!s.gpu_file.empty() && s.gpu.given()) {
    throw Error(field::kGpuFile, "and {{hardware.gpu}} both name the GPU: give one");
  }
  for (const auto& [flag, format, set] : kTraceImportSettings) {
    if (set(s.import) && s.trace.empty()) {
      throw Error(flag,
                  "has no effect without {{workload.trace}}: it says how to read a trace file");
    }
  }
  if (s.trace.empty() && std::isinf(s.request_rate) && s.burstiness.given()) {
    throw Error(field::kBurstiness,
                "has no effect with {{workload.request_rate}} inf: every request arrives at 0");
  }
  check_dataset_flags(s);
}

int64_t num_requests(const RunSpec& s) {
  if (!s.num_prompts.given()) return s.num_requests;
  if (s.num_requests.given() && s.num_requests != s.num_prompts) {
    throw Error(field::kNumPrompts, "conflicts with {{workload.num_requests}}");
  }
  return s.num_prompts;
}

bool default_scheduler(const RunSpec& s) {
  return s.scheduler.empty() && !s.enable_chunked_prefill.given();
}

SchedulerChoice scheduler_choice(const RunSpec& s) {
  if (!s.enable_chunked_prefill.given()) {
    return s.scheduler.empty() ? SchedulerChoice{} : parse_scheduler(s.scheduler);
  }
  // vLLM's switch alone: true is the default, V1's scheduler, which always chunks; false is
  // V0's prefill priority (V1 without chunking is not modelled).
  if (s.scheduler.empty())
    return s.enable_chunked_prefill ? SchedulerChoice{} : parse_scheduler("vllm-v0");
  const std::string named = s.enable_chunked_prefill ? "chunked" : "vllm-v0";
  const SchedulerChoice given = parse_scheduler(s.scheduler);
  if (v1_scheduler(given.policy)) {
    // vLLM V1 always chunks prefills in servesim (vLLM's --no-enable-chunked-prefill for V1
    // is not modelled).
    if (!s.enable_chunked_prefill) {
      throw Error(field::kEnableChunkedPrefill,
                  "false is not modelled for vllm-v1 (V1 chunks prefills)");
    }
    return given;
  }
  if (policy_name(given.policy) != named) {
    throw Error(field::kEnableChunkedPrefill, "contradicts {{scheduler.policy}} " + s.scheduler +
                                                  " (chunked prefill is the chunked policy)");
  }
  return given;
}

RunSpec with_seed(const RunSpec& s, int64_t k) {
  RunSpec r = s;
  r.seed.value() = s.seed + k;  // given as it was
  return r;
}

GoodputSlo parse_goodput(const std::string& text) {
  GoodputSlo g;
  std::istringstream in(text);
  for (std::string term; in >> term;) {
    const auto colon = term.find(':');
    const std::string key = term.substr(0, colon);
    double v = 0;
    const bool number = colon != std::string::npos && parse_double(term.substr(colon + 1), v);
    double* slot = key == "ttft"   ? &g.ttft_ms
                   : key == "tpot" ? &g.tpot_ms
                   : key == "e2el" ? &g.e2el_ms
                                   : nullptr;
    if (slot == nullptr || !number || !(v > 0)) {
      throw Error(field::kGoodput, "'" + term + "' must be ttft:MS, tpot:MS or e2el:MS (MS > 0)");
    }
    *slot = v;
  }
  if (!g.any()) throw Error(field::kGoodput, "give at least one SLO, e.g. ttft:200 tpot:50");
  return g;
}

std::vector<double> parse_percentiles(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    double q = 0;
    if (!parse_double(item, q) || q < 0 || q > 100) {
      throw Error(field::kPercentiles, "'" + item + "' is not a percentile in [0, 100]");
    }
    out.push_back(q);
  }
  if (out.empty()) throw Error(field::kPercentiles, "give percentiles, e.g. 50,90,99");
  return out;
}

namespace {
// A flag's value given under its long name or its short ALIAS (ALIAS_FIELD); Error naming the
// alias when both are given and differ.
int aliased(const Given<int>& full, const Given<int>& alias, const char* alias_field,
            const std::string& full_path) {
  if (!alias.given()) return full;
  if (full.given() && full != alias) {
    throw Error(alias_field, "conflicts with {{" + full_path + "}}");
  }
  return alias;
}
}  // namespace

int tensor_parallel_size(const RunSpec& s) {
  return aliased(s.tensor_parallel_size, s.tp, field::kTp, field::kTensorParallelSize);
}

int pipeline_parallel_size(const RunSpec& s) {
  return aliased(s.pipeline_parallel_size, s.pp, field::kPp, field::kPipelineParallelSize);
}

std::vector<GpuCount> parse_replica_gpus(const std::string& text) {
  std::vector<GpuCount> groups;
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const size_t colon = item.rfind(':');
    int64_t count = 0;
    if (colon == std::string::npos || colon == 0 || !parse_int(item.substr(colon + 1), count) ||
        count < 1 || count > kMaxReplicas) {
      throw Error(field::kReplicaGpus, "'" + item + "': expected GPU:COUNT, e.g. h100-sxm:4");
    }
    groups.push_back({item.substr(0, colon), int(count)});
  }
  return groups;
}

std::string replica_gpus_text(const std::vector<GpuCount>& groups) {
  std::string out;
  for (const GpuCount& g : groups)
    out.append(out.empty() ? "" : ",").append(g.gpu).append(":").append(std::to_string(g.count));
  return out;
}

SchedulerChoice parse_scheduler(const std::string& spec) {
  const auto colon = spec.find(':');
  const Policy policy = parse_policy(spec.substr(0, colon));
  if (colon == std::string::npos) return {policy, 0, spec};
  const std::string budget = spec.substr(colon + 1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(budget.data(), budget.data() + budget.size(), v);
  if (ec != std::errc() || end != budget.data() + budget.size() || v < 1) {
    throw Error(field::kScheduler,
                "'" + spec + "': the token budget after ':' must be an integer >= 1");
  }
  return {policy, v, spec};
}

PointRun run_point(const RunSpec& s, Inputs& inputs, const SimulateOptions& keep) {
  check_flags(s);
  LoadedWorkload w = load_workload(s, inputs);
  PointRun p;
  if (s.trace.empty() || s.request_rate.given()) p.request_rate = s.request_rate;
  SimConfig c = policy_config(base_config(s, inputs), s, scheduler_choice(s));
  SimulateOptions o = simulate_options(s);
  add_fleet_groups(s, scheduler_choice(s), inputs, o, c);
  o.keep_steps = keep.keep_steps;
  o.keep_histogram = keep.keep_histogram;
  o.progress = keep.progress;
  o.stop_when_overloaded = keep.stop_when_overloaded;
  p.run = simulate(c, w.requests, nullptr, o);
  p.workload = std::move(w.json);
  p.pools = gpu_pools(c, o);
  return p;
}

void check_point(const RunSpec& s, Inputs& inputs) {
  check_flags(s);
  if (!s.scheduler.empty()) parse_scheduler(s.scheduler);
  SimConfig c = base_config(s, inputs);  // model, GPU, calibration and profile files
  SimulateOptions fleet = simulate_options(s);
  add_fleet_groups(s, scheduler_choice(s), inputs, fleet, c);  // the pools' GPUs and flags
  RunSpec one = s;  // the workload's flags, on one generated request (given as they were)
  one.num_requests.value() = one.num_prompts.value() = std::min<int64_t>(num_requests(s), 1);
  // prefix_repetition needs a request per prefix (vLLM refuses fewer).
  if (s.dataset_name == "prefix_repetition") {
    one.num_requests.value() = one.num_prompts.value() =
        std::max<int64_t>(s.prefix_repetition_num_prefixes, 1);
  }
  load_workload(one, inputs);
}

}  // namespace servesim
