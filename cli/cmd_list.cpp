// `servesim list gpus | models | schedulers`: the catalogues.
#include <cstdio>
#include <ostream>
#include <string>

#include "analysis/vllm_args.hpp"
#include "cli/commands.hpp"
#include "models/engine.hpp"
#include "models/gpu.hpp"
#include "models/hardware.hpp"
#include "models/model.hpp"
#include "scheduler/policy.hpp"
#include "util/error.hpp"

namespace servesim::cli {

namespace {

const char* kListUsage =
    "usage: servesim list gpus | models | schedulers | vllm-args [--markdown]\n"
    "  vllm-args: every vLLM engine argument and behaviour servesim knows of, each modelled,\n"
    "  approximated (how) or ignored (why); --markdown: as docs/manual/vllm-args.md\n";

void list_gpus(std::ostream& out) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%-13s %-26s %-9s %11s %10s %10s %8s %12s %21s %16s %13s %6s %7s  %s\n", "name",
                "description", "arch", "bf16_tflops", "fp8_tflops", "fp4_tflops", "hbm_gib",
                "hbm_gb_per_s", "interconnect_gb_per_s", "network_gb_per_s", "gpus_per_node",
                "tdp_w", "idle_w", "hardware fit");
  out << buf;
  for (const GpuSpec& g : gpu_catalogue()) {
    std::snprintf(buf, sizeof buf,
                  "%-13s %-26s %-9s %11.1f %10.1f %10.1f %8.1f %12.0f %21.0f %16.1f %13d %6.0f "
                  "%7.0f  %s\n",
                  g.name.c_str(), g.description.c_str(), arch_name(g.arch), g.bf16_tflops,
                  g.fp8_tflops, g.fp4_tflops, g.hbm_gib, g.hbm_gb_per_s, g.interconnect_gb_per_s,
                  g.network_gb_per_s, g.gpus_per_node, g.tdp_w, g.idle_w,
                  hardware_source(g).c_str());
    out << buf;
  }
  out << "interconnect and network: GB/s in one direction (half the datasheets' bidirectional "
         "figures); tdp_w and idle_w: each GPU's power limit and its draw with a model loaded "
         "and nothing running (docs/design/cost-model.md, \"Power and energy\")\nengines (on every "
         "GPU): v0: "
      << engine_source(Engine::kV0) << "; v1: " << engine_source(Engine::kV1) << "\n";
}

void list_models(std::ostream& out) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-25s %-36s %6s %6s %5s %4s %6s %6s %8s %8s %7s %8s %8s %5s\n",
                "name", "hf_id", "layers", "hidden", "heads", "kv", "inter", "vocab", "max_pos",
                "experts", "params", "active", "kv_KiB/tok", "dtype");
  out << buf;
  for (const ModelSpec& m : model_catalogue()) {
    // MLA keeps one latent per token, not KV heads.
    const std::string kv = m.mla() ? "mla" : std::to_string(m.num_kv_heads);
    std::snprintf(buf, sizeof buf,
                  "%-25s %-36s %6d %6d %5d %4s %6d %6d %8d %5d/%-2d %6.2fB %7.2fB %8.0f %5s\n",
                  m.name.c_str(), m.hf_id.c_str(), m.num_layers, m.hidden_size, m.num_heads,
                  kv.c_str(), m.intermediate_size, m.vocab_size, m.max_position,
                  m.experts_per_token, m.num_experts, double(m.total_params()) / 1e9,
                  double(m.active_params()) / 1e9, double(m.kv_bytes_per_token_per_gpu(1)) / 1024,
                  m.quantization().empty() ? "bf16" : m.quantization().c_str());
    out << buf;
  }
}

void list_schedulers(std::ostream& out) {
  for (Policy p : kPolicies)
    out << policy_name(p) << "\t" << policy_summary(p) << "\n";
}

}  // namespace

int cmd_list(int argc, const char* const* argv, std::ostream& out) {
  const std::string what = argc >= 2 ? argv[1] : "";
  if (what == "--help" || what == "-h") {
    out << kListUsage;
    return 0;
  }
  if (what == "vllm-args" && argc == 3 && std::string(argv[2]) == "--markdown") {
    out << vllm_args_markdown();
    return 0;
  }
  if (argc > 2) throw Error("list", "unexpected argument '" + std::string(argv[2]) + "'");
  if (what == "vllm-args") {
    out << vllm_args_text();
  } else if (what == "gpus") {
    list_gpus(out);
  } else if (what == "models") {
    list_models(out);
  } else if (what == "schedulers") {
    list_schedulers(out);
  } else {
    throw Error("list", "expected gpus, models, schedulers or vllm-args, got '" + what + "'");
  }
  return 0;
}

}  // namespace servesim::cli
