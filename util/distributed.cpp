#include "util/distributed.hpp"

#include "util/parallel.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
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

// The batch that tells a rank to stop. Not an empty one: Boost.MPI 1.74 dereferences the data of
// the vector it sends, which an empty vector does not have (UBSan: reference to null).
const Batch kStop = {UINT64_MAX};

enum Tag { kReady = 1, kWork = 2, kResults = 3 };

// Only the main thread calls MPI; the threads of a rank compute.
boost::mpi::environment& environment() {
  static boost::mpi::environment env(boost::mpi::threading::funneled);
  return env;
}

// Rank 0: the queue. Each computing rank holds up to kDepth batches: the one it computes and the
// next, waiting in its MPI buffer, so that it never waits for rank 0 between batches. Rank 0 polls
// rather than blocks, so that it leaves its core to the computing ranks (Open MPI's blocking
// receive spins).
constexpr int kDepth = 2;
// Points per thread in a batch: a rank starts its threads once per batch, and a new thread's
// first allocations are slow (a cold malloc arena): one point per thread per batch made a rank
// twice as slow as one process.
constexpr size_t kPointsPerThread = 4;

void serve(const Batch& tasks, const std::function<void(uint64_t, const std::string&)>& done) {
  boost::mpi::communicator comm;
  const size_t ranks = static_cast<size_t>(comm.size());
  std::vector<std::deque<Batch>> given(ranks);  // in the order sent: MPI keeps it per pair
  std::vector<int> threads(ranks, 1);
  std::vector<bool> stopped(ranks, false);
  size_t next = 0, running = ranks - 1;  // ranks not yet told to stop
  auto hand_out = [&](size_t rank) {
    if (stopped[rank]) return;
    Batch b;
    while (b.size() < size_t(threads[rank]) * kPointsPerThread && next < tasks.size())
      b.push_back(tasks[next++]);
    if (b.empty()) {
      comm.send(int(rank), kWork, kStop);
      stopped[rank] = true;
      --running;
    } else {
      comm.send(int(rank), kWork, b);
      given[rank].push_back(std::move(b));
    }
  };
  auto outstanding = [&] {
    for (const auto& q : given) {
      if (!q.empty()) return true;
    }
    return false;
  };
  while (running > 0 || outstanding()) {
    const boost::optional<boost::mpi::status> st =
        comm.iprobe(boost::mpi::any_source, boost::mpi::any_tag);
    if (!st) {
      std::this_thread::sleep_for(std::chrono::microseconds(1000));
      continue;
    }
    const size_t from = static_cast<size_t>(st->source());
    if (st->tag() == kReady) {
      int n = 1;
      comm.recv(int(from), kReady, n);
      threads[from] = std::max(1, n);
      for (int k = 0; k < kDepth; ++k)
        hand_out(from);
    } else if (st->tag() == kResults && !given[from].empty()) {
      std::vector<std::string> texts;
      comm.recv(int(from), kResults, texts);
      const Batch batch = std::move(given[from].front());
      given[from].pop_front();
      if (texts.size() != batch.size()) {
        throw std::runtime_error("rank " + std::to_string(from) + " answered " +
                                 std::to_string(texts.size()) + " tasks of " +
                                 std::to_string(batch.size()));
      }
      hand_out(from);
      for (size_t i = 0; i < batch.size(); ++i)
        done(batch[i], texts[i]);
    } else {
      throw std::runtime_error("unexpected MPI message (tag " + std::to_string(st->tag()) +
                               ") from rank " + std::to_string(from));
    }
  }
}

// A computing rank: the main thread talks to rank 0; THREADS threads, started once for the whole
// queue (a thread started per batch begins with a cold malloc arena: a rank ran at half speed),
// compute the tasks of each batch.
void work(int threads, const std::function<std::string(uint64_t)>& compute) {
  boost::mpi::communicator comm;
  std::mutex m;
  std::condition_variable wake, finished;
  Batch batch;
  std::vector<std::string> texts;
  size_t next = 0, left = 0;
  bool stop = false;
  std::exception_ptr failure;
  auto run = [&] {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      wake.wait(lock, [&] { return stop || next < batch.size(); });
      if (stop) return;
      const size_t i = next++;
      lock.unlock();
      std::string text;
      std::exception_ptr e;
      try {
        text = compute(batch[i]);
      } catch (...) {
        e = std::current_exception();
      }
      lock.lock();
      texts[i] = std::move(text);
      if (e && !failure) failure = e;
      if (--left == 0) finished.notify_one();
    }
  };
  std::vector<std::thread> pool = start_threads(std::max(1, threads), run);
  auto end_pool = [&] {
    {
      std::lock_guard<std::mutex> lock(m);
      stop = true;
    }
    wake.notify_all();
    for (std::thread& t : pool)
      t.join();
  };
  try {
    comm.send(0, kReady, int(pool.size()));
    for (;;) {
      Batch b;
      comm.recv(0, kWork, b);
      if (b == kStop) break;
      std::unique_lock<std::mutex> lock(m);
      batch = std::move(b);
      texts.assign(batch.size(), std::string());
      next = 0;
      left = batch.size();
      wake.notify_all();
      finished.wait(lock, [&] { return left == 0; });
      if (failure) std::rethrow_exception(failure);
      comm.send(0, kResults, texts);
    }
  } catch (...) {
    end_pool();
    throw;
  }
  end_pool();
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
                const std::function<std::string(uint64_t)>& compute,
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

void work_queue(const Batch&, int, const std::function<std::string(uint64_t)>&,
                const std::function<void(uint64_t, const std::string&)>&) {
  throw std::logic_error("work_queue: this servesim was built without MPI");
}

#endif

}  // namespace servesim::mpi
