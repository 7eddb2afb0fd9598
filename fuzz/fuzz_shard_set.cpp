// Fuzz target: `sweep merge` of a set of shard files (analysis/sweep.hpp): each fuzz byte picks a
// row of a 6-point sweep for one of up to three shards, and may change its point, a value or the
// shard's grid, as shards of different runs, grids or versions of a grid would. Each shard is
// written and read back as a file, then the set merged. A merge that is accepted holds each point
// once, sorted, within the grid, and says "all" only when every point is there.
#include "analysis/sweep.hpp"
#include "fuzz_common.hpp"
#include "h5_templates.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  static const SweepTable full = read_sweep_h5(fuzz::template_file(
      "shards.h5", {"sweep", "--num-requests", "4", "--seed", "1,2,3", "--scheduler",
                    "vllm-v0,chunked:512", "--jobs", "1", "--out", "{}"}));
  std::vector<SweepTable> shards(3, full);
  for (SweepTable& s : shards)
    s.rows.clear();
  for (size_t i = 0; i + 1 < size && i < 64; i += 2) {
    const uint8_t pick = data[i], edit = data[i + 1];
    SweepTable& s = shards[pick % 3];
    SweepRow row = full.rows[(pick / 3) % full.rows.size()];
    switch (edit % 8) {
      case 0:
        row.point = int64_t(edit / 8) - 4;
        break;  // another, or no, point
      case 1:
        if (!row.reals.empty()) row.reals[0] += 1;
        break;  // a value that differs
      case 2:
        s.grid_id = "ffffffffffffffff";
        break;  // another grid
      case 3:
        s.points_total = edit / 8;
        break;  // another grid's size
      default:
        break;  // the row as it is
    }
    s.rows.push_back(row);
  }
  std::vector<SweepTable> read;
  std::vector<std::string> paths;
  fuzz::expect_errors([&] {
    for (size_t k = 0; k < shards.size(); ++k) {
      SweepTable& s = shards[k];
      std::sort(s.rows.begin(), s.rows.end(),
                [](const SweepRow& a, const SweepRow& b) { return a.point < b.point; });
      s.rows.erase(
          std::unique(s.rows.begin(), s.rows.end(),
                      [](const SweepRow& a, const SweepRow& b) { return a.point == b.point; }),
          s.rows.end());
      s.shard = std::to_string(k) + "/3";
      paths.push_back(fuzz::scratch_path("_shard" + std::to_string(k) + ".h5"));
      write_sweep_h5(paths.back(), s);
      read.push_back(read_sweep_h5(paths.back()));
    }
    const SweepTable m = merge_sweeps(read, paths);
    for (size_t i = 0; i < m.rows.size(); ++i) {
      fuzz::fuzz_assert(m.rows[i].point >= 0 && uint64_t(m.rows[i].point) < m.points_total,
                        "merged points within the grid");
      fuzz::fuzz_assert(i == 0 || m.rows[i - 1].point < m.rows[i].point, "each point once, sorted");
    }
    fuzz::fuzz_assert((m.shard == "all") == (m.rows.size() == m.points_total),
                      "'all' exactly when complete");
  });
  return 0;
}
