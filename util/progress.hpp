// Progress: a line on stderr (done/total, percent, rate, ETA), updated at most five times a
// second and only when stderr is a terminal, so that files and pipes stay byte-identical. The
// line appears once the work has taken more than DELAY_S; the destructor ends it.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace servesim {

class Progress {
 public:
  Progress(const char* what, size_t total, double delay_s = 0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void show(size_t done);
  // The caller's own words for the line instead (same rate limit; padded over the last one).
  void show_text(const std::string& text);

 private:
  const char* what_;
  size_t total_;
  double delay_s_;
  bool tty_;
  bool shown_ = false;
  size_t width_ = 0;  // of the text last drawn
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace servesim
