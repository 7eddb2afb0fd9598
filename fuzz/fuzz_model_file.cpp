// Fuzz target: load_model_file (models/model.hpp), a file of fixed, typed keys with physical
// ranges, and the parameter and byte counts of what it loads.
#include "fuzz_common.hpp"
#include "models/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = servesim::fuzz::input_file(data, size, ".ini");
  servesim::fuzz::expect_errors([&] {
    // The counts of whatever loads stay within int64 (UBSan traps an overflow).
    const servesim::ModelSpec m = servesim::load_model_file(path);
    (void)(m.total_params() + m.active_params() + m.weight_bytes() + m.active_linear_params() +
           m.kv_bytes_per_token_per_gpu(1));
    (void)m.weight_bytes_per_gpu(8);
    // Sliding-window layers' KV groups, whole and on a pipeline stage, and MXFP4's load extra.
    (void)(m.kv_cache_layers_per_block() + m.kv_cache_layers_per_block(1, m.num_layers - 1) +
           m.mxfp4_load_extra_bytes() + m.routed_expert_bytes());
    // A hybrid model's linear layers: their state, the block size that holds it, their groups.
    (void)(m.linear_state_bytes_per_layer(1) + m.hybrid_block_size(1) + m.kv_cache_state_groups() +
           m.mixer_params());
  });
  return 0;
}
