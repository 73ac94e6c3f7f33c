// JobCgroup: a job's cgroup v2 folder, <root>/gpufleet/<agent>-job-<id>, used to fence the job's
// processes and to kill the whole tree at once (cgroup.kill), whatever they did to their
// process group or session.
//
// Only used when <root> (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host) is a
// writable cgroup2 mount, checked at run time with statfs; elsewhere (pure cgroup v1 hosts,
// containers without delegation) the shim falls back to its process group and /proc
// descendant walk, which it always does as well. DetectContainment says which, for the banner.
//
// A JobCgroup is a value naming a folder; the shim that created it owns the folder and removes
// it. Not thread-safe (one shim, one thread).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/ids.h"
#include "core/result.h"

namespace gf::exec {

inline constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
// Where a hybrid host (systemd's default before v247: cgroup v1 for the controllers) mounts
// its cgroup v2 hierarchy, empty of controllers but enough to fence a job and kill it whole.
inline constexpr const char* kHybridCgroupRoot = "/sys/fs/cgroup/unified";

// The cgroup root an Executor starts with: kCgroupRoot when it is a cgroup2 mount, else
// kHybridCgroupRoot when that one is, else kCgroupRoot (DetectContainment then says why jobs
// get no cgroup).
std::filesystem::path DefaultCgroupRoot();

// How the jobs of this node are contained, as the banner and `gpufleet nodes` state it
// (docs/security.md, docs/cluster.md):
//   "cgroup-v2": each job in its own cgroup v2, killed whole with cgroup.kill; no process of
//                the job can leave it.
//   "cgroup-v1": the host has cgroup v1 (or a hybrid layout) and no writable cgroup2 mount at
//                the root gpufleet uses; the shim falls back to its process tree.
//   "none":      no cgroup (turned off, or cgroup2 not writable by this process); the
//                process tree too.
// With the process tree, a process that called setsid() and outlives a shim that was itself
// killed (kill -9, the OOM killer) is found only by its environment (JobTag): the agent kills
// what it finds, and a GPU whose job left processes it could not stop takes no new work until
// they are gone (docs/cluster.md#process-containment).
// "<agent>-job-<id>": the name of a job on this host, the same for every run of the job under one
// agent and different between agents (see JobCgroup::PathFor, whose leaf it is). The shim puts it
// in each job's environment as GPUFLEET_JOB_TAG (kJobTagVariable), where every descendant
// inherits it: the agent finds by it what is left of a job that escaped its process group where
// no cgroup holds the job (Executor, process_tree.h ProcessesWithEnvironment).
inline constexpr const char* kJobTagVariable = "GPUFLEET_JOB_TAG";
std::string JobTag(JobId job, const std::filesystem::path& job_dir);

struct Containment {
  std::string mode;    // "cgroup-v2", "cgroup-v1", "none"
  std::string detail;  // one line: where the cgroups are, or why there are none and the fix
};

// The containment jobs launched with cgroup root `root` get ("" = cgroups turned off). The same
// test the shim makes (JobCgroup::Available), made by the agent at start-up.
Containment DetectContainment(const std::filesystem::path& root);

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

  // The folder.
  const std::filesystem::path& Dir() const { return dir_; }

  // Removes the folder; fails (kIo) while processes remain in it.
  Status Remove() const;

 private:
  std::filesystem::path dir_;
};

}  // namespace gf::exec
