// LoraManager: the LoRA adapters one replica's workers hold, as vLLM's LRUCacheWorkerLoRAManager
// and LRUCacheLoRAModelManager keep them (vllm/lora/worker_manager.py, model_manager.py): up to
// max_loras active in the GPU's preallocated slots and max_cpu_loras registered in host memory,
// each set least recently used first. Before a step's forward pass (set_active_adapters, inside
// execute_model: the step waits for it) every adapter of the batch is made active: one not in
// host memory is read from disk first (evicting the least recently used registered adapter), one
// not on the GPU is copied into a slot (evicting the least recently used active one); an
// adapter of the batch is never evicted for another of the same batch.
// Promises: at most max_loras active and max_cpu_loras registered; deterministic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace servesim {

struct LoraManagerOptions {
  int max_loras = 1, max_cpu_loras = 1;
  double adapter_bytes = 0;       // one adapter, as read from disk and copied to each GPU
  double disk_bytes_per_s = 2e9;  // reading an adapter's safetensors into host memory
  double disk_latency_s = 0.01;   // per adapter read (open, parse)
  double h2d_bytes_per_s = 25e9;  // the GPU's host link
};

class LoraManager {
 public:
  explicit LoraManager(const LoraManagerOptions& o);
  LoraManager(const LoraManager&) = delete;
  LoraManager& operator=(const LoraManager&) = delete;

  // Makes ADAPTERS (distinct ids > 0, at most max_loras) active; returns the seconds it takes.
  double activate(std::span<const uint16_t> adapters);

  struct Stats {
    int64_t disk_loads = 0;   // adapters read from disk into host memory
    int64_t activations = 0;  // adapters copied into a GPU slot
    double load_s = 0;        // the steps' waits for both
  };
  const Stats& stats() const { return stats_; }
  // Whether adapter ID is active on the GPU (a router's LoRA-affinity signal).
  bool active(uint16_t id) const;
  size_t num_active() const { return active_.size(); }

 private:
  struct Slot {
    uint16_t id;
    uint64_t last_used;
  };
  // The slot of ID in SET, or -1.
  static int find(const std::vector<Slot>& set, uint16_t id);
  // Puts ID in SET (of at most CAPACITY), evicting its least recently used member not in KEEP.
  void insert(std::vector<Slot>& set, size_t capacity, uint16_t id, std::span<const uint16_t> keep);

  LoraManagerOptions o_;
  std::vector<Slot> active_, registered_;
  uint64_t clock_ = 0;
  Stats stats_;
};

}  // namespace servesim
