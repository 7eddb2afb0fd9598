#include "sim/lora_manager.hpp"

#include <algorithm>

namespace servesim {

LoraManager::LoraManager(const LoraManagerOptions& o) : o_(o) {
  active_.reserve(size_t(o.max_loras));
  registered_.reserve(size_t(o.max_cpu_loras));
}

int LoraManager::find(const std::vector<Slot>& set, uint16_t id) {
  for (size_t i = 0; i < set.size(); ++i) {
    if (set[i].id == id) return int(i);
  }
  return -1;
}

bool LoraManager::active(uint16_t id) const {
  return find(active_, id) >= 0;
}

void LoraManager::insert(std::vector<Slot>& set, size_t capacity, uint16_t id,
                         std::span<const uint16_t> keep) {
  if (set.size() >= capacity) {
    // remove_oldest_adapter / the LRU active adapter: the least recently used, not this batch's.
    size_t victim = set.size();
    for (size_t i = 0; i < set.size(); ++i) {
      if (std::find(keep.begin(), keep.end(), set[i].id) != keep.end()) continue;
      if (victim == set.size() || set[i].last_used < set[victim].last_used) victim = i;
    }
    // Every member is this batch's (a batch of more adapters than slots, which vLLM's scheduler
    // never builds once the running ones are counted): the set grows past its capacity.
    if (victim < set.size()) set.erase(set.begin() + std::ptrdiff_t(victim));
  }
  set.push_back({id, clock_});
}

double LoraManager::activate(std::span<const uint16_t> adapters) {
  double seconds = 0;
  for (const uint16_t id : adapters) {
    ++clock_;
    const int r = find(registered_, id);
    if (r >= 0) {
      registered_[size_t(r)].last_used = clock_;
    } else {
      // _load_adapter: read from disk, registered (capacity max_cpu_loras).
      seconds += o_.disk_latency_s + o_.adapter_bytes / o_.disk_bytes_per_s;
      insert(registered_, size_t(o_.max_cpu_loras), id, adapters);
      ++stats_.disk_loads;
    }
    const int a = find(active_, id);
    if (a >= 0) {
      active_[size_t(a)].last_used = clock_;
      continue;
    }
    // activate_adapter: copied into a free slot (max_loras slots).
    seconds += o_.adapter_bytes / o_.h2d_bytes_per_s;
    insert(active_, size_t(o_.max_loras), id, adapters);
    ++stats_.activations;
  }
  stats_.load_s += seconds;
  return seconds;
}

}  // namespace servesim
