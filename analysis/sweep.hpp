// Sweeps: a grid of `run` configurations, the slice of it a shard owns, and the table of results
// (one row per point) in HDF5 and CSV.
//  - A SweepGrid has fixed flags and axes; an axis is a `run` flag with a list of values
//    ("a,b,c", or "LO:HI:STEP" for numeric flags, both ends included), each parsed once into a
//    typed RunPatch. A point's RunSpec is the base (defaults and fixed flags) with one patch per
//    axis. Points are numbered in row-major order: the first axis varies slowest, like nested
//    loops in the order given.
//  - A shard K/N (0 <= K < N) owns the points whose number is K modulo N, so that the N shards
//    of a job array share the work evenly and deterministically.
//  - A SweepTable has text, integer and real columns and rows sorted by point. Its HDF5 file
//    (layout in docs/manual/sweeps.md) records the grid, its id and the shard; merging shard files
//    checks that they come from the same grid.
// Promises: a point's arguments, and so its result, depend only on the grid and its number, never
// on the number of threads or shards; equal tables give byte-identical files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/run_spec.hpp"

namespace H5 {
class H5File;
}

namespace servesim {

struct SweepAxis {
  std::string flag;  // without dashes
  std::vector<std::string> values;
  std::vector<RunPatch> set;  // set[k] gives the flag values[k]
};

struct SweepGrid {
  std::vector<std::pair<std::string, std::string>> fixed;  // flag, value ("" for a switch)
  RunSpec base;                                            // the defaults with FIXED applied
  std::vector<SweepAxis> axes;

  uint64_t size() const;
  // The RunSpec of POINT, and the value of each axis at POINT.
  RunSpec spec(uint64_t point) const;
  std::vector<std::string> values(uint64_t point) const;
  std::string describe() const;  // canonical JSON of the grid
  std::string id() const;        // 64-bit FNV-1a of describe(), in hex
};

// Expands one flag's value list: "a,b" -> {a, b}; for NUMERIC flags also "2:20:2" -> 2,4,...,20.
// SEPARATOR splits the values: '|' for a flag whose one value is itself a comma list
// (--replica-gpus h100-sxm:2,a100-80g:1|h100-sxm:4 is two fleets); a separator inside a JSON
// object, array or string does not split (--speculative-config '{"method":"ngram","k":3}' is one
// value, '{...},{...}' two). Throws Error naming FLAG on an
// empty item, a bad range or more than a million values.
std::vector<std::string> expand_values(const std::string& flag, const std::string& text,
                                       bool numeric, char separator = ',');

struct Shard {
  uint64_t index = 0, count = 1;
  bool owns(uint64_t point) const { return point % count == index; }
  std::string text() const;  // "all" or "K/N"
};
// "K/N" with 0 <= K < N; Error naming --shard otherwise.
Shard parse_shard(const std::string& text);

struct SweepRow {
  int64_t point = 0;
  std::vector<std::string> text;
  std::vector<int64_t> ints;
  std::vector<double> reals;
};

struct SweepTable {
  std::vector<std::string> text_columns, int_columns, real_columns;
  std::vector<SweepRow> rows;  // sorted by point, no duplicates
  std::string grid, grid_id;   // SweepGrid::describe() and id()
  uint64_t points_total = 0;
  std::string shard = "all";  // "all", "K/N", or "partial" for an incomplete merge
  // The command that ran the study (util/provenance.hpp): "" for this thread's command; a merge
  // keeps its shards'.
  std::string command_line;

  bool same_schema(const SweepTable& o) const {
    return text_columns == o.text_columns && int_columns == o.int_columns &&
           real_columns == o.real_columns;
  }
};

// T in group `points`, and its intervals (sweep_intervals) in group `intervals`.
void write_sweep_h5(const std::string& path, const SweepTable& t);
// The same table under another MAGIC and GROUP (capacity files: "servesim-capacity",
// "capacity"), with extra string attributes on the root; MORE writes more groups.
// T's rows as group NAME of F, one dataset a column (MORE's groups beside a table's own).
void write_table_group(H5::H5File& f, const char* name, const SweepTable& t);
void write_table_h5(const std::string& path, const SweepTable& t, const char* magic,
                    const char* group,
                    const std::vector<std::pair<std::string, std::string>>& attrs = {},
                    const std::function<void(H5::H5File&)>& more = {});

// Whether a sweep column holds replicates of one configuration, which intervals average over:
// the seed of the workload (seed, trace-seed, ...) or a replicate index.
bool is_replicate_column(const std::string& column);
// A sweep's points grouped into units, one per configuration: every column but the replicate
// columns and `error` equal (points with an error left out), in the order of their first point
// (the unit's `point`). Text and integer columns are the first point's, less the replicate
// columns and `error`; `replicates` counts the points; every real column is the mean of its
// finite values, and METRIC_ci95 the half-width of its 95% Student t interval (NaN below two
// values). Figures draw these; a notebook reads them as servesim.read(path).intervals.
SweepTable sweep_intervals(const SweepTable& points);
SweepTable read_sweep_h5(const std::string& path);
void write_sweep_csv(const std::string& path, const SweepTable& t);

// A row as one JSON line and back (the journal that lets an interrupted sweep resume);
// parse_row returns false for a line that is not a whole row of this schema.
std::string row_json(const SweepRow& r);
bool parse_row(const std::string& line, const SweepTable& schema, SweepRow& row);

// Joins shard tables of one grid into one, sorted by point. Error when grids or schemas differ
// or one point has two different rows. The shard is "all" when every point is present, else
// "partial".
SweepTable merge_sweeps(const std::vector<SweepTable>& parts,
                        const std::vector<std::string>& paths);

}  // namespace servesim
