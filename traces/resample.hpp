// Replicates of a timed trace: a trace has no seed to vary, so `--num-seeds N` on one (run,
// compare, check's num-seeds) draws N resampled copies, replicate k from seed SEED + k, the same
// copy for every policy of a comparison (paired). Two methods:
//  - bootstrap (the default): a circular block bootstrap over time (Politis and Romano 1992's
//    circular variant of Kunsch's moving blocks). The trace's span is closed into a circle of
//    length P = span x n / (n - 1) (one mean gap joins its end to its start) and cut into
//    ceil(P / BLOCK) slots; each slot is filled by the requests of a block of length BLOCK
//    starting anywhere on the circle (uniformly), at their offsets within it. Bursts, lulls and
//    the correlation of lengths within a block survive; which parts of the day the replicate
//    holds, and how often, vary, so the spread of the replicates' metrics is the sampling noise
//    of a trace that long. A row drawn again is a new request with new content: its hash ids,
//    span streams and session are renamed by copy (hash_combine), so that a copy never finds its
//    original's prefix in the cache.
//  - jitter: every arrival moves by a uniform offset in [-JITTER/2, +JITTER/2] (floored at 0) and
//    the rows are re-sorted; lengths and content stay. The spread is the noise of the trace's
//    fine timing alone.
// Promises: a pure function of the trace, the method, its length and the seed (Boost's
// mt19937_64, the same on every machine); the trace's invariants hold afterwards; a trace without
// requests is returned as it is.
#pragma once

#include <cstdint>
#include <string>

#include "traces/trace.hpp"

namespace servesim {

enum class Resample { kNone, kBootstrap, kJitter };

// "none", "bootstrap", "jitter".
const char* resample_name(Resample r);
// Throws Error naming --trace-replicates on another name.
Resample parse_resample(const std::string& name);

// REQUIRES: t.timed, LENGTH_S > 0 and finite (BLOCK for bootstrap, JITTER for jitter).
void resample_trace(Trace& t, Resample method, double length_s, uint64_t seed);

// A timed trace at FACTOR x its rate with its shape over time kept (capacity --target-scale: next
// year's traffic at the same hours): every row kept floor(FACTOR) times and once more with
// probability FACTOR - floor(FACTOR) (below 1: thinning). The row itself stays where it is; its
// extra copies move by a uniform offset within one mean gap of the trace either way and are
// renamed (as bootstrap copies) so that a copy never finds its original's prefix cached.
// REQUIRES: t.timed, FACTOR in (0, 1000].
void scale_trace_rate(Trace& t, double factor, uint64_t seed);

}  // namespace servesim
