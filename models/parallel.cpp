#include "models/parallel.hpp"

#include <cassert>

namespace servesim {

std::vector<int> pp_layer_partition(int num_layers, int pp) {
  assert(pp >= 1 && pp <= num_layers);
  std::vector<int> layers(size_t(pp), num_layers / pp);
  const int remaining = num_layers % pp;
  // get_pp_indices: for i in range(2, remaining + 2): partitions[-i] += 1.
  for (int i = 2; i < remaining + 2; ++i)
    ++layers[size_t(pp - i)];
  return layers;
}

}  // namespace servesim
