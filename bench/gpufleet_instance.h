// GpufleetInstance: a real gpufleet started by a bench in a fresh temp dir (its own data dirs,
// API socket and logs), and everything needed to leave no trace. Two shapes:
//   - kUp: one `gpufleet up` (controller, API and the node's agent in one process, no TCP);
//   - kServer: one `gpufleet server` (TCP on a free loopback port, unused by the benches) and
//     `agents` separate `gpufleet agent` processes, each its own node (bench-1, bench-2, ...)
//     joined over the server's Unix socket (as root: no node token needed there), so every
//     launch and every report crosses the agent link (service/agent_link.h).
//
// Lifecycle: Start() creates /tmp/gf-bench.XXXXXX, starts the processes, each in its own
// process group (so the terminal's Ctrl-C reaches the bench, which then cleans up), and waits
// until GET /api/v1/nodes shows every node up with its GPUs. Stop() (also run by the
// destructor):
//   1. cancels every active job through the API, pending ones first so that no queued job
//      starts when a running one frees its GPUs, and waits for the active list to empty;
//   2. creates release_file(), which blocker jobs (BlockerCommand) wait for;
//   3. stops the agents, then the server (or `gpufleet up`) with SIGTERM (SIGKILL after a
//      deadline);
//   4. SIGKILLs any job process tree still alive (it would be a gpufleet bug; it is reported);
//   5. removes the temp dir.
// Every step is bounded by a deadline.
//
// Ownership: owns the child process and the temp dir. Thread-safety: none; the accessors are
// safe to read from several threads once Start() has returned.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"

namespace gf::bench {

enum class Topology { kUp, kServer };

struct InstanceOptions {
  std::string gpufleet;  // path of the gpufleet binary
  Topology topology = Topology::kUp;
  std::string gpus;       // --gpus of each node, e.g. "sim:32xH100-80GB"
  int expected_gpus = 0;  // Start() waits until each node reports this many GPUs
  int agents = 0;         // kServer: `gpufleet agent` processes to start (0: the server alone)
  std::string db;         // --db ("" = SQLite in the data dir; "postgresql://...")
  std::chrono::seconds ready_timeout{60};
  // Run on the (empty) data dir before gpufleet starts: writes history into its store, as a
  // cluster that has been running for a while has. Unset: none.
  std::function<Status(const std::filesystem::path& data_dir)> seed;
};

class GpufleetInstance {
 public:
  // Errors: kIo (temp dir, fork), kUnavailable (did not answer in time or exited; the
  // message carries the tail of its log).
  static Result<std::unique_ptr<GpufleetInstance>> Start(const InstanceOptions& options);
  ~GpufleetInstance();
  GpufleetInstance(const GpufleetInstance&) = delete;
  GpufleetInstance& operator=(const GpufleetInstance&) = delete;

  const std::string& socket() const { return socket_; }
  // The server's (or `gpufleet up`'s) pid, for /proc; -1 once stopped.
  pid_t server_pid() const { return server_.pid; }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path release_file() const { return dir_ / "release"; }

  // A command that holds its GPUs until release_file() exists (checked every 50 ms).
  std::vector<std::string> BlockerCommand() const;

  // See the header comment. Returns what went wrong while cleaning up (also printed to
  // stderr), or OK. Idempotent.
  Status Stop();

 private:
  // One child process: its pid (-1 once reaped), its name in messages and its log file.
  struct Child {
    pid_t pid = -1;
    std::string name;
    std::filesystem::path log;
  };

  explicit GpufleetInstance(std::filesystem::path dir) : dir_(std::move(dir)) {}
  Result<Child> Spawn(const std::string& name, const std::vector<std::string>& argv) const;
  Status StartProcesses(const InstanceOptions& options);
  // kUnavailable naming the process when one of them has exited.
  Status CheckAlive();
  Status WaitReady(const InstanceOptions& options);
  Status CancelAllJobs();
  Status StopChild(Child& child);
  Status KillLeftoverJobs();
  // The last lines of every child's log, each under its name.
  std::string LogTails() const;

  std::filesystem::path dir_;
  std::string socket_;
  Child server_;
  std::vector<Child> agents_;
  bool stopped_ = false;
};

}  // namespace gf::bench
