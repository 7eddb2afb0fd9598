// Writes an Azure LLM inference 2024-style CSV of ROWS rows, for measuring import speed and
// memory on tens of millions of rows (no such file is shipped):
//   TIMESTAMP,ContextTokens,GeneratedTokens
//   2024-05-10 00:00:00.001234+00:00,1234,56
// Arrivals are Poisson at 250 req/s (20M rows span about 22 hours). When an arrival crosses a
// second boundary, half the time it lands on the whole second and is written without
// fractional digits, as the published 2024 traces do. Deterministic (seed 2024).
#pragma once

#include <boost/random/exponential_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cstdio>
#include <string>

namespace servesim::bench {

// Y-M-D of a day count from 1970-01-01 (H. Hinnant's civil_from_days).
inline void civil_from_days(long long z, int& y, int& m, int& d) {
  z += 719468;
  const long long era = (z >= 0 ? z : z - 146096) / 146097;
  const long long doe = z - era * 146097;
  const long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long long mp = (5 * doy + 2) / 153;
  d = int(doy - (153 * mp + 2) / 5 + 1);
  m = int(mp < 10 ? mp + 3 : mp - 9);
  y = int(yoe + era * 400 + (m <= 2));
}

// Returns false when PATH cannot be written.
inline bool write_azure2024_csv(const std::string& path, long long rows) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  boost::random::mt19937_64 rng(2024);
  boost::random::exponential_distribution<double> gap(250.0);
  boost::random::uniform_int_distribution<int> in(1, 8000), out(1, 1000), coin(0, 1);
  const long long first_day = 19853;  // 2024-05-10
  std::fputs("TIMESTAMP,ContextTokens,GeneratedTokens\n", f);
  double t = 0;  // seconds since 2024-05-10 00:00:00
  char line[96];
  for (long long i = 0; i < rows; ++i) {
    const double before = t;
    t += gap(rng);
    const bool whole_second = (long long)t > (long long)before && coin(rng) == 1;
    if (whole_second) t = double((long long)t);
    const long long whole = (long long)t;
    const int sod = int(whole % 86400);
    const int micros = int((t - double(whole)) * 1e6);
    int y, m, d;
    civil_from_days(first_day + whole / 86400, y, m, d);
    int n = std::snprintf(line, sizeof line, "%04d-%02d-%02d %02d:%02d:%02d", y, m, d, sod / 3600,
                          sod / 60 % 60, sod % 60);
    if (!whole_second) n += std::snprintf(line + n, sizeof line - n, ".%06d", micros);
    n += std::snprintf(line + n, sizeof line - n, "+00:00,%d,%d\n", in(rng), out(rng));
    std::fwrite(line, 1, size_t(n), f);
  }
  return std::fclose(f) == 0;
}

}  // namespace servesim::bench
