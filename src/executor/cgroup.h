// JobCgroup: a job's cgroup v2 folder, <root>/gpufleet/<agent>-job-<id>, used to fence the job's
// processes and to kill the whole tree at once (cgroup.kill), whatever they did to their
// process group or session.
//
// Only used when <root> (normally /sys/fs/cgroup) is a writable cgroup2 mount, checked at run
// time with statfs; elsewhere (cgroup v1 hosts, containers without delegation) the shim falls
// back to its process group and /proc descendant walk, which it always does as well.
//
// A JobCgroup is a value naming a folder; the shim that created it owns the folder and removes
// it. Not thread-safe (one shim, one thread).
#pragma once

#include <filesystem>
#include <vector>

#include <sys/types.h>

#include "core/ids.h"
#include "core/result.h"

namespace gf::exec {

inline constexpr const char* kCgroupRoot = "/sys/fs/cgroup";

class JobCgroup {
 public:
  // True when `root` is a cgroup2 file system this process may write to.
  static bool Available(const std::filesystem::path& root = kCgroupRoot);

  // <root>/gpufleet/<agent>-job-<id>, where <agent> is 8 hex digits of a stable hash (FNV-1a)
  // of the folder that holds `job_dir` (the agent's run dir): job ids are unique per server,
  // not per host, and two agents on one host (a node running `gpufleet up` beside an agent,
  // tests side by side) must never share a job's cgroup, where a kill of one job would kill
  // the other's. Stable across restarts of the agent, which finds its jobs' cgroups again.
  static std::filesystem::path PathFor(JobId job,
                                       const std::filesystem::path& job_dir,
                                       const std::filesystem::path& root = kCgroupRoot);

  // Creates <root>/gpufleet (enabling the cpu, memory and pids controllers where the parent
  // allows) and the job's cgroup. Errors: kUnavailable when cgroup v2 is not usable, kIo.
  static Result<JobCgroup> Create(JobId job,
                                  const std::filesystem::path& job_dir,
                                  const std::filesystem::path& root = kCgroupRoot);

  // A JobCgroup for an existing folder (cleanup after a shim died).
  explicit JobCgroup(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // An O_CLOEXEC fd on cgroup.procs; a forked child writes "0" to it to move itself in before
  // it execs, so the job never runs outside the cgroup. The caller closes it.
  Result<int> OpenProcs() const;

  // The pids in the cgroup now.
  std::vector<pid_t> Pids() const;

  // Sends `sig` to every process in the cgroup. SIGKILL goes through cgroup.kill (Linux 5.14+),
  // which also catches processes forking during the kill; otherwise each pid in cgroup.procs.
  void Signal(int sig) const;

  // Removes the folder; fails (kIo) while processes remain in it.
  Status Remove() const;

 private:
  std::filesystem::path dir_;
};

}  // namespace gf::exec
