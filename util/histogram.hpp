// LogHistogram: a streaming histogram of positive durations with bounded relative error, for the
// inter-token gaps whose number grows with tokens, not requests. A value's bucket is read off its
// IEEE-754 bits (exponent and top 8 mantissa bits), so adding costs a few instructions and no
// logarithm; each bucket spans a ratio of 1 + 2^-8, so a quantile is within 0.2% of the exact one.
// Memory is fixed (120 KB) whatever the count. Values outside [2^-30, 2^30) s are clamped
// into the end buckets; the exact min, max, sum and count are kept.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace servesim {

class LogHistogram {
 public:
  static constexpr int kMantissaBits = 8;
  static constexpr int kMinExp = -30;  // 2^-30 s ~ 1 ns
  static constexpr int kMaxExp = 30;   // 2^30 s ~ 34 years
  static constexpr size_t kBuckets = size_t(kMaxExp - kMinExp) << kMantissaBits;

  LogHistogram() : counts_(kBuckets, 0) {}

  void add(double v) {
    ++count_;
    sum_ += v;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
    ++counts_[index(v)];
  }

  // Adds every value O holds.
  void merge(const LogHistogram& o) {
    count_ += o.count_;
    sum_ += o.sum_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
    for (size_t i = 0; i < counts_.size(); ++i)
      counts_[i] += o.counts_[i];
  }

  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  double mean() const { return count_ ? sum_ / double(count_) : 0.0; }
  double min() const { return count_ ? min_ : 0.0; }
  double max() const { return count_ ? max_ : 0.0; }

  // Calls F(upper_bound, count) for every non-empty bucket, in increasing order: the histogram
  // itself, for CDFs (results files).
  template <class F>
  void for_each_bucket(F f) const {
    for (size_t i = 0; i < counts_.size(); ++i) {
      if (counts_[i] > 0) f(upper_bound(i), counts_[i]);
    }
  }

  // The q-quantile (0 <= q <= 1) with numpy's default (linear) interpolation between the order
  // statistics at floor and ceil of q x (count - 1), each taken as its bucket's midpoint.
  double quantile(double q) const {
    if (count_ == 0) return 0.0;
    const double rank = q * double(count_ - 1);
    const uint64_t lo = static_cast<uint64_t>(std::floor(rank));
    const uint64_t hi = std::min<uint64_t>(lo + 1, count_ - 1);
    const double vlo = order_statistic(lo), vhi = order_statistic(hi);
    return vlo + (vhi - vlo) * (rank - double(lo));
  }

  // The bucket of V, its upper bound and its midpoint (shared with TimeHistogram).
  static size_t index(double v) {
    constexpr double lo = 0x1p-30;                // 2^kMinExp
    constexpr double hi = 0x1.fffffffffffffp+29;  // just below 2^kMaxExp
    static_assert(kMinExp == -30 && kMaxExp == 30);
    if (!(v >= lo)) return 0;  // also NaN
    const uint64_t bits = std::bit_cast<uint64_t>(std::min(v, hi));
    const uint64_t biased_exp = bits >> 52;  // sign bit is 0
    const uint64_t mantissa = (bits >> (52 - kMantissaBits)) & ((1u << kMantissaBits) - 1);
    return size_t((biased_exp - uint64_t(1023 + kMinExp)) << kMantissaBits) | size_t(mantissa);
  }
  static double upper_bound(size_t i) {
    const int exp = int(i >> kMantissaBits) + kMinExp;
    const double frac = double(i & ((1u << kMantissaBits) - 1)) + 1.0;
    return std::ldexp(1.0 + frac / double(1u << kMantissaBits), exp);
  }
  static double midpoint(size_t i) {
    const int exp = int(i >> kMantissaBits) + kMinExp;
    const double frac = double(i & ((1u << kMantissaBits) - 1)) + 0.5;
    return std::ldexp(1.0 + frac / double(1u << kMantissaBits), exp);
  }

 private:
  // The k-th smallest value (0-based): exact at both ends, else its bucket's midpoint clamped to
  // [min, max].
  double order_statistic(uint64_t k) const {
    if (k == 0) return min_;
    if (k + 1 == count_) return max_;
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen > k) return std::clamp(midpoint(i), min_, max_);
    }
    return max_;
  }

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = 0;
};

// TimeHistogram: how long a quantity (a queue length, a KV usage fraction) held each value, in
// LogHistogram's buckets, for time-weighted percentiles: quantile(0.99) is the value the quantity
// stayed at or below for 99% of the time. Values below 2^-30 (zero among them) share the first
// bucket and read back as the exact minimum.
class TimeHistogram {
 public:
  TimeHistogram() : seconds_(LogHistogram::kBuckets, 0.0) {}

  // REQUIRES: V >= 0, SECONDS >= 0.
  void add(double v, double seconds) {
    if (!(seconds > 0)) return;
    total_s_ += seconds;
    weighted_sum_ += v * seconds;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
    seconds_[LogHistogram::index(v)] += seconds;
  }

  double total_s() const { return total_s_; }
  double mean() const { return total_s_ > 0 ? weighted_sum_ / total_s_ : NAN; }
  double max() const { return total_s_ > 0 ? max_ : NAN; }
  // The smallest bucket holding the Q-quantile of the time (its midpoint, clamped to [min, max]);
  // NaN when nothing was added.
  double quantile(double q) const {
    if (!(total_s_ > 0)) return NAN;
    const double target = q * total_s_;
    double seen = 0;
    for (size_t i = 0; i < seconds_.size(); ++i) {
      seen += seconds_[i];
      if (seconds_[i] > 0 && seen >= target)
        return std::clamp(LogHistogram::midpoint(i), min_, max_);
    }
    return max_;
  }

 private:
  std::vector<double> seconds_;
  double total_s_ = 0, weighted_sum_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = 0;
};

}  // namespace servesim
