#include <map>

#include "analysis/replicates.hpp"
#include "analysis/sweep.hpp"

namespace servesim {

bool is_replicate_column(const std::string& c) {
  const std::string seed = "-seed";
  return c == "seed" || c == "replicate" || c == "num-seeds" ||
         (c.size() > seed.size() && c.compare(c.size() - seed.size(), seed.size(), seed) == 0);
}

SweepTable sweep_intervals(const SweepTable& points) {
  SweepTable u;
  std::vector<size_t> kept;  // text columns of the units, by index into POINTS'
  size_t error = points.text_columns.size();
  for (size_t c = 0; c < points.text_columns.size(); ++c) {
    const std::string& name = points.text_columns[c];
    if (name == "error") error = c;
    if (name == "error" || is_replicate_column(name)) continue;
    kept.push_back(c);
    u.text_columns.push_back(name);
  }
  u.int_columns = points.int_columns;
  u.int_columns.push_back("replicates");
  for (const std::string& name : points.real_columns) {
    u.real_columns.push_back(name);
    u.real_columns.push_back(name + "_ci95");
  }
  u.grid = points.grid;
  u.grid_id = points.grid_id;
  u.shard = points.shard;
  // The points of each unit, units in the order of their first point.
  std::map<std::vector<std::string>, size_t> unit_of;
  std::vector<std::vector<const SweepRow*>> members;
  for (const SweepRow& r : points.rows) {
    if (error < r.text.size() && !r.text[error].empty()) continue;
    std::vector<std::string> key;
    for (size_t c : kept)
      key.push_back(r.text[c]);
    for (int64_t v : r.ints)
      key.push_back(std::to_string(v));
    const auto [it, added] = unit_of.emplace(key, members.size());
    if (added) members.emplace_back();
    members[it->second].push_back(&r);
  }
  for (const std::vector<const SweepRow*>& m : members) {
    SweepRow row;
    row.point = m.front()->point;
    for (size_t c : kept)
      row.text.push_back(m.front()->text[c]);
    row.ints = m.front()->ints;
    row.ints.push_back(int64_t(m.size()));
    for (size_t c = 0; c < points.real_columns.size(); ++c) {
      Replicate x;
      for (const SweepRow* r : m)
        x.values.push_back(r->reals[c]);
      summarise(x);
      row.reals.push_back(x.mean);
      row.reals.push_back(ci95_half_width(x.stddev, x.n));
    }
    u.rows.push_back(std::move(row));
  }
  u.points_total = u.rows.size();
  return u;
}

}  // namespace servesim
