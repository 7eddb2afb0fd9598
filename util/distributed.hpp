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
// rank asks for a batch of as many tasks as it has threads (THREADS, its own), COMPUTE turns the
// batch into one text per task on those threads, and rank 0 hands the next batch to whichever
// rank answers first, so a slow batch never idles the others. Rank 0 calls DONE(task, text) for
// each, in the order they arrive, and returns when all are done; the others return when no task
// is left. REQUIRES: world().distributed(), and every rank calls it once.
using Batch = std::vector<uint64_t>;
void work_queue(const Batch& tasks, int threads,
                const std::function<std::vector<std::string>(const Batch&)>& compute,
                const std::function<void(uint64_t, const std::string&)>& done);

}  // namespace servesim::mpi
