// RequestSpec: one request as a workload states it, before any simulation: when it arrives and
// how many tokens it brings and asks for. Workloads (generators, trace importers) produce a vector
// of them sorted by arrival time with ids 0..N-1 in that order; the simulator never modifies it.
#pragma once

#include <cstdint>
#include <vector>

namespace servesim {

struct RequestSpec {
  uint32_t id = 0;
  double arrival_s = 0;       // seconds from the start of the workload
  int32_t input_tokens = 0;   // prompt length, >= 1
  int32_t output_tokens = 0;  // tokens to generate (vLLM max_tokens with ignore_eos), >= 1
};

using Workload = std::vector<RequestSpec>;

}  // namespace servesim
