// Running a sweep: every point of a grid (or of one shard of it) simulated on a pool of threads,
// one row each, with an append-only journal (OUT.journal, JSON lines) so that a stopped sweep
// started again with the same grid skips the points already done.
//  - The table's columns: the axes (except those a resolved column names), what each point
//    resolved to (label, policy, GPU, model, the cost model's parameter source, error; budget,
//    max_num_seqs, TP, KV blocks), the request rate, every summary metric, then rejection_heavy
//    (1 when it rejects more than kComparableRejectedShare, report.hpp).
//  - A point that cannot run (a model that does not fit a GPU of the grid, ...) is a row with its
//    reason in `error`, not the end of the sweep.
// Promises: a row depends only on the grid and the point's number, never on the number of
// threads or shards or on resuming; a finished sweep leaves no journal.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/run_spec.hpp"
#include "analysis/sweep.hpp"

namespace servesim {

// Checks every flag and value of GRID before anything runs: point 0, and each value of each
// axis. Throws Error as `run` would.
void check_grid(const SweepGrid& grid, Inputs& inputs);

// The table's columns for GRID (no rows yet).
SweepTable sweep_schema(const SweepGrid& grid);

// POINT of GRID, simulated, as a row of SCHEMA.
SweepRow sweep_row(const SweepGrid& grid, const SweepTable& schema, uint64_t point, Inputs& inputs);

struct SweepOptions {
  std::string out;  // the HDF5 table; the journal is OUT.journal
  std::string csv;  // also the CSV table, when not empty
  Shard shard;
  int jobs = 1;
};

struct SweepOutcome {
  SweepTable table;
  uint64_t owned = 0;    // points in the shard
  uint64_t run = 0;      // simulated now
  uint64_t resumed = 0;  // taken from the journal or an earlier finished file
  size_t errors = 0;     // rows that could not run
  bool worker = false;   // an MPI rank other than 0: it computed points, rank 0 wrote the table
};

// Runs the points of GRID that the shard owns and that are not done yet, writes the tables and
// removes the journal. Throws Error when OUT or its journal belongs to another grid or shard.
// Under mpirun (util/distributed.hpp) every rank calls it: rank 0 journals and writes, the others
// simulate the points it hands out, OPTIONS.jobs threads each, and return a `worker` outcome.
SweepOutcome run_sweep(const SweepGrid& grid, const SweepOptions& options, Inputs& inputs);

}  // namespace servesim
