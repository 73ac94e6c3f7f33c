// gf_test_shim: stands in for `gpufleet shim --job-dir DIR` and `gpufleet shim-server --fd N` in
// the executor tests, so they run the real shim and shim server code without the full binary.
#include <charconv>
#include <cstdio>
#include <cstring>

#include "executor/executor.h"

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "shim") == 0 && std::strcmp(argv[2], "--job-dir") == 0) {
    return gf::ShimMain(argv[3]);
  }
  int fd = -1;
  if (argc == 4 && std::strcmp(argv[1], "shim-server") == 0 && std::strcmp(argv[2], "--fd") == 0 &&
      std::from_chars(argv[3], argv[3] + std::strlen(argv[3]), fd).ec == std::errc()) {
    return gf::ShimServerMain(fd);
  }
  std::fprintf(stderr, "usage: %s shim --job-dir DIR | shim-server --fd N\n", argv[0]);
  return 2;
}
