// What a replica is built from its SimConfig, for simulate() and simulate_fleet() (internal to
// sim/): its cost model, and its memory plan checked as vLLM checks it at start-up.
#pragma once

#include <memory>

#include "models/cost_model.hpp"
#include "models/memory_plan.hpp"
#include "models/power.hpp"
#include "sim/host.hpp"
#include "sim/simulation.hpp"

namespace servesim {

// The cost model C names: the table model over C's profiles, or the roofline on C's hardware fit
// and engine.
std::unique_ptr<CostModel> make_cost_model(const SimConfig& c);

// What C's GPUs draw (the GPU's power on C's hardware fit: the architecture's without one).
PowerModel make_power_model(const SimConfig& c);

// What C's memory plan reads of its TP degree, scheduler budgets and engine.
ServerShape server_shape(const SimConfig& c);

// C's scheduler configuration for a replica with memory plan M: its CPU KV tier sized (Error
// naming the flag when the memory given holds no offloaded block).
SchedulerConfig replica_scheduler_config(const SimConfig& c, const MemoryPlan& m);
// The link HOST copies KV to and from the CPU tier over, as C says, and its LoRA adapters.
void set_host_link(Host& host, const SimConfig& c);

// C's memory plan; Error where vLLM would not start (fewer than V1's 2 blocks, or a cache that
// cannot hold one request of max_model_len tokens), naming the flag that fixes it.
MemoryPlan checked_memory_plan(const SimConfig& c);

}  // namespace servesim
