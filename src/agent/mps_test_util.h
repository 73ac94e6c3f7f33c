// A stand-in for nvidia-cuda-mps-control, for the agent's tests: `-d` starts a "daemon" for
// $CUDA_MPS_PIPE_DIRECTORY (a file named control there; a second start fails as the real one
// does), and without arguments it reads one command from stdin: get_server_list answers while
// the daemon runs, quit stops it. Every start and quit is appended to `log` with the GPU
// ($CUDA_VISIBLE_DEVICES) and the directories it was given.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>

namespace gf::mps_test {

inline std::filesystem::path WriteFakeControl(const std::filesystem::path& dir,
                                              const std::filesystem::path& log) {
  std::filesystem::path script = dir / "fake-mps-control";
  std::ofstream(script) << R"(#!/bin/sh
control="$CUDA_MPS_PIPE_DIRECTORY/control"
if [ "$1" = "-d" ]; then
  if [ -e "$control" ]; then echo "An instance of this daemon is already running"; exit 1; fi
  touch "$control" || exit 1
  echo "start $CUDA_VISIBLE_DEVICES $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" >> ")" +
                               log.string() + R"("
  exit 0
fi
read command
if [ ! -e "$control" ]; then echo "Cannot find MPS control daemon process"; exit 1; fi
case "$command" in
  get_server_list) exit 0 ;;
  quit) rm -f "$control"; echo "quit $CUDA_VISIBLE_DEVICES" >> ")" +
                               log.string() + R"("; exit 0 ;;
esac
exit 1
)";
  ::chmod(script.c_str(), 0755);
  return script;
}

}  // namespace gf::mps_test
