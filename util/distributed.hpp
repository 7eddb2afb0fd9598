// Work spread over MPI ranks (Boost.MPI over Open MPI), for the commands that run many
// independent points: `sweep` and `capacity` under `mpirun -n N`. Rank 0 keeps the queue and
// writes the files; the other ranks compute. Built in when CMake finds MPI (SERVESIM_MPI); a
// process that mpirun did not start never initialises MPI, so servesim alone behaves as without
// it (and starts as fast).
// Promises: what a rank computes depends only on the task, so the results rank 0 collects are
// those one process would compute; a rank that asks for work is never left waiting (no task
// left: an empty batch tells it to stop).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace servesim::mpi {

// Whether this build has MPI at all.
bool built_with_mpi();

// This process's place among the ranks: rank 0 of 1 when mpirun did not start it (Open MPI sets
// OMPI_COMM_WORLD_SIZE, PMIx PMIX_RANK) or the build has no MPI. MPI is initialised on the first
// call and finalised at exit.
struct World {
  int rank = 0, size = 1;
  bool distributed() const { return size > 1; }
};
const World& world();

// Ends every rank of the job with STATUS (MPI_Abort): for an error on one rank that the others,
// waiting for it, would never learn of. Without MPI, std::exit(STATUS).
[[noreturn]] void abort_all(int status);

// TASKS (rank 0's list; the others pass none) computed by ranks 1..size-1 as a work queue: each
// rank holds two batches of 4 tasks per thread it has (THREADS, its own), the one it computes and
// the next, and rank 0 sends a rank its next batch as soon as it answers, so a slow batch never
// idles the others. On a computing rank COMPUTE(task) runs on THREADS threads at once (it must be
// safe to call concurrently) and returns the task's text; rank 0 calls DONE(task, text) for each,
// in the order they arrive, and returns when all are done; the others return when no task is
// left. An exception from COMPUTE or DONE ends the call on that rank (the caller then ends the
// job: abort_all). REQUIRES: world().distributed(), every rank calls it once, and no task is
// UINT64_MAX (it tells a rank to stop).
using Batch = std::vector<uint64_t>;
void work_queue(const Batch& tasks, int threads,
                const std::function<std::string(uint64_t)>& compute,
                const std::function<void(uint64_t, const std::string&)>& done);

}  // namespace servesim::mpi
