// Host limits of a job (issue #24): its CPU quota and memory limit, held by the kernel through
// the job's cgroup, and whether the kernel's OOM killer stopped the job at that limit.
//
// cgroup v2: written into the job's own cgroup (JobCgroup, cgroup.h), after its parent enabled
// the cpu and memory controllers in cgroup.subtree_control (JobCgroup::Create does):
//   cpu.max          "<cpus * period> <period>" (period 100 ms)
//   memory.max       bytes
//   memory.swap.max  0 (the limit is of memory, not of memory plus swap)
// An OOM kill shows in memory.events as "oom_kill N", N > 0.
//
// cgroup v1 (a hybrid host, whose cgroup2 mount has no controllers, or a v1-only host): a folder
// per job under each of the cpu and memory hierarchies, <v1 root>/{cpu,memory}/gpufleet/<tag>:
//   cpu.cfs_period_us / cpu.cfs_quota_us, memory.limit_in_bytes (and memory.memsw.limit_in_bytes
//   where swap accounting is on). An OOM kill shows in memory.oom_control as "oom_kill N"
//   (Linux 4.13+), else as memory.failcnt > 0. The shim removes the folders at the job's end.
//
// Where neither can be written the job runs without limits and its log says so in one line.
// All paths are parameters, so that tests write a synthetic tree. Plain functions and a value
// type naming folders; not thread-safe (one shim, one thread).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gf::exec {

inline constexpr std::int64_t kCpuPeriodUs = 100'000;
// How the cause of a job its memory limit killed starts (as Slurm's state of such a job): the
// controller ends the job FAILED with this reason and `show` says so.
inline constexpr const char* kOutOfMemoryCause = "OUT_OF_MEMORY";

struct HostLimits {
  int cpus = 0;                 // 0 = no CPU quota
  std::int64_t memory_mib = 0;  // 0 = no memory limit
  bool Any() const { return cpus > 0 || memory_mib > 0; }
};

// "8 CPUs, 64 GiB memory": what the limits are, for log lines and causes.
std::string DescribeLimits(const HostLimits& limits);

// Writes `limits` into the cgroup v2 folder `dir` (a job's cgroup). Errors: kUnavailable when a
// controller's file is absent (the parent did not enable it: a hybrid host's cgroup2 mount has
// no controllers), kIo when a write fails; the message names the file.
Status ApplyV2Limits(const std::filesystem::path& dir, const HostLimits& limits);

// The cgroup v1 root beside the cgroup v2 root a shim was given: the parent of a hybrid host's
// ".../unified" mount, else the root itself (a v1-only host mounts its hierarchies there).
std::filesystem::path V1RootFor(const std::filesystem::path& cgroup_root);

// A job's folders under the cgroup v1 cpu and memory hierarchies.
class V1LimitGroups {
 public:
  // <v1_root>/cpu/gpufleet/<tag> and <v1_root>/memory/gpufleet/<tag>, the limits written. A
  // hierarchy the limits do not need (no CPU quota, say) gets no folder. Errors: kUnavailable
  // when a hierarchy needed is not there or not writable, kIo naming the file that failed;
  // on error nothing is left behind.
  static Result<V1LimitGroups> Create(const std::filesystem::path& v1_root,
                                      const std::string& tag,
                                      const HostLimits& limits);
  // The folders a job tagged `tag` would have (for cleanup after a shim died).
  static V1LimitGroups For(const std::filesystem::path& v1_root, const std::string& tag);

  // O_CLOEXEC fds on each folder's cgroup.procs, for the forked child to join before it execs.
  // The caller closes them.
  Result<std::vector<int>> OpenProcs() const;
  // The memory folder ("" when the job has no memory limit): where an OOM kill is counted.
  const std::filesystem::path& MemoryDir() const { return memory_dir_; }
  // The cpu folder ("" when the job has no CPU quota): where cpuacct counts its CPU time when
  // the host mounts cpu and cpuacct together (cpu,cpuacct).
  const std::filesystem::path& CpuDir() const { return cpu_dir_; }
  // Removes the folders (empty once the job's processes are gone); an absent one is no error.
  Status Remove() const;

 private:
  std::filesystem::path cpu_dir_;
  std::filesystem::path memory_dir_;
};

// What a job's cgroup folder `dir` counted of its processes, read before the folder goes; nullopt
// when `dir` is "" or has no such file (a v2 cgroup without the memory controller, a kernel
// before memory.peak, a v1 cpu folder without cpuacct beside it):
//   CPU time, microseconds: cgroup v2 cpu.stat "usage_usec", else v1 cpuacct.usage (ns);
//   memory high-water mark, bytes: cgroup v2 memory.peak, else v1 memory.max_usage_in_bytes.
std::optional<std::int64_t> CgroupCpuUsec(const std::filesystem::path& dir);
std::optional<std::int64_t> CgroupMemoryPeakBytes(const std::filesystem::path& dir);

// Whether the kernel's OOM killer killed a process of the job in the memory cgroup `dir`:
// cgroup v2 (memory.events oom_kill) or v1 (memory.oom_control oom_kill, else memory.failcnt).
bool OomKilled(const std::filesystem::path& dir);

}  // namespace gf::exec
