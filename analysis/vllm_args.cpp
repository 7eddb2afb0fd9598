#include "analysis/vllm_args.hpp"

#include "models/hardware.hpp"
#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim {

const char* fidelity_name(Fidelity f) {
  switch (f) {
    case Fidelity::kModelled:
      return "modelled";
    case Fidelity::kApproximated:
      return "approximated";
    case Fidelity::kIgnored:
      return "ignored";
  }
  return "?";
}

namespace {

constexpr Fidelity M = Fidelity::kModelled, A = Fidelity::kApproximated, I = Fidelity::kIgnored;

// Behaviours that no flag sets are named "behaviour: ..."; vLLM's defaults are 0.15.1's.
const std::vector<VllmArg> kArgs = {
    // ModelConfig
    {"--model", "--model, --model-file", M,
     "the architecture's shapes (layers, heads, KV heads, MLP, experts, vocabulary) set every "
     "kernel's work and the KV bytes per token"},
    {"--dtype", "", A,
     "weights and activations in 16 bits (bf16 or fp16 alike); float32 is not modelled"},
    {"--quantization", "--quantization", A,
     "fp8: linear weights read at one byte and multiplied at the FP8 peak where the GPU has FP8 "
     "tensor cores, from datasheets; no FP8 kernel profile; other methods (AWQ, GPTQ, ...) are "
     "not modelled"},
    {"--max-model-len", "--max-model-len", M,
     "caps prompts and outputs; enters the memory plan and vLLM's start-up refusals"},
    {"--enforce-eager", "", I,
     "not a flag: V1 steps always replay CUDA graphs (V0: decode-only steps); eager floors exist "
     "only in the kernel parameters"},
    {"--disable-cascade-attn", "", I,
     "cascade attention (off by default in vLLM 0.15) is not modelled: a shared prefix is read "
     "once per sequence"},
    {"--disable-sliding-window", "", I,
     "not modelled: a model's sliding-window layers (gpt-oss) always keep their window"},
    {"--mamba-ssm-cache-dtype", "", I,
     "not modelled: a hybrid model's linear-attention state is held in the model's dtype "
     "(vLLM's default, auto)"},
    {"--mamba-cache-mode", "", I,
     "not modelled: a hybrid model runs without the prefix cache (vLLM's default; its align "
     "mode, which caches states, is refused with --enable-prefix-caching)"},
    {"--seed", "--seed", I, "servesim's seed draws the workload; sampling itself is not simulated"},
    {"--max-logprobs", "", I, "logprobs cost the sampler more; not modelled"},
    {"--served-model-name", "", I, "a name only"},
    // CacheConfig
    {"--block-size", "--block-size", M, "KV blocks of this many tokens; 16 by default"},
    {"--gpu-memory-utilization", "--gpu-memory-utilization", M,
     "the memory plan: weights, activation peak and CUDA graphs subtracted, the rest KV blocks "
     "(within 0.7% of vLLM's logged blocks for dense models)"},
    {"--num-gpu-blocks-override", "--num-gpu-blocks", M, "sets the KV blocks directly"},
    {"--kv-cache-dtype", "--kv-cache-dtype", A,
     "fp8: one byte per element (twice the blocks, half the bytes a decode reads); the "
     "quantize and dequantize work is not costed"},
    {"--enable-prefix-caching", "--enable-prefix-caching", M,
     "block hashes of whole blocks, vLLM's LRU free queue and eviction order"},
    {"--kv-offloading-size", "--kv-offloading-size", A,
     "vLLM's OffloadingConnector: a CPU tier with LRU, stores and loads over a PCIe link modelled "
     "by bandwidth and a fixed latency per copy; copies overlap the step as vLLM's streams do"},
    {"--kv-offloading-backend", "--kv-offloading-backend", A,
     "native or lmcache: the same tier model, LMCache's chunking"},
    {"--cpu-offload-gb", "", I, "weight offload to CPU is not modelled"},
    {"--swap-space", "", I, "V1 preempts by recompute; swapping is V0-only and not modelled"},
    // ParallelConfig
    {"--tensor-parallel-size", "--tensor-parallel-size, --tp", M,
     "work split over the group, two all-reduces per layer (vLLM's custom all-reduce under 8 "
     "MiB, NCCL above), KV heads replicated when fewer than GPUs"},
    {"--pipeline-parallel-size", "--pipeline-parallel-size, --pp", A,
     "vllm-v1 on the v1 engine: layers split as vLLM splits them, each stage's weights, KV and "
     "activations (the fewest blocks of any stage), the batch queue of one batch a stage with no "
     "request scheduled twice in flight, a stage at a time per batch with NCCL sends and an "
     "all-gather between stages; no real PP run checks it. Refused with V0 policies, "
     "speculative decoding, LoRA, KV offload and disaggregated pools"},
    {"--data-parallel-size", "--data-parallel-size, --num-replicas", A,
     "engines behind a router; with --enable-expert-parallel the ranks share the experts, each "
     "step counting the others as evenly loaded (the lockstep wait for a slower rank and idle "
     "ranks' dummy steps are not modelled)"},
    {"--enable-expert-parallel", "--enable-expert-parallel", A,
     "routed experts whole over TP x DP GPUs (linear placement, the busiest GPU's memory), each "
     "MoE layer's tokens from every rank (all-gather) and outputs back (reduce-scatter: vLLM's "
     "default allgather_reducescatter backend), the busiest GPU's share of uniform routing, or "
     "of a Zipf skew (servesim's --expert-skew, the experts placed at random); DeepEP and pplx "
     "backends and EPLB are not modelled"},
    {"--disable-custom-all-reduce", "", I,
     "vLLM's custom all-reduce is always used below 8 MiB on NVLink"},
    // SchedulerConfig
    {"--max-num-batched-tokens", "--max-num-batched-tokens", M,
     "the step's token budget; vLLM's default by GPU and usage context, refusals as vLLM's"},
    {"--max-num-seqs", "--max-num-seqs", M,
     "sequences per step; V1 caps it at the token budget as EngineArgs does"},
    {"--enable-chunked-prefill", "--enable-chunked-prefill", M,
     "chunked prefill in V0's and V1's schedulers"},
    {"--long-prefill-token-threshold", "--long-prefill-token-threshold", M,
     "caps a prefill chunk per step"},
    {"--max-num-partial-prefills", "", I,
     "only 1 is supported by vLLM V1 0.15 (others raise NotImplementedError)"},
    {"--scheduling-policy", "--scheduling-policy", M,
     "fcfs or priority, with vLLM's preemption victim for each"},
    {"--async-scheduling", "--async-scheduling", M,
     "the CPU prepares step N+1 while the GPU runs step N: a step costs the longer of the two"},
    {"--scheduler-reserve-full-isl", "--scheduler-reserve-full-isl", M,
     "admission only if the whole prompt's KV fits"},
    {"--stream-interval", "", I, "tokens are streamed as produced (1, vLLM's default)"},
    {"--num-scheduler-steps", "", I, "V0's multi-step scheduling is not modelled"},
    // Speculative decoding, LoRA, KV transfer
    {"--speculative-config", "--speculative-config", A,
     "ngram, EAGLE, MTP and draft models: drafts costed as the drafter's passes, acceptance drawn "
     "at a constant rate per position (--spec-acceptance-rate), not from the text; an EAGLE or "
     "MTP head is sized from the target (its checkpoint, the model key, is not read)"},
    {"--enable-lora", "--enable-lora", A,
     "adapter slots, the CPU cache and loads from disk as vLLM's; the Punica kernels costed as "
     "extra GEMM work at the slots' rank"},
    {"--max-loras", "--max-loras", M, "adapters per step"},
    {"--max-lora-rank", "--max-lora-rank", M, "the slots' rank"},
    {"--max-cpu-loras", "--max-cpu-loras", M, "adapters kept in host memory"},
    {"--kv-transfer-config", "--kv-transfer-config, --prefill-replicas", A,
     "disaggregated prefill (NIXL-style): the KV crosses a link of a bandwidth and a latency; "
     "connector protocol overheads are not modelled"},
    // CompilationConfig
    {"--compilation-config", "", A,
     "V1's torch.compile and CUDA graphs as one fraction of the eager kernel floors; capture "
     "sizes and padding to them are not modelled"},
    {"--cudagraph-capture-sizes", "", I, "batches are not padded to a captured size"},
    // Front end and behaviours no flag sets
    {"behaviour: API server", "--frontend-latency-ms", A,
     "the API server as a fixed latency per request (fitted, 6.6 ms); its CPU contention under "
     "load is not modelled"},
    {"behaviour: preemption", "", M,
     "recompute: the victim's blocks freed and it requeued (V1: the last running under fcfs)"},
    {"behaviour: decode attention", "", A,
     "paged decode attention as a fixed time per layer plus the KV streamed at a fraction of HBM "
     "bandwidth (Hopper: FlashInfer's published benchmark and the real runs)"},
    {"behaviour: MoE routing", "", A,
     "tokens routed uniformly over the experts: a step reads the experts some token reaches "
     "(under expert parallelism --expert-skew loads the busiest GPU; the experts read stay "
     "uniform routing's)"},
    {"behaviour: MLA attention", "", A,
     "multi-head latent attention (DeepSeek-V3, Kimi-K2) from its shapes: the latent KV cache as "
     "vLLM sizes it, in --block-size blocks (vLLM forces 64 tokens for FlashMLA on Hopper, 128 "
     "on Blackwell); prefills up-project the latents, decodes attend in the latent, on the "
     "standard attention kernels' efficiencies (no MLA kernel profile; published DeepSeek runs "
     "were 1.4-3.6x slower a token)"},
    {"behaviour: sliding-window attention", "", M,
     "gpt-oss's sliding-window layers as vLLM's hybrid KV cache manager keeps them: a group of "
     "blocks per kind in one pool, the window's blocks freed as it moves, its admission cap, its "
     "cached blocks shortening a prefix hit; their attention over the window alone (matches "
     "vLLM's V1 scheduler step by step on random cases, with and without the prefix cache)"},
    {"behaviour: linear attention", "", A,
     "Qwen3-Next's Gated DeltaNet layers: their state in a block a request of each of their "
     "KV cache groups and the attention block size vLLM raises to hold it (matches vLLM's V1 "
     "scheduler step by step on random cases); their cost from their shapes (projections, "
     "the state read and written once a step a sequence, the recurrence's FLOPs) on the "
     "attention kernels' efficiencies, no Gated DeltaNet kernel profile"},
    {"behaviour: MXFP4 experts", "", A,
     "gpt-oss's MXFP4 experts read at 4.25 bits a weight and computed at BF16 rates (Hopper's "
     "weight-only kernels), at the BF16 MoE kernel's fitted efficiency; in memory as vLLM 0.14's "
     "Triton path holds them (the checkpoint's scales kept beside the swizzled ones, biases in "
     "FP32); Marlin's and FlashInfer's padding not modelled"},
    {"behaviour: NVFP4 GEMMs", "", A,
     "an NVFP4 checkpoint's linear layers read at 4.5 bits a weight and, on GPUs with FP4 tensor "
     "cores (Blackwell), multiplied at the dense FP4 peak with the BF16 GEMMs' fitted "
     "efficiency; elsewhere at the BF16 rate (weight-only kernels: Marlin on NVIDIA GPUs, Petit "
     "on AMD's when petit-kernel is installed); the activations' quantization kernels, "
     "Marlin's slower large-batch GEMMs and any FP4 kernel profile not modelled"},
    {"behaviour: TP across nodes", "--tensor-parallel-size", A,
     "a TP group larger than the GPU's node (gpus_per_node) all-reduces through NCCL over the "
     "nodes' NICs: their bandwidth and an inter-node latency from published nccl-tests runs, no "
     "multi-node profile"},
    {"behaviour: GPU without profiles", "--gpu", A,
     "a GPU whose architecture has no operator profile (ada, blackwell, cdna3) takes the nearest "
     "fitted architecture's efficiencies against its own datasheet peaks (cdna3's scaled by "
     "MI300X's published GEMM, HBM and attention rates against H100's)"},
    {"behaviour: sampling and detokenization", "", A,
     "a per-step and per-sequence GPU term (fitted) and the CPU's work; structured output and "
     "penalties are not modelled"},
};

}  // namespace

const std::vector<VllmArg>& vllm_args() {
  return kArgs;
}

std::string vllm_args_text() {
  std::string t = format("vLLM %s engine arguments and behaviours as servesim models them\n",
                         kManifestVllmVersion);
  t += format("%-34s %-13s %-40s %s\n", "vllm", "fidelity", "servesim flag", "how, or why not");
  for (const VllmArg& a : kArgs) {
    t += format("%-34s %-13s %-40s %s\n", a.vllm, fidelity_name(a.fidelity),
                *a.servesim ? a.servesim : "-", a.note);
  }
  return t;
}

std::string vllm_args_markdown() {
  std::string t =
      "# vLLM's engine arguments in servesim\n\n"
      "<!-- Generated by `servesim list vllm-args --markdown` from analysis/vllm_args.cpp; a test "
      "holds this page to it. Do not edit by hand. -->\n\n";
  t += format(
      "Every vLLM %s engine argument and behaviour servesim knows of: **modelled** (as vLLM "
      "does it), **approximated** (how) or **ignored** (why). `servesim run`, `compare` and "
      "`validate` warn when a configuration leans on an approximated entry.\n\n",
      kManifestVllmVersion);
  t += "| vLLM | fidelity | servesim flag | how, or why not |\n|---|---|---|---|\n";
  for (const VllmArg& a : kArgs) {
    t += format("| `%s` | %s | %s | %s |\n", a.vllm, fidelity_name(a.fidelity),
                *a.servesim ? (std::string("`") + a.servesim + "`").c_str() : "", a.note);
  }
  return t;
}

namespace {

const VllmArg& entry(const std::string& vllm) {
  for (const VllmArg& a : kArgs)
    if (a.vllm == vllm) return a;
  throw Error("vllm-args", "no manifest entry " + vllm);
}

}  // namespace

std::vector<std::string> approximated_args(const SimConfig& c) {
  std::vector<std::string> used;
  if (c.model.quantization() == "fp8") used.push_back("--quantization");
  if (c.model.kv_cache_bytes == 1) used.push_back("--kv-cache-dtype");
  if (c.offload.enabled()) used.push_back("--kv-offloading-size");
  if (c.drafter.method != SpecMethod::kNone) used.push_back("--speculative-config");
  if (c.lora.enabled) used.push_back("--enable-lora");
  if (c.model.num_experts > 1) used.push_back("behaviour: MoE routing");
  if (c.model.mla()) used.push_back("behaviour: MLA attention");
  if (c.model.quantization() == "mxfp4") used.push_back("behaviour: MXFP4 experts");
  if (c.model.quantization() == "nvfp4") used.push_back("behaviour: NVFP4 GEMMs");
  if (c.model.hybrid()) used.push_back("behaviour: linear attention");
  if (c.tp > c.gpu.gpus_per_node) used.push_back("behaviour: TP across nodes");
  if (c.pp > 1) used.push_back("--pipeline-parallel-size");
  if (c.expert_parallel) used.push_back("--enable-expert-parallel");
  if (fitted_arch(c.gpu.arch) != c.gpu.arch) used.push_back("behaviour: GPU without profiles");
  return used;
}

std::vector<std::string> approximations_used(const SimConfig& c) {
  std::vector<std::string> out;
  for (const std::string& v : approximated_args(c)) {
    const VllmArg& a = entry(v);
    out.push_back(std::string(a.vllm) + ": " + a.note);
  }
  return out;
}

}  // namespace servesim
