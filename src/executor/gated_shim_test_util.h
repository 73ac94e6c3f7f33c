// GatedShim (tests only): a stand-in for `gpufleet shim` that waits until the test opens a
// gate (a file) before it execs the real test shim with the same arguments. Until then the
// shim process exists but has written nothing into the job folder, so a test can hold any
// number of launches mid-start, deterministically, and look at what the Executor and the agent
// do meanwhile. The exec keeps the pid and its start time, so the real shim's shim.pid names
// the process the Executor started.
//
// The gate is a script exec'd for each launch, so an Executor that launches through it must exec
// its shims: construct it with kGatedExecutorOptions (a fork server would bypass the script).
//
// Header-only; used by gf_executor_test and gf_agent_test. Not thread-safe.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>

#include "executor/executor.h"

namespace gf::exec_test {

inline constexpr ExecutorOptions kGatedExecutorOptions{.fork_server = false};

class GatedShim {
 public:
  // Writes the script into `dir` (which must exist); `real_shim` is what it execs.
  GatedShim(const std::filesystem::path& dir, const std::filesystem::path& real_shim)
      : script_(dir / "gated-shim.sh"), gate_(dir / "gate"), arrived_(dir / "arrived") {
    std::ofstream out(script_);
    // Polls with a short nap: the shell has nothing to block on that a test could release for
    // every waiting shim at once.
    out << "#!/bin/sh\n"
        << "echo $$ >> '" << arrived_.string() << "'\n"
        << "while [ ! -e '" << gate_.string() << "' ]; do sleep 0.01; done\n"
        << "exec '" << real_shim.string() << "' \"$@\"\n";
    out.close();
    ::chmod(script_.c_str(), 0755);
  }

  const std::filesystem::path& Path() const { return script_; }
  // Lets every waiting (and every later) shim go on.
  void Open() const { std::ofstream(gate_).close(); }
  // How many shims have reached the gate so far.
  int Arrived() const {
    std::ifstream in(arrived_);
    int count = 0;
    for (std::string line; std::getline(in, line);) {
      ++count;
    }
    return count;
  }

 private:
  std::filesystem::path script_;
  std::filesystem::path gate_;
  std::filesystem::path arrived_;
};

}  // namespace gf::exec_test
