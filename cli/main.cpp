#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
  int status = servesim::run_cli(argc, argv, std::cout, std::cerr);
  // std::cout writes through stdio: a full disk or a closed pipe shows when stdout is flushed.
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "servesim: error: cannot write standard output: %s\n",
                 errno != 0 ? std::strerror(errno) : "write error");
    if (status == 0) status = 2;
  }
  return status;
}
