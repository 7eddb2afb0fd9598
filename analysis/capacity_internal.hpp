// Shared by analysis/capacity.cpp (the rate search) and capacity_fleet.cpp (sizing a fleet at
// --target-rate) only: one judged probe at a rate, the counts a result keeps of its probes, and
// the walk to the fewest replicas that meet the SLO.
#pragma once

#include <cstdint>
#include <functional>

#include "analysis/capacity.hpp"

namespace servesim {

// BASE at RATE, simulated and judged against SPEC; an overloaded probe stops at its last arrival
// unless FULL (a first probe, whose rejections identify the configuration, runs to its end). A
// probe that meets the SLO but is too short to judge overload is lengthened (kMaxLengthenings)
// or fails `too_short`.
Probe probe_at(const RunSpec& base, const CapacitySpec& spec, double rate, Inputs& inputs,
               bool full = false);

// Counts P in C's probes stopped at their last arrival and lengthened to be judged.
void count_stop(const Probe& p, CapacityResult& c);

// The fewest replicas that meet the SLO by MEETS, walking from START: down while one fewer still
// meets it, else up to LIMIT; -1 when none up to LIMIT does.
int64_t fewest_meeting(int64_t start, int64_t limit, const std::function<bool(int64_t)>& meets);

}  // namespace servesim
