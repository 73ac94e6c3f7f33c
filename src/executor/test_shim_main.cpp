// gf_test_shim: stands in for `gpufleet shim --job-dir DIR` in the executor tests, so they run
// the real shim code without the full binary.
#include <cstdio>
#include <cstring>

#include "executor/executor.h"

int main(int argc, char** argv) {
  if (argc != 4 || std::strcmp(argv[1], "shim") != 0 || std::strcmp(argv[2], "--job-dir") != 0) {
    std::fprintf(stderr, "usage: %s shim --job-dir DIR\n", argv[0]);
    return 2;
  }
  return gf::ShimMain(argv[3]);
}
