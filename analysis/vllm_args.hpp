// The fidelity manifest: every vLLM engine argument and behaviour servesim knows of, each marked
// modelled, approximated (how) or ignored (why), against the vLLM version servesim mirrors. One
// table in code: `servesim list vllm-args` prints it, docs/manual/vllm-args.md is generated from
// it (`servesim list vllm-args --markdown`; a test holds the page to the table), and run, compare
// and validate warn when a configuration leans on an approximated entry (approximations_used).
#pragma once

#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace servesim {

// The vLLM release whose engine arguments and scheduler the manifest describes.
inline constexpr const char* kManifestVllmVersion = "0.15.1";

enum class Fidelity { kModelled, kApproximated, kIgnored };
const char* fidelity_name(Fidelity f);  // "modelled", "approximated", "ignored"

struct VllmArg {
  const char* vllm;      // vLLM's flag ("--max-num-seqs") or a behaviour ("behaviour: ...")
  const char* servesim;  // the servesim flag that sets it ("" if none)
  Fidelity fidelity;
  const char* note;  // how it is modelled or approximated, or why it is ignored
};

// The manifest, grouped as vLLM groups its arguments (model, cache, parallel, scheduler, ...).
const std::vector<VllmArg>& vllm_args();

// The manifest as a plain-text table (`servesim list vllm-args`) and as the Markdown page.
std::string vllm_args_text();
std::string vllm_args_markdown();

// The approximated entries CONFIG leans on: their names (VllmArg::vllm), and each as
// "VLLM_ARG: NOTE".
std::vector<std::string> approximated_args(const SimConfig& config);
std::vector<std::string> approximations_used(const SimConfig& config);

}  // namespace servesim
