#include "util/distributed.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#if SERVESIM_MPI
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#endif

namespace servesim::mpi {

bool built_with_mpi() {
#if SERVESIM_MPI
  return true;
#else
  return false;
#endif
}

#if SERVESIM_MPI

namespace {

// Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; PMIx and Hydra (MPICH, srun --mpi) launchers
// set PMIX_RANK or PMI_RANK.
bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

enum Tag { kReady = 1, kWork = 2, kResults = 3 };

// Only the main thread calls MPI; the threads of a rank compute.
boost::mpi::environment& environment() {
  static boost::mpi::environment env(boost::mpi::threading::funneled);
  return env;
}

// Rank 0: the queue. Polls rather than blocks, so that it leaves its core to the computing ranks
// (Open MPI's blocking receive spins).
void serve(const Batch& tasks, const std::function<void(uint64_t, const std::string&)>& done) {
  boost::mpi::communicator comm;
  const int ranks = comm.size();
  std::vector<Batch> given(static_cast<size_t>(ranks));
  std::vector<int> threads(static_cast<size_t>(ranks), 1);
  size_t next = 0;
  int working = ranks - 1;
  auto hand_out = [&](int rank) {
    Batch b;
    while (b.size() < size_t(threads[size_t(rank)]) && next < tasks.size())
      b.push_back(tasks[next++]);
    comm.send(rank, kWork, b);
    if (b.empty()) --working;
    given[size_t(rank)] = std::move(b);
  };
  while (working > 0) {
    const boost::optional<boost::mpi::status> st =
        comm.iprobe(boost::mpi::any_source, boost::mpi::any_tag);
    if (!st) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    const int from = st->source();
    if (st->tag() == kReady) {
      int n = 1;
      comm.recv(from, kReady, n);
      threads[size_t(from)] = std::max(1, n);
      hand_out(from);
    } else if (st->tag() == kResults) {
      std::vector<std::string> texts;
      comm.recv(from, kResults, texts);
      const Batch batch = std::move(given[size_t(from)]);
      if (texts.size() != batch.size()) {
        throw std::runtime_error("rank " + std::to_string(from) + " answered " +
                                 std::to_string(texts.size()) + " tasks of " +
                                 std::to_string(batch.size()));
      }
      hand_out(from);  // first: it computes the next batch while this one is recorded
      for (size_t i = 0; i < batch.size(); ++i)
        done(batch[i], texts[i]);
    } else {
      throw std::runtime_error("unexpected MPI message tag " + std::to_string(st->tag()));
    }
  }
}

void work(int threads, const std::function<std::vector<std::string>(const Batch&)>& compute) {
  boost::mpi::communicator comm;
  comm.send(0, kReady, threads);
  for (;;) {
    Batch b;
    comm.recv(0, kWork, b);
    if (b.empty()) return;
    comm.send(0, kResults, compute(b));
  }
}

}  // namespace

const World& world() {
  static const World w = [] {
    World w;
    if (launched_by_mpirun()) {
      environment();
      boost::mpi::communicator comm;
      w.rank = comm.rank();
      w.size = comm.size();
    }
    return w;
  }();
  return w;
}

void abort_all(int status) {
  if (world().distributed()) boost::mpi::communicator().abort(status);
  std::exit(status);
}

void work_queue(const Batch& tasks, int threads,
                const std::function<std::vector<std::string>(const Batch&)>& compute,
                const std::function<void(uint64_t, const std::string&)>& done) {
  if (world().rank == 0) {
    serve(tasks, done);
  } else {
    work(threads, compute);
  }
}

#else

const World& world() {
  static const World w;
  return w;
}

void abort_all(int status) {
  std::exit(status);
}

void work_queue(const Batch&, int, const std::function<std::vector<std::string>(const Batch&)>&,
                const std::function<void(uint64_t, const std::string&)>&) {
  throw std::logic_error("work_queue: this servesim was built without MPI");
}

#endif

}  // namespace servesim::mpi
