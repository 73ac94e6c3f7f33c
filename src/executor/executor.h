// Executor: starts, watches and stops jobs on this node, each under its own supervisor
// process (`gpufleet shim`, in the spirit of containerd-shim / conmon).
//
// The shim is started detached (its own session, re-parented away from the agent), so a job
// outlives a crash or restart of the agent; a new Executor over the same run_dir finds it again
// (Recover). Everything about one job lives in run_dir/<job id>/: spec.json (what to run),
// shim.pid, job.pid, stdout.log, stderr.log, exit.json (written by the shim when the job ends).
//
// Not thread-safe: one owner thread (the agent's) calls every method.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"
#include "model/job.h"

namespace gf {

struct LaunchSpec {
  JobId job;
  Owner owner;                     // the job runs as owner.uid/gid with owner's groups
  std::vector<std::string> argv;
  std::string workdir;
  std::vector<std::pair<std::string, std::string>> env;  // added to the base environment
  std::vector<GpuUuid> gpus;       // CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES, by UUID
};

struct JobExit {
  JobId job;
  int exit_code = 0;               // the command's status; 128+N when killed by signal N
  std::optional<int> signal;       // the signal that ended it, if any
  Time end_time{};
  std::string cause;               // "exited with 0", "killed by SIGKILL after cancel", "failed to start: ..."
};

struct RecoveredJob {
  JobId job;
  std::int64_t shim_pid = 0;
  bool still_running = false;      // false: it ended while nobody watched; Poll reports its exit
};

struct LogPaths {
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
};

class Executor {
 public:
  // run_dir: where job folders live (created if absent). shim_exe: the gpufleet binary, started
  // as `shim_exe shim --job-dir DIR`.
  Executor(std::filesystem::path run_dir, std::filesystem::path shim_exe, const Clock& clock);

  // Starts the job's shim; returns the shim's pid once the shim has the job running (or has
  // recorded why it could not start: then Poll reports the failure).
  Result<std::int64_t> Launch(const LaunchSpec& spec);

  // Asks the shim to end the job: SIGTERM to the job's whole process tree, then SIGKILL after
  // `grace`. Returns at once; Poll reports the exit. kNotFound if the job is not known here.
  Status Kill(JobId job, std::chrono::seconds grace, const std::string& cause);

  // Jobs that ended since the last call (each reported once; its folder is kept for logs).
  std::vector<JobExit> Poll();

  // After a restart: every job folder with a shim that is alive or ended without being reaped.
  std::vector<RecoveredJob> Recover();

  LogPaths Logs(JobId job) const;

 private:
  struct Tracked;
  std::filesystem::path run_dir_;
  std::filesystem::path shim_exe_;
  const Clock& clock_;
  std::vector<JobId> tracked_;
};

// Entry point of `gpufleet shim --job-dir DIR`: runs one job to its end. Returns the process
// exit status of the shim itself.
int ShimMain(const std::filesystem::path& job_dir);

}  // namespace gf
