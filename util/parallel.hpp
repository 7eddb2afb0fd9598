// parallel_for: runs N independent tasks on a pool of threads, handing them out as a work queue
// (the next free thread takes the next index), so slow tasks do not idle the others.
// Promises: DONE(i) runs on the calling thread, once per finished task, in completion order; when
// stderr is a terminal a progress line (done, rate, ETA) is kept up to date there; the first
// exception a task throws (the lowest index among those that threw, so the message does not
// depend on timing) is rethrown once every thread has stopped, and no new task starts after it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace servesim {

// Runs TASK(i) for i in [0, N) on JOBS threads (at most N); WHAT names the work in the progress
// line, or STATUS, when given, words it (it is called from the calling thread while tasks run:
// it must read only what is safe to read then, e.g. atomics), for tasks long enough to report
// progress from within.
void parallel_for(size_t n, int jobs, const char* what, const std::function<void(size_t)>& task,
                  const std::function<void(size_t)>& done,
                  const std::function<std::string()>& status = {});

// Starts N threads running BODY. When the system refuses one (no memory for its stack, the
// process's thread limit), runs on those that started and says so on stderr; Error naming --jobs
// when none could start.
std::vector<std::thread> start_threads(int n, const std::function<void()>& body);

// The number of threads the machine runs at once (at least 1).
int hardware_threads();

}  // namespace servesim
