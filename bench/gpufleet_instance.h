// GpufleetInstance: one real `gpufleet up` started by a bench in a fresh temp dir (its own
// data dir, API socket and log, no TCP listener), and everything needed to leave no trace.
//
// Lifecycle: Start() creates /tmp/gf-bench.XXXXXX, starts `gpufleet up` in its own process
// group (so the terminal's Ctrl-C reaches the bench, which then cleans up) and waits until
// GET /api/v1/nodes shows the node with its GPUs. Stop() (also run by the destructor):
//   1. cancels every active job through the API, pending ones first so that no queued job
//      starts when a running one frees its GPUs, and waits for the active list to empty;
//   2. creates release_file(), which blocker jobs (BlockerCommand) wait for;
//   3. stops `gpufleet up` with SIGTERM (SIGKILL after a deadline);
//   4. SIGKILLs any job process tree still alive (it would be a gpufleet bug; it is reported);
//   5. removes the temp dir.
// Every step is bounded by a deadline.
//
// Ownership: owns the child process and the temp dir. Thread-safety: none; the accessors are
// safe to read from several threads once Start() has returned.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"

namespace gf::bench {

struct InstanceOptions {
  std::string gpufleet;   // path of the gpufleet binary
  std::string gpus;       // --gpus, e.g. "sim:32xH100-80GB"
  int expected_gpus = 0;  // Start() waits until the node reports this many GPUs
  std::chrono::seconds ready_timeout{60};
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
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path release_file() const { return dir_ / "release"; }

  // A command that holds its GPUs until release_file() exists (checked every 50 ms).
  std::vector<std::string> BlockerCommand() const;

  // See the header comment. Returns what went wrong while cleaning up (also printed to
  // stderr), or OK. Idempotent.
  Status Stop();

 private:
  explicit GpufleetInstance(std::filesystem::path dir) : dir_(std::move(dir)) {}
  Status WaitReady(const InstanceOptions& options);
  Status CancelAllJobs();
  Status StopDaemon();
  Status KillLeftoverJobs();
  std::string LogTail() const;

  std::filesystem::path dir_;
  std::string socket_;
  pid_t pid_ = -1;
  bool stopped_ = false;
};

}  // namespace gf::bench
