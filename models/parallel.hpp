// How vLLM 0.15.1 lays a replica's model over GPUs beyond tensor parallelism.
// Pipeline parallelism (vLLM --pipeline-parallel-size): how a model's layers are split over the
// stages, each stage a TP group of its own GPUs.
//  - Layers (vllm/distributed/utils.py get_pp_indices): num_layers / pp to each stage, the
//    remainder one each to the stages before the last, from the second-to-last backwards (the
//    first stage holds the embedding, the last the LM head and the sampler).
//  - Between stages (v1/worker/gpu_worker.py execute_model): each stage sends its hidden states
//    and residual (IntermediateTensors) to the next with send_tensor_dict(all_gather_group=TP
//    group): each GPU sends 1/TP of them to its peer over NCCL point-to-point, and the next stage
//    all-gathers them across its TP group.
// Expert parallelism (vLLM --enable-expert-parallel, with --data-parallel-size D): the routed
// experts of every MoE layer are spread whole over the EP = TP x D GPUs of the D data-parallel
// ranks (vllm/model_executor/layers/fused_moe/layer.py determine_expert_map, linear placement:
// E / EP a GPU, the first E mod EP one more); everything else is split over each rank's TP group
// and copied on every rank. Between the ranks, each MoE layer gathers every rank's hidden states
// and router logits and reduce-scatters the experts' outputs (vLLM's default all2all backend,
// allgather_reducescatter: distributed/device_communicators/all2all.py AgRsAll2AllManager).
// Promises: the stages' layers sum to num_layers, each >= 1.
#pragma once

#include <cmath>
#include <vector>

namespace servesim {

// Layers of each of PP stages. REQUIRES: 1 <= pp <= num_layers.
std::vector<int> pp_layer_partition(int num_layers, int pp);

// Whether some GPU's send from stage STAGE to STAGE + 1 leaves its node: stage s holds ranks
// s x tp .. (s + 1) x tp - 1, numbered node after node (vLLM's rank = pp_rank x tp + tp_rank),
// and rank r sends to r + tp, so some send crosses a node boundary iff a multiple of
// GPUS_PER_NODE lies in (s x tp, s x tp + 2 tp - 1].
inline bool pp_send_crosses_node(int stage, int tp, int gpus_per_node) {
  const int first = stage * tp, last_peer = first + 2 * tp - 1;
  return last_peer / gpus_per_node != first / gpus_per_node;
}
// Whether stage STAGE's TP group has GPUs on two nodes while smaller than a node (a TP that does
// not divide the node).
inline bool pp_stage_straddles_nodes(int stage, int tp, int gpus_per_node) {
  const int first = stage * tp;
  return tp < gpus_per_node && first / gpus_per_node != (first + tp - 1) / gpus_per_node;
}

// Routed experts on the GPU of an EP group of EP GPUs that holds the most: ceil(E / EP).
inline int local_experts(int num_experts, int ep) {
  return (num_experts + ep - 1) / ep;
}

// Under uniform routing, the routed (token, expert) pairs the busiest GPU of an EP group of EP
// GPUs receives, over the mean (MEAN_PAIRS a GPU): the normal approximation of the largest of EP
// counts, 1 + sqrt(2 ln EP / mean), never above EP (every pair on one GPU); 1 for one GPU.
// TWO_LOG_EP is 2 ln EP (a cost model keeps it).
inline double ep_imbalance(double mean_pairs, int ep, double two_log_ep) {
  if (ep <= 1 || mean_pairs <= 0) return 1.0;
  return std::min(double(ep), 1.0 + std::sqrt(two_log_ep / mean_pairs));
}
inline double ep_imbalance(double mean_pairs, int ep) {
  return ep_imbalance(mean_pairs, ep, 2.0 * std::log(double(ep)));
}

// Skewed routing (--expert-skew S): the r-th most popular of E experts takes a share of the
// (token, expert) pairs proportional to 1 / (r + 1)^S (Zipf; S = 0 uniform), the experts placed
// as vLLM places them (linearly by index, E / EP a GPU and one more on the first E mod EP) with
// popularity unrelated to the index. The share of all pairs the busiest GPU of an EP group of EP
// GPUs receives, expected over placements: exact over every placement for E <= 8, else the mean
// over 1,024 placements drawn from a fixed seed (the same on every platform). local_experts(E, EP)
// / E when S = 0. REQUIRES: num_experts >= 1, ep >= 1, skew >= 0.
double ep_busiest_share(int num_experts, int ep, double skew);

}  // namespace servesim
