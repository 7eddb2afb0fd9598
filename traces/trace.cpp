#include "traces/trace.hpp"

#include <cassert>

namespace servesim {

Workload to_workload(const Trace& t) {
  assert(t.timed);
  Workload w(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    w[i] = RequestSpec{static_cast<uint32_t>(i), t.arrival_s[i], t.input_tokens[i],
                       t.output_tokens[i]};
  }
  return w;
}

Trace from_workload(const Workload& w) {
  Trace t;
  t.reserve(w.size());
  for (const RequestSpec& r : w)
    t.push(r.arrival_s, r.input_tokens, r.output_tokens);
  t.counts.rows_read = int64_t(w.size());
  return t;
}

}  // namespace servesim
