// servesim_gen_azure2024 ROWS OUT.csv: writes an Azure 2024-style CSV (bench/azure2024_csv.hpp).
#include <cstdio>
#include <cstdlib>

#include "bench/azure2024_csv.hpp"

int main(int argc, char** argv) {
  const long long rows = argc == 3 ? std::atoll(argv[1]) : 0;
  if (rows < 1) {
    std::fprintf(stderr, "usage: %s ROWS OUT.csv\n", argv[0]);
    return 2;
  }
  if (!servesim::bench::write_azure2024_csv(argv[2], rows)) {
    std::fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
