// What differs between the configurations two runs record (a run's JSON summary keeps its
// resolved configuration under "config", the workload under "config.workload"): check flags a
// scenario whose configuration moved from its baseline's, and diagnose names what changed
// between two results files beside its verdict.
// Promises: pure functions of their inputs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace servesim {

// The seed a run's summary records (config.workload.seed), or -1.
int64_t summary_seed(const nlohmann::ordered_json& summary);
// The same of a configuration (workload.seed), or -1.
int64_t config_seed(const nlohmann::ordered_json& config);

// Each leaf of configuration BASELINE that differs in CURRENT (or is in one only), by its dotted
// path, in BASELINE's order then CURRENT's: "gpu: h100-sxm -> a100-80g",
// "workload.output_len: lognormal:256:0.8:4:2000 -> lognormal:512:0.8:4:2000". The workload's
// seed aside unless WITH_SEED. Values longer than 60 characters are cut.
std::vector<std::string> configuration_changes(const nlohmann::ordered_json& baseline,
                                               const nlohmann::ordered_json& current,
                                               bool with_seed = false);

// The same between two summaries' "config" (none when either has none).
std::vector<std::string> config_changes(const nlohmann::ordered_json& baseline,
                                        const nlohmann::ordered_json& current);

}  // namespace servesim
