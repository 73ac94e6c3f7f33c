// The job's main process between fork and exec: everything it needs is prepared by the shim
// beforehand (ChildPlan), because after fork only async-signal-safe calls are allowed, so no
// allocation, no NSS lookups (getpwnam, initgroups), no locks.
//
// A ChildPlan owns its strings; the char* vectors point into them, so it must outlive the
// fork and must not be copied or moved once Finalize() ran. Single-threaded use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"
#include "executor/executor.h"

namespace gf::exec {

// Stages of the child's setup, reported back with errno when one fails.
enum class ChildStage : std::int32_t {
  kSetsid,
  kRedirect,
  kGroups,
  kSetgid,
  kSetuid,
  kRegainedRoot,  // setuid(0) succeeded after dropping privileges: refuse to run
  kParentGone,
  kChdir,
  kExec,
  kOutputFile,  // the file of --output (GPUFLEET_OUTPUT) could not be opened
  kErrorFile,   // the file of --error (GPUFLEET_ERROR)
};

// What the child writes to the report pipe when setup fails; an exec closes the pipe instead.
struct ChildFailure {
  ChildStage stage = ChildStage::kExec;
  std::int32_t err = 0;
};

struct ChildPlan {
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;  // "NAME=value"
  std::vector<char*> argv;               // null-terminated views of the storage
  std::vector<char*> envp;
  std::string workdir;
  // The job's own output files (model/output_pattern.h), expanded; "" = gpufleet's log. Opened
  // by the child as the job's owner after it changed to `workdir`, so a relative name is under
  // the workdir and the owner's permissions apply. No stderr_file but a stdout_file: stderr
  // goes there too (as sbatch's --output alone does).
  std::string stdout_file;
  std::string stderr_file;
  int output_flags = 0;      // open(2) flags: rank 0 of a job truncates, other ranks append
  bool switch_user = false;  // true when the shim is root: set groups, gid, uid
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  bool verify_no_root = false;  // the owner is not root: setuid(0) must fail afterwards
  pid_t shim_pid = 0;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // The three fds are a pseudo-terminal's slave side (`gpufleet run`): it becomes the job's
  // controlling terminal, so that Ctrl-C and window sizes reach the job's foreground group.
  bool controlling_terminal = false;
  int cgroup_procs_fd = -1;  // -1: no cgroup
  // cgroup.procs of the job's cgroup v1 cpu and memory folders (host_limits.h); -1: none.
  int limit_procs_fds[2] = {-1, -1};
  int report_fd = -1;  // write end of the CLOEXEC report pipe

  void Finalize();  // fills argv/envp from the storage
};

// Resolves the owner's passwd entry and groups and builds the environment: a clean base (PATH,
// HOME, USER, LOGNAME, SHELL), then spec.env, then GPUFLEET_JOB_ID, GPUFLEET_JOB_TAG = `job_tag`
// (cgroup.h JobTag; and for an array task GPUFLEET_ARRAY_JOB_ID and GPUFLEET_ARRAY_TASK_ID), the
// SLURM_* variables (slurm_env.h) and the GPU fence variables, which the spec cannot override;
// and the output files the spec's GPUFLEET_OUTPUT / GPUFLEET_ERROR patterns name. Refuses
// (kPermissionDenied) a job whose owner this process cannot become: a non-root shim runs only jobs
// of its own uid.
Result<ChildPlan> PlanChild(const LaunchSpec& spec, const std::string& job_tag);

// Runs in the forked child: sets up and execs, or reports a ChildFailure and _exits with
// ExitCodeFor(failure). Only async-signal-safe calls.
[[noreturn]] void RunChild(const ChildPlan& plan);

// 127 when the command was not found, 126 for every other failure to start (as shells do).
int ExitCodeFor(const ChildFailure& failure);

// "failed to start: python: No such file or directory".
std::string DescribeFailure(const ChildFailure& failure, const LaunchSpec& spec);

}  // namespace gf::exec
