#include "util/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace servesim {

Progress::Progress(const char* what, size_t total, double delay_s)
    : what_(what),
      total_(total),
      delay_s_(delay_s),
      tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (shown_) std::fprintf(stderr, "\n");
}

void Progress::show(size_t done) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - start_).count();
  if (s < delay_s_) return;
  if (shown_ && now - last_ <= std::chrono::milliseconds(200) && done != total_) return;
  last_ = now;
  shown_ = true;
  const double rate = s > 0 ? double(done) / s : 0;
  std::fprintf(stderr, "\r%s: %zu/%zu (%.0f%%), %.1f/s, ETA %.0f s   ", what_, done, total_,
               total_ ? 100.0 * double(done) / double(total_) : 100.0, rate,
               rate > 0 ? double(total_ - done) / rate : 0.0);
  std::fflush(stderr);
}

void Progress::show_text(const std::string& text) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - start_).count() < delay_s_) return;
  if (shown_ && now - last_ <= std::chrono::milliseconds(200)) return;
  last_ = now;
  shown_ = true;
  std::fprintf(stderr, "\r%s%*s", text.c_str(),
               int(width_ > text.size() ? width_ - text.size() : 0), "");
  std::fflush(stderr);
  width_ = text.size();
}

}  // namespace servesim
