#include "util/parallel.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace servesim {

int hardware_threads() {
  return std::max(1, int(std::thread::hardware_concurrency()));
}

namespace {

// The progress line on stderr, at most five times a second, when stderr is a terminal.
class Progress {
 public:
  Progress(const char* what, size_t n) : what_(what), n_(n), tty_(isatty(fileno(stderr)) != 0) {}
  ~Progress() {
    if (tty_ && n_ > 0) std::fprintf(stderr, "\n");
  }
  void show(size_t count) {
    const auto now = std::chrono::steady_clock::now();
    if (!tty_ || (now - last_ <= std::chrono::milliseconds(200) && count != n_)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = s > 0 ? double(count) / s : 0;
    std::fprintf(stderr, "\r%s: %zu/%zu (%.0f%%), %.1f/s, ETA %.0f s   ", what_, count, n_,
                 n_ ? 100.0 * double(count) / double(n_) : 100.0, rate,
                 rate > 0 ? double(n_ - count) / rate : 0.0);
    std::fflush(stderr);
  }

 private:
  const char* what_;
  size_t n_;
  bool tty_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};

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

void parallel_for(size_t n, int jobs, const char* what, const std::function<void(size_t)>& task,
                  const std::function<void(size_t)>& done) {
  Queue q;
  const int threads = int(std::min<size_t>(size_t(std::max(1, jobs)), std::max<size_t>(n, 1)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] { work(q, n, task); });
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
      progress.show(count);
    }
    q.stop = !q.errors.empty();
  }
  for (std::thread& t : pool)
    t.join();
  if (!q.errors.empty()) std::rethrow_exception(q.errors.begin()->second);
}

}  // namespace servesim
