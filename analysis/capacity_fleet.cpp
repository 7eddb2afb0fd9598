// Sizing the fleet that serves --target-rate (capacity.hpp: size_fleet): copies of one
// configuration, K copies of a mixed fleet's groups, one group's count (--size-group), or the
// cheapest prefill+decode split of a disaggregated one; each candidate a probe at the target.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "analysis/capacity.hpp"
#include "analysis/capacity_internal.hpp"
#include "util/error.hpp"
#include "util/field_path.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {

// The cheapest split of the fewest disaggregated replicas meeting SPEC at TARGET (size_fleet).
void size_split(const RunSpec& base, const CapacitySpec& spec, double target, int64_t ideal,
                CapacityResult& c, Inputs& inputs) {
  const int64_t limit =
      std::min<int64_t>(2 * ideal * (base.prefill_replicas + base.decode_replicas) + 8, 64);
  for (int64_t n = 2; n <= limit; ++n) {
    double best = INFINITY;
    for (int64_t p = 1; p < n; ++p) {
      RunSpec s = base;
      s.prefill_replicas = int(p);
      s.decode_replicas = int(n - p);
      ++c.iterations;
      const Probe probe = probe_at(s, spec, target, inputs);
      count_stop(probe, c);
      if (!probe.ok) continue;
      // The cheapest by dollars per hour, or by GPUs when a price is unknown.
      const FleetPrice price = price_pools(probe.pools, spec.cost);
      const double cost = std::isnan(price.usd_per_h) ? double(price.gpus) : price.usd_per_h;
      if (cost < best) {
        best = cost;
        c.fleet_split = std::to_string(p) + "+" + std::to_string(n - p);
        c.fleet_gpus = price.gpus;
        c.fleet_usd_per_h = price.usd_per_h;
      }
    }
    if (!c.fleet_split.empty()) {
      c.fleet_replicas = n;
      return;
    }
  }
  c.fleet_replicas = -1;
}

// --replica-gpus with every group's count times K ("h100-sxm:2,a100-80g:1" x 2 =
// "h100-sxm:4,a100-80g:2"); the items were checked when the configuration was.
std::vector<GpuCount> scaled_groups(std::vector<GpuCount> groups, int64_t k) {
  for (GpuCount& g : groups)
    g.count = int(g.count * k);
  return groups;
}

// GROUPS with GPU's count set to K (the others kept); empty when no group is GPU's. The count of
// GPU's group in GROUPS is returned in FOUND.
std::vector<GpuCount> with_group_count(std::vector<GpuCount> groups, const std::string& gpu,
                                       int64_t k, int64_t* found = nullptr) {
  bool seen = false;
  for (GpuCount& g : groups) {
    if (g.gpu != gpu) continue;
    if (found != nullptr) *found = g.count;
    g.count = int(k);
    seen = true;
  }
  return seen ? groups : std::vector<GpuCount>{};
}

// size_fleet for --size-group: the fewest replicas of that group, from its given count START,
// for which the fleet meets SPEC at TARGET (at least one, at most 4 x START + 8 and the fleet's
// limit). fleet_replicas is that count; fleet_split the fleet's groups.
void size_group(const RunSpec& base, const CapacitySpec& spec, double target, int64_t start,
                CapacityResult& c, Inputs& inputs) {
  int64_t others = 0;  // GPUs of the fixed groups
  for (const GpuPool& p : c.pools)
    others += p.gpu == spec.size_group ? 0 : p.gpus();
  std::map<int64_t, FleetPrice> priced;
  auto meets = [&](int64_t k) {
    RunSpec s = base;
    s.replica_gpus = with_group_count(base.replica_gpus, spec.size_group, k);
    ++c.iterations;
    const Probe probe = probe_at(s, spec, target, inputs);
    count_stop(probe, c);
    if (probe.ok) priced[k] = price_pools(probe.pools, spec.cost);
    if (c.router_warnings.empty()) c.router_warnings = probe.router_warnings;
    return probe.ok;
  };
  const int64_t limit = std::min<int64_t>(4 * start + 8, kMaxReplicas - others);
  const int64_t k = fewest_meeting(std::max<int64_t>(1, std::min(start, limit)), limit, meets);
  c.fleet_replicas = k;
  if (k > 0) {
    c.fleet_split = replica_gpus_text(with_group_count(base.replica_gpus, spec.size_group, k));
    c.fleet_gpus = priced[k].gpus;
    c.fleet_usd_per_h = priced[k].usd_per_h;
  }
}

}  // namespace

void size_fleet(const RunSpec& base, const CapacitySpec& spec, double target, CapacityResult& c,
                Inputs& inputs) {
  const int64_t ideal = replicas_for(target, c);
  if (ideal <= 0) return;
  c.router = base.router;
  if (base.prefill_replicas > 0 || base.decode_replicas > 0) {
    size_split(base, spec, target, ideal, c, inputs);
    return;
  }
  // Past the fleet's limit no simulated fleet can be checked: none (the ideal count still says
  // how many it would take).
  if (ideal > kMaxReplicas) {
    c.fleet_replicas = -1;
    return;
  }
  // A mixed fleet (--replica-gpus) grows in proportion: K copies of its groups (issue 25), K
  // counted in fleet_replicas as copies of the whole fleet.
  const bool mixed = !base.replica_gpus.empty();
  // --size-group GPU: only that group's count moves, the others as given (issue 25).
  const bool one_group = mixed && !spec.size_group.empty();
  int64_t start = 0;
  if (one_group && with_group_count(base.replica_gpus, spec.size_group, 0, &start).empty()) {
    throw Error(field::kSizeGroup, "'" + spec.size_group +
                                       "' is not a group of {{fleet.replica_gpus}} " +
                                       replica_gpus_text(base.replica_gpus));
  }
  if (one_group) {
    size_group(base, spec, target, start, c, inputs);
    return;
  }
  const int64_t per_copy = mixed ? c.gpus : 1;  // GPUs per copy, to keep within the limit
  if (mixed && ideal * std::max<int64_t>(per_copy, 1) > kMaxReplicas) {
    c.fleet_replicas = -1;
    return;
  }
  std::map<int64_t, FleetPrice> priced;  // the fleets that met it
  auto meets = [&](int64_t k) {
    RunSpec s = base;
    if (mixed) {
      s.replica_gpus = scaled_groups(base.replica_gpus, k);
    } else {
      s.num_replicas = int(k);
      s.data_parallel_size.forget();
    }
    if (k == 1 && !mixed) {  // one replica has no router to configure
      s.router.forget();
      s.router_signal_delay_s.forget();
      s.prefix_index.forget();
    }
    ++c.iterations;
    try {
      const Probe probe = probe_at(s, spec, target, inputs);
      count_stop(probe, c);
      if (probe.ok) priced[k] = price_pools(probe.pools, spec.cost);
      if (c.router_warnings.empty()) c.router_warnings = probe.router_warnings;
      return probe.ok;
    } catch (const Error& e) {
      throw Error(field::kTargetRate, format("sizing a fleet of %lld replicas for %g req/s: %s",
                                             static_cast<long long>(k), target, e.what()));
    }
  };
  const int64_t limit =
      std::min<int64_t>(4 * ideal + 8, kMaxReplicas / std::max<int64_t>(per_copy, 1));
  const int64_t k = fewest_meeting(ideal, limit, meets);
  c.fleet_replicas = k;
  if (k > 0) {
    c.fleet_gpus = priced[k].gpus;
    c.fleet_usd_per_h = priced[k].usd_per_h;
  }
}

}  // namespace servesim
