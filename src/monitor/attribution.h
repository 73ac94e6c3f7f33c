// ProcessAttributor: tells, for each process the driver reports on a GPU, which gpufleet job it
// belongs to and which Unix user runs it (the GpuProcessSample fields job, uid, user,
// unmanaged), by reading /proc.
//
// A process belongs to job J when either
//   1. its cgroup v2 path (the "0::" line of /proc/<pid>/cgroup) lies in ".../gpufleet/job-J",
//      the cgroup the executor puts each job in where cgroup v2 is writable (cgroup.h); this
//      holds whatever the process did to its parents, session or process group; or
//   2. walking its parent chain (/proc/<pid>/stat, field 4) reaches the shim pid of a live job:
//      the shim is the job's parent and the subreaper of its tree, so every descendant, even
//      one that called setsid or whose parent died, has the shim as an ancestor.
// Otherwise the process is `unmanaged`: gpufleet did not start it. Its owner is the real uid of
// the `Uid:` line of /proc/<pid>/status, named through getpwuid_r ("uid<N>" when the account
// has no name).
//
// A process that vanished between the driver's answer and the /proc read is kept with an
// unknown owner: job and uid nullopt, user "", unmanaged false (nothing says that gpufleet did
// not start it). The same is true of processes this agent cannot see, e.g. an agent in a
// container without the host's pid namespace, as NVML reports host pids.
//
// The /proc root is a constructor argument so tests can use a fake tree. Login names are
// cached per uid for kUserCacheLifetime, as getpwuid_r may read /etc/passwd (or ask LDAP)
// on every call.
//
// Thread-safety: not thread-safe (one agent thread owns an attributor).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "model/gpu_sample.h"

namespace gf {

// A job live on this node, with the pid of its supervisor (shim) process.
struct LiveJob {
  JobId job{};
  std::int64_t shim_pid = 0;
  bool operator==(const LiveJob&) const = default;
};

// The job id in a cgroup v2 path such as "/gpufleet/job-12" or
// "/system.slice/x/gpufleet/job-12/sub"; nullopt when the path holds no gpufleet job cgroup.
std::optional<JobId> JobFromCgroupPath(std::string_view path);

// The cgroup v2 path of a /proc/<pid>/cgroup text (its "0::" line); nullopt when there is none
// (a cgroup v1 only host).
std::optional<std::string_view> CgroupV2Path(std::string_view proc_cgroup);

// The real uid of a /proc/<pid>/status text (first number of its "Uid:" line).
std::optional<std::uint32_t> RealUidFromStatus(std::string_view proc_status);

// The parent pid of a /proc/<pid>/stat line (field 4, after the command name in parentheses,
// which may itself hold ')' and spaces).
std::optional<std::int64_t> ParentPidFromStat(std::string_view proc_stat);

class ProcessAttributor {
 public:
  // Cached login names are looked up again after this long (accounts are renamed, rarely).
  static constexpr std::chrono::minutes kUserCacheLifetime{10};
  // Parent chains longer than this are not followed (a guard against a corrupt fake tree; real
  // process trees are far shallower).
  static constexpr int kMaxParentChain = 256;

  explicit ProcessAttributor(std::filesystem::path proc_root = "/proc");

  // Fills job, uid, user and unmanaged of every process of every sample. `live_jobs`: the jobs
  // this node runs now. A pid on several GPUs is read from /proc once per call.
  void Attribute(std::span<GpuSample> samples, std::span<const LiveJob> live_jobs);

  // The attribution of one pid (only job, uid, user, unmanaged are set; pid is).
  GpuProcessSample AttributePid(std::uint32_t pid, std::span<const LiveJob> live_jobs);

 private:
  std::optional<JobId> JobByParentChain(std::int64_t pid, std::span<const LiveJob> live_jobs);
  std::string UserName(std::uint32_t uid);
  std::filesystem::path ProcFile(std::int64_t pid, const char* name) const;

  struct CachedName {
    std::string name;
    std::chrono::steady_clock::time_point looked_up;
  };

  std::filesystem::path proc_root_;
  std::map<std::uint32_t, CachedName> user_names_;
};

}  // namespace gf
