// Replicates of a timed trace (traces/resample.hpp).
#include "traces/resample.hpp"

#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <numeric>
#include <vector>

#include "util/error.hpp"
#include "util/hash.hpp"

namespace servesim {

namespace {

// Row ROW of T appended to OUT at ARRIVAL, its content renamed by COPY (0: as it is).
void append_row(const Trace& t, size_t row, uint64_t copy, double arrival, Trace& out) {
  auto rename = [copy](uint64_t name) { return copy == 0 ? name : hash_combine(name, copy); };
  out.push(arrival, t.input_tokens[row], t.output_tokens[row]);
  if (t.has_sessions()) {
    const int64_t s = t.session_id[row];
    out.session_id.push_back(s < 0 || copy == 0 ? s : int64_t(rename(uint64_t(s)) >> 1));
  }
  if (!t.request_class.empty()) out.request_class.push_back(t.request_class[row]);
  if (!t.priority.empty()) out.priority.push_back(t.priority[row]);
  if (!t.lora.empty()) out.lora.push_back(t.lora[row]);
  if (t.has_hash_ids()) {
    for (uint64_t k = t.hash_offsets[row]; k < t.hash_offsets[row + 1]; ++k)
      out.hash_ids.push_back(rename(t.hash_ids[k]));
    out.hash_offsets.push_back(out.hash_ids.size());
  }
  if (t.has_spans()) {
    for (uint64_t k = t.span_offsets[row]; k < t.span_offsets[row + 1]; ++k) {
      TokenSpan s = t.spans[k];
      s.stream = rename(s.stream);
      out.spans.push_back(s);
    }
    out.span_offsets.push_back(out.spans.size());
    out.output_continues.push_back(t.output_continues[row]);
  }
}

// T without its rows, its metadata kept.
Trace empty_like(const Trace& t) {
  Trace out;
  out.hash_block_size = t.hash_block_size;
  out.class_names = t.class_names;
  out.timed = t.timed;
  out.file = t.file;
  out.source = t.source;
  out.stored = t.stored;
  out.format = t.format;
  out.options = t.options;
  out.counts = t.counts;
  out.first_errors = t.first_errors;
  if (t.has_hash_ids()) out.hash_offsets.push_back(0);
  if (t.has_spans()) out.span_offsets.push_back(0);
  out.reserve(t.size());
  return out;
}

// The rows of T in arrival order (a stable sort: ties keep the trace's order).
std::vector<size_t> arrival_order(const std::vector<double>& arrival) {
  std::vector<size_t> order(arrival.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return arrival[a] < arrival[b]; });
  return order;
}

Trace bootstrap(const Trace& t, double block_s, boost::random::mt19937_64& rng) {
  const std::vector<size_t> order = arrival_order(t.arrival_s);
  const size_t n = order.size();
  const double t0 = t.arrival_s[order.front()];
  std::vector<double> offset(n);  // in arrival order, from the first arrival
  for (size_t k = 0; k < n; ++k)
    offset[k] = t.arrival_s[order[k]] - t0;
  const double span = offset.back();
  Trace out = empty_like(t);
  if (n < 2 || !(span > 0)) {  // nothing to resample in time: the trace as it is
    for (size_t k = 0; k < n; ++k)
      append_row(t, order[k], 0, t.arrival_s[order[k]], out);
    return out;
  }
  const double circle = span * double(n) / double(n - 1);
  const size_t slots = size_t(std::ceil(circle / block_s));
  if (slots > 100000000)
    throw Error(field::kReplicateBlockS, "cuts the trace into too many blocks");
  std::vector<uint64_t> used(n, 0);  // times each row (arrival order) was drawn
  boost::random::uniform_real_distribution<double> start(0, circle);
  // The rows with offset in [from, to), from <= to <= circle, at slot_start + offset - base.
  auto take = [&](double from, double to, double base, double slot_start) {
    const size_t lo = size_t(std::lower_bound(offset.begin(), offset.end(), from) - offset.begin());
    const size_t hi = size_t(std::lower_bound(offset.begin(), offset.end(), to) - offset.begin());
    for (size_t k = lo; k < hi; ++k)
      append_row(t, order[k], used[k]++, t0 + slot_start + offset[k] - base, out);
  };
  for (size_t j = 0; j < slots; ++j) {
    const double slot_start = double(j) * block_s;
    const double length = std::min(block_s, circle - slot_start);  // the last slot is shorter
    const double u = start(rng);
    if (u + length <= circle) {
      take(u, u + length, u, slot_start);
    } else {  // the block wraps around the circle's end
      take(u, circle, u, slot_start);
      take(0, u + length - circle, u - circle, slot_start);
    }
  }
  return out;
}

Trace jitter(const Trace& t, double jitter_s, boost::random::mt19937_64& rng) {
  boost::random::uniform_real_distribution<double> shift(-jitter_s / 2, jitter_s / 2);
  std::vector<double> arrival(t.size());
  for (size_t i = 0; i < t.size(); ++i)
    arrival[i] = std::max(0.0, t.arrival_s[i] + shift(rng));
  Trace out = empty_like(t);
  for (size_t i : arrival_order(arrival))
    append_row(t, i, 0, arrival[i], out);
  return out;
}

}  // namespace

const char* resample_name(Resample r) {
  switch (r) {
    case Resample::kBootstrap:
      return "bootstrap";
    case Resample::kJitter:
      return "jitter";
    case Resample::kNone:
      break;
  }
  return "none";
}

Resample parse_resample(const std::string& name) {
  if (name == "none") return Resample::kNone;
  if (name == "bootstrap") return Resample::kBootstrap;
  if (name == "jitter") return Resample::kJitter;
  throw Error(field::kTraceReplicates, "expected none, bootstrap or jitter, got '" + name + "'");
}

void scale_trace_rate(Trace& t, double factor, uint64_t seed) {
  if (factor == 1 || t.size() == 0) return;
  boost::random::mt19937_64 rng(seed);
  boost::random::uniform_real_distribution<double> unit(0, 1);
  const auto [lo, hi] = std::minmax_element(t.arrival_s.begin(), t.arrival_s.end());
  const double gap = t.size() > 1 ? (*hi - *lo) / double(t.size() - 1) : 1.0;
  const double whole = std::floor(factor), part = factor - whole;
  std::vector<std::pair<double, std::pair<size_t, uint64_t>>> rows;  // (arrival, (row, copy))
  rows.reserve(size_t(double(t.size()) * factor) + 16);
  for (size_t i = 0; i < t.size(); ++i) {
    const int copies = int(whole) + (unit(rng) < part ? 1 : 0);
    for (int k = 0; k < copies; ++k) {
      const double shift = k == 0 ? 0.0 : (unit(rng) * 2 - 1) * gap;
      rows.push_back({std::max(0.0, t.arrival_s[i] + shift), {i, uint64_t(k)}});
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Trace out = empty_like(t);
  for (const auto& [arrival, which] : rows)
    append_row(t, which.first, which.second, arrival, out);
  t = std::move(out);
}

void resample_trace(Trace& t, Resample method, double length_s, uint64_t seed) {
  if (method == Resample::kNone || t.size() == 0) return;
  boost::random::mt19937_64 rng(seed);
  t = method == Resample::kBootstrap ? bootstrap(t, length_s, rng) : jitter(t, length_s, rng);
}

}  // namespace servesim
