#include "cli/run_flag_table.hpp"

namespace servesim::cli::run_flag_table {

namespace {

using G = FlagGroup;

#define FIELD(member)         \
  +[](RunSpec & s) -> auto& { \
    return s.member;          \
  }

// The model, the GPU, parallelism, replicas, routing and autoscaling, cost.
std::vector<RunFlag> model_and_fleet_flags() {
  return {
      {"model", field::kModel, G::kHardware, Plain<Given<std::string>>{FIELD(model)}, kShowDefault,
       "model name (servesim list models)"},
      {"model-file", field::kModelFile, G::kHardware, Plain<std::string>{FIELD(model_file)},
       kNoDefault, "INI file describing a model (config.json keys)"},
      {"quantization", field::kQuantization, G::kHardware, Plain<std::string>{FIELD(quantization)},
       kNoDefault,
       "fp8: quantize every linear layer but the LM head to FP8 at load, as vLLM -q fp8; none "
       "(default: as the checkpoint, e.g. FP8 for an FP8 checkpoint)"},
      {"kv-cache-dtype", field::kKvCacheDtype, G::kHardware,
       Plain<std::string>{FIELD(kv_cache_dtype)}, kShowDefault,
       "auto (the model's dtype) | fp8 (one byte per element: twice the KV blocks)"},
      {"gpu", field::kGpu, G::kHardware, Plain<Given<std::string>>{FIELD(gpu)}, kShowDefault,
       "GPU name (servesim list gpus)"},
      {"gpu-file", field::kGpuFile, G::kHardware, Plain<std::string>{FIELD(gpu_file)}, kNoDefault,
       "INI file describing a GPU"},
      {"tensor-parallel-size", field::kTensorParallelSize, G::kHardware,
       Plain<Given<int>>{FIELD(tensor_parallel_size)}, kShowDefault, "GPUs per replica (vLLM -tp)"},
      {"tp", field::kTp, G::kHardware, Plain<Given<int>>{FIELD(tp)}, kNoDefault,
       "same as --tensor-parallel-size"},
      {"pipeline-parallel-size", field::kPipelineParallelSize, G::kHardware,
       Plain<Given<int>>{FIELD(pipeline_parallel_size)}, kShowDefault,
       "pipeline stages per replica, each a TP group (vLLM -pp; engine v1): a replica has TP x PP "
       "GPUs"},
      {"pp", field::kPp, G::kHardware, Plain<Given<int>>{FIELD(pp)}, kNoDefault,
       "same as --pipeline-parallel-size"},
      {"enable-expert-parallel", field::kEnableExpertParallel, G::kHardware,
       Plain<Given<bool>>{FIELD(enable_expert_parallel)}, kNoDefault,
       "MoE models: spread each layer's routed experts whole over the GPUs of every "
       "--data-parallel-size rank (EP = TP x DP), the ranks exchanging tokens at each MoE layer "
       "(vLLM -ep; the ranks taken as evenly loaded)"},
      {"expert-skew", field::kExpertSkew, G::kHardware, Plain<Given<double>>{FIELD(expert_skew)},
       kNoDefault,
       "with --enable-expert-parallel: the routing's skew, the r-th most popular expert taking a "
       "share of the (token, expert) pairs proportional to 1 / (r + 1)^S (Zipf; 0 = uniform, at "
       "most 4), "
       "placed as vLLM places experts: the busiest GPU's expected share sets each MoE layer's "
       "time"},
      {"num-replicas", field::kNumReplicas, G::kHardware, Plain<Given<int>>{FIELD(num_replicas)},
       kShowDefault,
       "replicas of this server behind a router, each with its own scheduler and KV cache"},
      {"data-parallel-size", field::kDataParallelSize, G::kHardware,
       Plain<Given<int>>{FIELD(data_parallel_size)}, kNoDefault,
       "same as --num-replicas (vLLM -dp)"},
      {"router", field::kRouter, G::kHardware, Plain<Given<std::string>>{FIELD(router)},
       kShowDefault,
       "with --num-replicas: round-robin | least-requests | least-kv | prefix-aware (llm-d's "
       "prefix-cache, queue and KV scorers, 3:2:2) | session (sticky by conversation)"},
      {"router-signal-delay-s", field::kRouterSignalDelayS, G::kHardware,
       Plain<Given<double>>{FIELD(router_signal_delay_s)}, kShowDefault,
       "how stale the load the router sees is, seconds (0 = live)"},
      {"prefix-index", field::kPrefixIndex, G::kHardware,
       Plain<Given<std::string>>{FIELD(prefix_index)}, kShowDefault,
       "how prefix-aware learns what each replica caches (the same answers): per-replica (ask "
       "every replica's cache for the prompt's blocks) | kv-events (an index of block hash -> "
       "replicas fed by their KV events, as llm-d's precise scorer keeps)"},
      {"autoscale", field::kAutoscale, G::kHardware, Plain<std::string>{FIELD(autoscale)},
       kNoDefault,
       "add and remove replicas during the run as Kubernetes' HPA on a vLLM metric per "
       "replica: waiting | running | kv | rate (--num-replicas starts it)"},
      {"autoscale-target", field::kAutoscaleTarget, G::kHardware,
       Plain<Given<double>>{FIELD(autoscale_target)}, kNoDefault,
       "the metric's target per replica (waiting or running requests, KV usage 0..1, req/s)"},
      {"min-replicas", field::kMinReplicas, G::kHardware, Plain<Given<int>>{FIELD(min_replicas)},
       kShowDefault, "--autoscale: the fewest replicas"},
      {"max-replicas", field::kMaxReplicas, G::kHardware, Plain<Given<int>>{FIELD(max_replicas)},
       kNoDefault, "--autoscale: the most replicas (required)"},
      {"autoscale-period-s", field::kAutoscalePeriodS, G::kHardware,
       Plain<Given<double>>{FIELD(autoscale_period_s)}, kShowDefault,
       "--autoscale: seconds between decisions (the HPA's sync period)"},
      {"scale-up-window-s", field::kScaleUpWindowS, G::kHardware,
       Plain<Given<double>>{FIELD(scale_up_window_s)}, kShowDefault,
       "--autoscale: scale-up stabilisation window, seconds (lowest recommendation in it)"},
      {"scale-down-window-s", field::kScaleDownWindowS, G::kHardware,
       Plain<Given<double>>{FIELD(scale_down_window_s)}, kShowDefault,
       "--autoscale: scale-down stabilisation window, seconds (highest recommendation in it)"},
      {"provision-s", field::kProvisionS, G::kHardware, Plain<Given<double>>{FIELD(provision_s)},
       kNoDefault,
       "--autoscale: seconds from the decision to a new replica serving (default "
       "--engine-startup-s + weights / --model-load-gb-per-s)"},
      {"engine-startup-s", field::kEngineStartupS, G::kHardware,
       Plain<Given<double>>{FIELD(engine_startup_s)}, kShowDefault,
       "--autoscale: a new replica's start-up besides loading weights (container, CUDA graphs, "
       "torch.compile), seconds"},
      {"model-load-gb-per-s", field::kModelLoadGbPerS, G::kHardware,
       Plain<Given<double>>{FIELD(model_load_gb_per_s)}, kShowDefault,
       "--autoscale: the bandwidth a new replica reads its weights at, GB/s"},
      {"replica-gpus", field::kReplicaGpus, G::kHardware, GpuGroups{}, kNoDefault,
       "a mixed fleet of colocated replicas, GPU:COUNT,... e.g. h100-sxm:4,a100-80g:2"},
      {"prefill-replicas", field::kPrefillReplicas, G::kHardware,
       Plain<int>{FIELD(prefill_replicas)}, kNoDefault,
       "disaggregated prefill (vllm-v1): replicas that compute prompts and send their KV"},
      {"decode-replicas", field::kDecodeReplicas, G::kHardware, Plain<int>{FIELD(decode_replicas)},
       kNoDefault, "disaggregated prefill: replicas that receive the KV and generate the output"},
      {"prefill-gpu", field::kPrefillGpu, G::kHardware,
       Plain<Given<std::string>>{FIELD(prefill_gpu)}, kNoDefault,
       "the prefill pool's GPU (default --gpu)"},
      {"decode-gpu", field::kDecodeGpu, G::kHardware, Plain<Given<std::string>>{FIELD(decode_gpu)},
       kNoDefault, "the decode pool's GPU (default --gpu)"},
      {"prefill-tp", field::kPrefillTp, G::kHardware, Plain<Given<int>>{FIELD(prefill_tp)},
       kNoDefault, "the prefill pool's tensor-parallel size (default --tp)"},
      {"decode-tp", field::kDecodeTp, G::kHardware, Plain<Given<int>>{FIELD(decode_tp)}, kNoDefault,
       "the decode pool's tensor-parallel size (default --tp)"},
      {"kv-transfer-gbps", field::kKvTransferGbps, G::kHardware,
       Plain<Given<double>>{FIELD(kv_transfer_gbps)}, kNoDefault,
       "the KV link per GPU in Gb/s, one direction (gigabits: 400 for NDR InfiniBand; default "
       "the link --kv-transfer-link names, from the catalogue)"},
      {"kv-transfer-link", field::kKvTransferLink, G::kHardware,
       Plain<Given<std::string>>{FIELD(kv_transfer_link)}, kShowDefault,
       "where the pools sit: network (other nodes: the GPUs' NIC, e.g. 50 GB/s per H100) | "
       "nvlink (one NVLink domain: the GPU-to-GPU link, one direction)"},
      {"kv-transfer-latency-s", field::kKvTransferLatencyS, G::kHardware,
       Plain<Given<double>>{FIELD(kv_transfer_latency_s)}, kShowDefault,
       "a KV transfer's fixed latency, seconds"},
      {"gpu-memory-utilization", field::kGpuMemoryUtilization, G::kHardware,
       Plain<double>{FIELD(gpu_memory_utilization)}, kShowDefault,
       "fraction of GPU memory vLLM may use"},
      {"num-gpu-blocks", field::kNumGpuBlocks, G::kHardware, Plain<int64_t>{FIELD(num_gpu_blocks)},
       kShowDefault, "KV cache blocks, overriding the memory plan (0 = computed)"},
      {"block-size", field::kBlockSize, G::kHardware, Plain<int>{FIELD(block_size)}, kShowDefault,
       "tokens per KV block"},
      {"max-model-len", field::kMaxModelLen, G::kHardware, Plain<int64_t>{FIELD(max_model_len)},
       kShowDefault, "context length in tokens (0 = the model's max_position_embeddings)"},
      {"runtime-reserve-gib", field::kRuntimeReserveGib, G::kHardware,
       Plain<Given<double>>{FIELD(runtime_reserve_gib)}, kNoDefault,
       "GiB per GPU outside PyTorch (CUDA context, NCCL) kept from the KV cache (default: the "
       "engine's, 0.5 for V0; 0.49 for V1, 0.64 with tensor parallelism)"},
      {"cost-model", field::kCostModel, G::kHardware, Plain<std::string>{FIELD(cost_model)},
       kShowDefault, "roofline | table (measured op times; needs --profiles)"},
      {"calibration", field::kCalibration, G::kHardware, Plain<std::string>{FIELD(calibration)},
       kNoDefault,
       "INI files of roofline parameters, comma-separated (`servesim calibrate` writes one); "
       "each key replaces the default (hardware: the GPU architecture's fit, see list gpus; "
       "engine: v0_*, v1_*)"},
      {"frontend-latency-ms", field::kFrontendLatencyMs, G::kHardware,
       Plain<Given<double>>{FIELD(frontend_latency_ms)}, kNoDefault,
       "the API server's latency per request, ms (HTTP, tokenization, IPC, detokenization; "
       "default 8.35, fitted on real vLLM runs)"},
      {"profiles", field::kProfiles, G::kHardware, Plain<std::string>{FIELD(profiles)}, kNoDefault,
       "directory of Vidur profiles, for --cost-model table"},
  };
}

// The scheduler and the engine: budgets, caching, speculative decoding, LoRA, offload.
std::vector<RunFlag> engine_flags() {
  return {
      {"scheduler", field::kScheduler, G::kScheduler, Plain<std::string>{FIELD(scheduler)},
       kNoDefault,
       "policy (servesim list schedulers), NAME[:MAX_NUM_BATCHED_TOKENS] (default: vllm-v1, on the "
       "V1 engine)"},
      {"engine", field::kEngine, G::kScheduler, Plain<std::string>{FIELD(engine)}, kNoDefault,
       "the engine the policy runs on: v0 | v1 (default: the policy's, v1 for vllm-v1, v0 for "
       "the V0 policies; compare: one for every row, v1 if any row is vllm-v1, or per-policy)"},
      {"max-num-batched-tokens", field::kMaxNumBatchedTokens, G::kScheduler,
       Plain<int64_t>{FIELD(max_num_batched_tokens)}, kShowDefault,
       "token budget per step (0 = vLLM's default: max(max_model_len, 2048) vllm-v0; with "
       "chunking 2048 on V0, on V1 8192 on GPUs of >= 70 GiB other than A100, else 2048)"},
      {"max-num-seqs", field::kMaxNumSeqs, G::kScheduler, Plain<int64_t>{FIELD(max_num_seqs)},
       kShowDefault,
       "sequences per step (0 = vLLM's default: 256; the V1 engine on GPUs of >= 70 GiB other "
       "than A100, 1024)"},
      {"enable-prefix-caching", field::kEnablePrefixCaching, G::kScheduler,
       OptionalBool{FIELD(enable_prefix_caching)}, kNoDefault,
       "vLLM's prefix cache [true|false] (default: on for vllm-v1, off for V0)"},
      {"no-enable-prefix-caching", field::kNoEnablePrefixCaching, G::kScheduler,
       Plain<Given<bool>>{FIELD(no_enable_prefix_caching)}, kNoDefault,
       "turn the prefix cache off"},
      {"scheduling-policy", field::kSchedulingPolicy, G::kScheduler,
       Plain<Given<std::string>>{FIELD(scheduling_policy)}, kShowDefault,
       "vllm-v1: fcfs | priority (lowest priority value first; preempts the lowest priority)"},
      {"long-prefill-token-threshold", field::kLongPrefillTokenThreshold, G::kScheduler,
       Plain<Given<int64_t>>{FIELD(long_prefill_token_threshold)}, kShowDefault,
       "vllm-v1: at most this many new tokens per request per step (0 = no cap)"},
      {"async-scheduling", field::kAsyncScheduling, G::kScheduler,
       OptionalBool{FIELD(async_scheduling)}, kNoDefault,
       "V1 engine: schedule the next step while this one runs [true|false] (default: on)"},
      {"no-async-scheduling", field::kNoAsyncScheduling, G::kScheduler,
       Plain<Given<bool>>{FIELD(no_async_scheduling)}, kNoDefault,
       "V1 engine: turn async scheduling off"},
      {"scheduler-reserve-full-isl", field::kSchedulerReserveFullIsl, G::kScheduler,
       OptionalBool{FIELD(scheduler_reserve_full_isl)}, kNoDefault,
       "vllm-v1: admit a request only if its whole prompt fits in free KV blocks [true|false] "
       "(default: true, as vLLM)"},
      {"speculative-config", field::kSpeculativeConfig, G::kScheduler,
       Plain<Given<std::string>>{FIELD(speculative_config)}, kNoDefault,
       "vllm-v1: speculative decoding as vLLM's JSON, e.g. '{\"method\": \"eagle3\", "
       "\"num_speculative_tokens\": 3}' (methods ngram | eagle | eagle3 | mtp | draft_model "
       "with \"model\": a catalogue model)"},
      {"spec-acceptance-rate", field::kSpecAcceptanceRate, G::kScheduler,
       Plain<std::string>{FIELD(spec_acceptance_rate)}, kNoDefault,
       "with --speculative-config: A (each draft accepted with probability A after the ones "
       "before it) or per-position rates A1,A2,... as vLLM logs them"},
      {"kv-offloading-size", field::kKvOffloadingSize, G::kHardware,
       Plain<double>{FIELD(kv_offloading_size)}, kNoDefault,
       "vllm-v1: GiB of CPU memory for offloaded KV blocks, all GPUs of a replica together (vLLM's "
       "OffloadingConnector: every full block stored as it is computed, loaded back instead of "
       "recomputed)"},
      {"kv-offloading-backend", field::kKvOffloadingBackend, G::kHardware,
       Plain<std::string>{FIELD(kv_offloading_backend)}, kNoDefault,
       "with --kv-offloading-size: native (default) | lmcache"},
      {"kv-transfer-config", field::kKvTransferConfig, G::kHardware,
       Plain<Given<std::string>>{FIELD(kv_transfer_config)}, kNoDefault,
       "vLLM's JSON for the connector instead: {\"kv_connector\": \"OffloadingConnector\", "
       "\"kv_role\": \"kv_both\", \"kv_connector_extra_config\": {\"cpu_bytes_to_use\": "
       "N}} or LMCacheConnectorV1"},
      {"kv-offload-gb-per-s", field::kKvOffloadGbPerS, G::kHardware,
       Plain<Given<double>>{FIELD(kv_offload_gb_per_s)}, kNoDefault,
       "KV offload: GB/s each GPU copies to or from host memory, each way (default: the GPU's "
       "PCIe link at 0.82, e.g. 52 for an H100)"},
      {"kv-offload-latency-s", field::kKvOffloadLatencyS, G::kHardware,
       Plain<Given<double>>{FIELD(kv_offload_latency_s)}, kShowDefault,
       "KV offload: a copy's fixed latency, seconds"},
      {"enable-lora", field::kEnableLora, G::kHardware, Plain<Given<bool>>{FIELD(enable_lora)},
       kNoDefault,
       "vllm-v1: serve LoRA adapters (each step holds at most --max-loras distinct ones; a "
       "waiting request with one more is passed over)"},
      {"max-loras", field::kMaxLoras, G::kHardware, Plain<Given<int64_t>>{FIELD(max_loras)},
       kShowDefault, "--enable-lora: adapters per step, and adapter slots on the GPU"},
      {"max-lora-rank", field::kMaxLoraRank, G::kHardware,
       Plain<Given<int64_t>>{FIELD(max_lora_rank)}, kShowDefault,
       "--enable-lora: the slots' rank (1, 8, 16, 32, 64, 128, 256, 320, 512): sizes the GPU "
       "memory they take from the KV cache"},
      {"max-cpu-loras", field::kMaxCpuLoras, G::kHardware,
       Plain<Given<int64_t>>{FIELD(max_cpu_loras)}, kNoDefault,
       "--enable-lora: adapters kept in host memory (default --max-loras)"},
      {"lora-rank", field::kLoraRank, G::kHardware, Plain<Given<int64_t>>{FIELD(lora_rank)},
       kNoDefault, "--enable-lora: the adapters' own rank (default --max-lora-rank)"},
      {"lora-load-gb-per-s", field::kLoraLoadGbPerS, G::kHardware,
       Plain<Given<double>>{FIELD(lora_load_gb_per_s)}, kShowDefault,
       "--enable-lora: GB/s an adapter is read from disk at"},
      {"lora-load-latency-s", field::kLoraLoadLatencyS, G::kHardware,
       Plain<Given<double>>{FIELD(lora_load_latency_s)}, kShowDefault,
       "--enable-lora: seconds per adapter read besides its bytes"},
      {"enable-chunked-prefill", field::kEnableChunkedPrefill, G::kScheduler,
       OptionalBool{FIELD(enable_chunked_prefill)}, kNoDefault,
       "vLLM's switch [true|false]: alone, true is the default (vllm-v1, which always chunks) and "
       "false V0's prefill priority (vllm-v0); with a V0 --scheduler, chunked (true) or vllm-v0 "
       "(false)"},
  };
}

// The workload: synthetic, datasets, traces and their import.
std::vector<RunFlag> workload_flags() {
  return {
      {"trace", field::kTrace, G::kWorkload, Plain<std::string>{FIELD(trace)}, kNoDefault,
       "replay this trace file (any format of `servesim trace import`)"},
      {"num-requests", field::kNumRequests, G::kWorkload,
       Plain<Given<int64_t>>{FIELD(num_requests)}, kShowDefault, "requests"},
      {"num-prompts", field::kNumPrompts, G::kWorkload, Plain<Given<int64_t>>{FIELD(num_prompts)},
       kNoDefault, "same as --num-requests (vLLM benchmark_serving.py's name)"},
      {"max-concurrency", field::kMaxConcurrency, G::kWorkload,
       Plain<int64_t>{FIELD(max_concurrency)}, kNoDefault,
       "closed loop, as benchmark_serving.py: at most N requests in flight; the others wait "
       "client side and their latencies count from when they are sent (0 = open loop)"},
      {"request-rate", field::kRequestRate, G::kWorkload, Rate{FIELD(request_rate)}, kShowDefault,
       "mean arrival rate in requests/s, or inf for all at t=0"},
      {"burstiness", field::kBurstiness, G::kWorkload, Plain<Given<double>>{FIELD(burstiness)},
       kShowDefault, "Gamma shape of inter-arrival times (1 = Poisson)"},
      {"rate-pattern", field::kRatePattern, G::kWorkload, Plain<std::string>{FIELD(rate_pattern)},
       kNoDefault,
       "generated arrivals over time: diurnal[:AMPLITUDE[:PERIOD_S[:PEAK_S]]] (mean "
       "--request-rate, (1 +- A) x it at peak and trough; 0.6, 86400, 50400) | "
       "spike:AT_S:DURATION_S:FACTOR"},
      {"input-len", field::kInputLen, G::kWorkload, Length{FIELD(input_len)}, kShowDefault,
       "prompt tokens: fixed:N | uniform:LO:HI | normal:MEAN:STD[:MIN:MAX] | "
       "lognormal:MEDIAN:SIGMA[:MIN:MAX]"},
      {"output-len", field::kOutputLen, G::kWorkload, Length{FIELD(output_len)}, kShowDefault,
       "output tokens, same forms as --input-len"},
      {"seed", field::kSeed, G::kWorkload, Plain<Given<int64_t>>{FIELD(seed)}, kShowDefault,
       "random seed"},
      {"dataset-name", field::kDatasetName, G::kWorkload,
       Plain<Given<std::string>>{FIELD(dataset_name)}, kShowDefault,
       "random (--input-len, --output-len) | prefix_repetition (num-prefixes shared prefixes, "
       "num-requests / num-prefixes prompts each, shuffled; vLLM's PrefixRepetitionRandomDataset) "
       "| multi_turn (sessions whose every turn resends the conversation so far) | servegen "
       "(ServeGen clients' windows: --servegen) | mixture (client classes: --client-mix)"},
      {"prefix-repetition-prefix-len", field::kPrefixRepetitionPrefixLen, G::kWorkload,
       Plain<Given<int64_t>>{FIELD(prefix_repetition_prefix_len)}, kShowDefault,
       "prefix_repetition: tokens of each shared prefix"},
      {"prefix-repetition-suffix-len", field::kPrefixRepetitionSuffixLen, G::kWorkload,
       Plain<Given<int64_t>>{FIELD(prefix_repetition_suffix_len)}, kShowDefault,
       "prefix_repetition: tokens of each prompt's own suffix after its prefix (>= 0)"},
      {"prefix-repetition-num-prefixes", field::kPrefixRepetitionNumPrefixes, G::kWorkload,
       Plain<Given<int64_t>>{FIELD(prefix_repetition_num_prefixes)}, kShowDefault,
       "prefix_repetition: distinct prefixes (<= requests; vLLM drops the remainder of "
       "requests / prefixes)"},
      {"prefix-repetition-output-len", field::kPrefixRepetitionOutputLen, G::kWorkload,
       Plain<Given<int64_t>>{FIELD(prefix_repetition_output_len)}, kShowDefault,
       "prefix_repetition: output tokens of every request"},
      {"num-priorities", field::kNumPriorities, G::kWorkload,
       Plain<Given<int64_t>>{FIELD(num_priorities)}, kShowDefault,
       "generated workloads: each request's priority drawn uniformly from 0..N-1 (for "
       "--scheduling-policy priority; lower runs first)"},
      {"client-mix", field::kClientMix, G::kWorkload, Plain<Given<std::string>>{FIELD(client_mix)},
       kNoDefault,
       "mixture: client classes 'rate=R,burstiness=B,input=DIST,output=DIST;rate=...' (req/s; "
       "--request-rate rescales them to that total)"},
      {"servegen", field::kServegen, G::kWorkload, Plain<Given<std::string>>{FIELD(servegen)},
       kNoDefault,
       "servegen: ServeGen client files chunk-N-trace.csv (the dataset .json beside each), "
       "comma-separated: a mixture of clients"},
      {"servegen-start-s", field::kServegenStartS, G::kWorkload,
       Plain<Given<double>>{FIELD(servegen_start_s)}, kShowDefault,
       "servegen: where in the clients' timeline to start, seconds"},
      {"servegen-duration-s", field::kServegenDurationS, G::kWorkload,
       Plain<Given<double>>{FIELD(servegen_duration_s)}, kShowDefault,
       "servegen: how long to replay, seconds"},
      {"servegen-rate-scale", field::kServegenRateScale, G::kWorkload,
       Plain<Given<double>>{FIELD(servegen_rate_scale)}, kShowDefault,
       "servegen: every window's rate times this (or set --request-rate)"},
      {"num-turns", field::kNumTurns, G::kWorkload, Plain<Given<int64_t>>{FIELD(num_turns)},
       kShowDefault,
       "multi_turn: turns per session; sessions start at --request-rate / turns per second, "
       "and turn t+1's prompt is turn t's prompt and answer plus --input-len new tokens"},
      {"think-time-s", field::kThinkTimeS, G::kWorkload, Plain<Given<double>>{FIELD(think_time_s)},
       kShowDefault,
       "multi_turn: mean seconds from a turn's arrival to the next turn's (exponential; 0 = "
       "together)"},
      {"trace-format", field::kTraceFormat, G::kTraceInput,
       Plain<std::string>{FIELD(import.format)}, kNoDefault,
       "azure | burstgpt | mooncake | vidur | csv | servesim (default: read off the file)"},
      {"col-arrival", field::kColArrival, G::kTraceInput,
       Plain<std::string>{FIELD(import.col_arrival)}, kNoDefault,
       "csv: arrival-time column (none = length-only)"},
      {"col-input", field::kColInput, G::kTraceInput, Plain<std::string>{FIELD(import.col_input)},
       kNoDefault, "csv: prompt-token column"},
      {"col-output", field::kColOutput, G::kTraceInput,
       Plain<std::string>{FIELD(import.col_output)}, kNoDefault, "csv: output-token column"},
      {"lora-adapters", field::kLoraAdapters, G::kWorkload,
       Plain<Given<int64_t>>{FIELD(lora_adapters)}, kNoDefault,
       "requests ask for one of N LoRA adapters (a conversation keeps its own), drawn by "
       "--lora-zipf"},
      {"lora-zipf", field::kLoraZipf, G::kWorkload, Plain<Given<double>>{FIELD(lora_zipf)},
       kShowDefault,
       "--lora-adapters: adapter k is drawn with weight 1 / k^S (0: uniform, as vLLM bench's "
       "--lora-modules)"},
      {"col-lora", field::kColLora, G::kTraceInput, Plain<std::string>{FIELD(import.col_lora)},
       kNoDefault, "csv: the column naming each request's LoRA adapter (empty, 0 or base: none)"},
      {"col-priority", field::kColPriority, G::kTraceInput,
       Plain<std::string>{FIELD(import.col_priority)}, kNoDefault,
       "csv: request-priority column (integers; lower runs first with --scheduling-policy "
       "priority)"},
      {"time-unit", field::kTimeUnit, G::kTraceInput, Plain<std::string>{FIELD(import.time_unit)},
       kShowDefault, "csv: s | ms | us"},
      {"skip-bad-rows", field::kSkipBadRows, G::kTraceInput,
       Plain<bool>{FIELD(import.skip_bad_rows)}, kNoDefault,
       "skip and count malformed rows instead of stopping at the first"},
      {"keep-failed", field::kKeepFailed, G::kTraceInput, Plain<bool>{FIELD(import.keep_failed)},
       kNoDefault, "burstgpt: keep failed requests (0 response tokens) as 1-token answers"},
      {"model-filter", field::kModelFilter, G::kTraceInput,
       Plain<std::string>{FIELD(import.model_filter)}, kNoDefault,
       "burstgpt: only this Model (ChatGPT, GPT-4)"},
      {"log-type", field::kLogType, G::kTraceInput, Plain<std::string>{FIELD(import.log_type)},
       kNoDefault, "burstgpt: only conversation | api rows"},
      {"hash-block-size", field::kHashBlockSize, G::kTraceInput,
       Plain<int>{FIELD(import.hash_block_size)}, kShowDefault,
       "mooncake: prompt tokens per hash id (0 = 512)"},
  };
}

// What-if transforms, metrics and replicates.
std::vector<RunFlag> what_if_and_metrics_flags() {
  return {
      {"window", field::kWindow, G::kWhatIf, Window{}, kNoDefault,
       "keep arrivals in START:END seconds"},
      {"max-requests", field::kMaxRequests, G::kWhatIf, Plain<int64_t>{FIELD(what_if.max_requests)},
       kShowDefault, "keep the first N (0 = all)"},
      {"time-scale", field::kTimeScale, G::kWhatIf, Plain<double>{FIELD(what_if.time_scale)},
       kShowDefault, "stretch arrival times (0.5 = twice the rate)"},
      {"input-trim", field::kInputTrim, G::kWhatIf, Plain<int64_t>{FIELD(what_if.input_trim)},
       kShowDefault, "remove N tokens from every prompt (floor 1)"},
      {"input-scale", field::kInputScale, G::kWhatIf, Plain<double>{FIELD(what_if.input_scale)},
       kShowDefault, "multiply prompt lengths"},
      {"output-scale", field::kOutputScale, G::kWhatIf, Plain<double>{FIELD(what_if.output_scale)},
       kShowDefault, "multiply output lengths"},
      {"max-input-len", field::kMaxInputLen, G::kWhatIf,
       Plain<int64_t>{FIELD(what_if.max_input_len)}, kShowDefault,
       "clip prompts to N tokens (0 = no clip)"},
      {"max-output-len", field::kMaxOutputLen, G::kWhatIf,
       Plain<int64_t>{FIELD(what_if.max_output_len)}, kShowDefault,
       "clip outputs to N tokens (0 = no clip)"},
      {"goodput", field::kGoodput, G::kMetrics, Goodput{}, kNoDefault,
       "vLLM's goodput SLOs in ms, e.g. ttft:200 tpot:50 e2el:5000: requests meeting all of "
       "them per second, in every summary"},
      {"metric-percentiles", field::kPercentiles, G::kMetrics, Percentiles{}, kNoDefault,
       "percentiles to report, e.g. 50,90,99.9 (vLLM's --metric-percentiles; default: p50, "
       "p90, p95, p99)"},
      {"num-seeds", field::kNumSeeds, G::kMetrics, Plain<Given<int64_t>>{FIELD(num_seeds)},
       kShowDefault,
       "replicates: run seeds SEED .. SEED+N-1 and report each headline metric's mean and "
       "95% confidence interval"},
      {"trace-replicates", field::kTraceReplicates, G::kMetrics,
       Plain<std::string>{FIELD(trace_replicates)}, kShowDefault,
       "replicates of a timed trace, seed k drawing replicate k: bootstrap (blocks of the trace "
       "resampled over time), jitter (arrivals moved), none, or auto (bootstrap with "
       "--num-seeds > 1)"},
      {"replicate-block-s", field::kReplicateBlockS, G::kMetrics,
       Plain<double>{FIELD(what_if.replicate_block_s)}, kShowDefault,
       "bootstrap: block length in seconds"},
      {"replicate-jitter-s", field::kReplicateJitterS, G::kMetrics,
       Plain<double>{FIELD(what_if.replicate_jitter_s)}, kShowDefault,
       "jitter: each arrival moves uniformly within +- half this, in seconds"},
  };
}

#undef FIELD

}  // namespace

const std::vector<RunFlag>& run_flags() {
  static const std::vector<RunFlag> flags = [] {
    std::vector<RunFlag> all;
    for (auto part :
         {model_and_fleet_flags, engine_flags, workload_flags, what_if_and_metrics_flags}) {
      std::vector<RunFlag> p = part();
      all.insert(all.end(), p.begin(), p.end());
    }
    return all;
  }();
  return flags;
}

}  // namespace servesim::cli::run_flag_table
