#include "models/parallel.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

#include "util/hash.hpp"

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

namespace {

// The busiest GPU's share of the pairs when slot e holds expert PLACED[e], whose share is
// SHARE[PLACED[e]], and the slots go to EP GPUs as vLLM places experts (determine_expert_map,
// linear): E / EP each, one more on each of the first E mod EP.
double busiest(const std::vector<double>& share, const std::vector<int>& placed, int ep) {
  const size_t n = placed.size(), base = n / size_t(ep), extra = n % size_t(ep);
  double most = 0;
  for (size_t g = 0, first = 0; g < size_t(ep); ++g) {
    const size_t count = base + (g < extra ? 1 : 0);
    double load = 0;
    for (size_t e = first; e < first + count; ++e)
      load += share[size_t(placed[e])];
    first += count;
    most = std::max(most, load);
  }
  return most;
}

}  // namespace

double ep_busiest_share(int num_experts, int ep, double skew) {
  assert(num_experts >= 1 && ep >= 1 && skew >= 0);
  const int per_gpu = local_experts(num_experts, ep);
  if (skew == 0 || ep == 1) return std::min(1.0, double(per_gpu) / num_experts);
  std::vector<double> share(static_cast<size_t>(num_experts));
  for (int r = 0; r < num_experts; ++r)
    share[size_t(r)] = std::pow(double(r + 1), -skew);
  const double total = std::accumulate(share.begin(), share.end(), 0.0);
  for (double& q : share)
    q /= total;
  std::vector<int> placed(static_cast<size_t>(num_experts));
  std::iota(placed.begin(), placed.end(), 0);
  double sum = 0;
  int64_t n = 0;
  if (num_experts <= 8) {
    do {
      sum += busiest(share, placed, ep);
      ++n;
    } while (std::next_permutation(placed.begin(), placed.end()));
    return sum / double(n);
  }
  // Fisher-Yates with its own draws (std::shuffle's differ between standard libraries).
  uint64_t state = 0x5eed0fe9a11e2ULL;
  for (n = 0; n < 1024; ++n) {
    for (int i = num_experts - 1; i > 0; --i) {
      state = mix64(state + 0x9e3779b97f4a7c15ULL);
      std::swap(placed[size_t(i)], placed[size_t(state % uint64_t(i + 1))]);
    }
    sum += busiest(share, placed, ep);
  }
  return sum / double(n);
}

}  // namespace servesim
