// Pipeline parallelism (vLLM --pipeline-parallel-size): how a model's layers are split over the
// stages, each stage a TP group of its own GPUs, as vLLM 0.15.1 does it.
//  - Layers (vllm/distributed/utils.py get_pp_indices): num_layers / pp to each stage, the
//    remainder one each to the stages before the last, from the second-to-last backwards (the
//    first stage holds the embedding, the last the LM head and the sampler).
//  - Between stages (v1/worker/gpu_worker.py execute_model): each stage sends its hidden states
//    and residual (IntermediateTensors) to the next with send_tensor_dict(all_gather_group=TP
//    group): each GPU sends 1/TP of them to its peer over NCCL point-to-point, and the next stage
//    all-gathers them across its TP group.
// Promises: the stages' layers sum to num_layers, each >= 1.
#pragma once

#include <vector>

namespace servesim {

// Layers of each of PP stages. REQUIRES: 1 <= pp <= num_layers.
std::vector<int> pp_layer_partition(int num_layers, int pp);

// Whether the send from stage S to S + 1 leaves a node: stage s holds ranks s x tp .. (s + 1) x
// tp - 1, numbered node after node (vLLM's rank = pp_rank x tp + tp_rank).
inline bool pp_send_crosses_node(int stage, int tp, int gpus_per_node) {
  const int last = (stage + 1) * tp - 1, next = (stage + 1) * tp;
  return last / gpus_per_node != next / gpus_per_node;
}

}  // namespace servesim
