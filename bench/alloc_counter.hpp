// Counts every heap allocation of the benchmark process (the global operator new is replaced in
// alloc_counter.cpp), so that a benchmark can report allocations per step of the hot path.
#pragma once

#include <cstdint>

namespace servesim {

uint64_t heap_allocations();

}  // namespace servesim
