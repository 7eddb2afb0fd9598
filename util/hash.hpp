// 64-bit mixing for content names and prefix-cache block hashes: SplitMix64's finaliser
// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014) and a
// combiner built on it. Deterministic on every machine; not cryptographic (servesim hashes names
// it made, never user data that could be crafted to collide).
#pragma once

#include <cstdint>

namespace servesim {

inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A hash of the pair (SEED, V), order-sensitive.
inline uint64_t hash_combine(uint64_t seed, uint64_t v) {
  return mix64(seed ^ (mix64(v) + 0x632be59bd9b4e019ULL + (seed << 6) + (seed >> 2)));
}

}  // namespace servesim
