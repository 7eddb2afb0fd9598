#include "util/parallel.hpp"

#include "util/error.hpp"
#include "util/progress.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace servesim {

int hardware_threads() {
  return std::max(1, int(std::thread::hardware_concurrency()));
}

namespace {

// What the workers share with the calling thread.
struct Queue {
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex m;
  std::condition_variable cv;
  std::deque<size_t> finished;
  std::map<size_t, std::exception_ptr> errors;
};

void work(Queue& q, size_t n, const std::function<void(size_t)>& task) {
  for (;;) {
    const size_t i = q.next++;
    if (i >= n || q.stop) return;
    std::exception_ptr e;
    try {
      task(i);
    } catch (...) {
      e = std::current_exception();
      q.stop = true;
    }
    const std::lock_guard<std::mutex> lock(q.m);
    if (e) {
      q.errors.emplace(i, e);
    } else {
      q.finished.push_back(i);
    }
    q.cv.notify_one();
  }
}

}  // namespace

std::vector<std::thread> start_threads(int n, const std::function<void()>& body) {
  std::vector<std::thread> pool;
  pool.reserve(size_t(std::max(0, n)));
  for (int t = 0; t < n; ++t) {
    try {
      pool.emplace_back(body);
    } catch (const std::system_error& e) {
      // Out of memory for a stack, or past the process's thread limit: run on what started.
      if (pool.empty()) {
        throw Error(field::kJobs, "cannot start a thread (" + std::string(e.what()) +
                                      "): use a smaller " + field::ref(field::kJobs) +
                                      ", or give the process more memory");
      }
      std::fprintf(stderr,
                   "servesim: %s: only %zu of %d threads could start (%s); running on %zu\n",
                   spell_field(field::kJobs, true).c_str(), pool.size(), n, e.what(), pool.size());
      break;
    }
  }
  return pool;
}

void parallel_for(size_t n, int jobs, const char* what, const std::function<void(size_t)>& task,
                  const std::function<void(size_t)>& done,
                  const std::function<std::string()>& status) {
  Queue q;
  const int threads = int(std::min<size_t>(size_t(std::max(1, jobs)), std::max<size_t>(n, 1)));
  std::vector<std::thread> pool = start_threads(threads, [&] { work(q, n, task); });
  {
    Progress progress(what, n);
    size_t count = 0;
    std::unique_lock<std::mutex> lock(q.m);
    while (count < n && q.errors.empty()) {
      q.cv.wait_for(lock, std::chrono::milliseconds(200),
                    [&] { return !q.finished.empty() || !q.errors.empty(); });
      while (!q.finished.empty()) {
        const size_t i = q.finished.front();
        q.finished.pop_front();
        lock.unlock();
        done(i);
        ++count;
        lock.lock();
      }
      if (status) {
        progress.show_text(status());
      } else {
        progress.show(count);
      }
    }
    q.stop = !q.errors.empty();
  }
  for (std::thread& t : pool)
    t.join();
  if (!q.errors.empty()) std::rethrow_exception(q.errors.begin()->second);
}

}  // namespace servesim
