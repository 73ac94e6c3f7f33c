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
// Otherwise the process is `unmanaged`: gpufleet did not start it.
// In Slurm companion mode (`gpufleet agent --slurm`, JobSource::kSlurm) gpufleet starts no job:
// a process belongs to Slurm job J by its cgroup or its SLURM_JOB_ID (slurm/slurm_attribution.h),
// and the job id reported is Slurm's, which is the id the companion server gives the job. Its owner
// is the real uid of the `Uid:` line of /proc/<pid>/status, named through getpwuid_r ("uid<N>" when
// the account has no name).
// In Kubernetes mode (`gpufleet agent --kubernetes`, JobSource::kKubernetes) a process belongs
// to the pod whose container it runs in (its cgroup, kube/kube_owner.h) when that container
// holds the GPU the process is on (the kubelet's pod-resources), and the job id is the pod's
// (model/kube_pod.h KubeJobIdOfPod). A process of a pod whose container does not hold the GPU
// runs outside its allocation: no job, unmanaged, its pod and container named. A process in no
// container is unmanaged. Without a reading of the kubelet (SetKubeView with none: the kubelet
// did not answer) no process is given a pod: their owners are unknown, as for a vanished pid.
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
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "model/gpu_sample.h"

#include "kube/kube_devices.h"
#include "kube/kube_owner.h"

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

// What /proc/<pid>/stat says of a process's CPU use: user + system time (fields 14 and 15)
// and its start time (field 22, which tells a reused pid from the process seen before), in
// clock ticks.
struct ProcessCpuTime {
  std::uint64_t ticks = 0;
  std::uint64_t start_ticks = 0;
  bool operator==(const ProcessCpuTime&) const = default;
};
std::optional<ProcessCpuTime> CpuTimeFromStat(std::string_view proc_stat);

// The resident set size of a /proc/<pid>/status text ("VmRSS:" in kB), in MiB rounded down;
// nullopt when absent (a kernel thread, a zombie).
std::optional<std::int64_t> ResidentMibFromStatus(std::string_view proc_status);

// A /proc/<pid>/cmdline (arguments each ended by NUL) as one line: arguments joined by one
// space, at most kProcessCommandMaxBytes (cut at a UTF-8 character boundary). Bytes are kept
// as they are: whoever prints it escapes control characters.
std::string CommandFromCmdline(std::string_view cmdline);

// Whose jobs the processes are in: gpufleet's (its cgroups and shims), Slurm's, or Kubernetes'
// pods.
enum class JobSource { kGpufleet, kSlurm, kKubernetes };

// The name of a source as the agent's hello carries it (AgentHello::jobs_from): "", "slurm",
// "kubernetes"; and back (nullopt: a name this version does not know).
std::string_view JobSourceName(JobSource source);
std::optional<JobSource> JobSourceOfName(std::string_view name);

// Kubernetes mode: what the node's kubelet says at one sampling round.
struct KubeNodeView {
  KubeLogIndex logs{};                       // ReadKubeLogIndex
  std::vector<KubeContainerGpus> holders{};  // pod-resources List
};

class ProcessAttributor {
 public:
  // Cached login names are looked up again after this long (accounts are renamed, rarely).
  static constexpr std::chrono::minutes kUserCacheLifetime{10};
  // Parent chains longer than this are not followed (a guard against a corrupt fake tree; real
  // process trees are far shallower).
  static constexpr int kMaxParentChain = 256;

  explicit ProcessAttributor(std::filesystem::path proc_root = "/proc",
                             JobSource source = JobSource::kGpufleet);

  // Fills job, uid, user and unmanaged of every process of every sample, and what it uses on
  // the host (cpu_pct, host_memory_mib, command). `live_jobs`: the jobs this node runs now. A
  // pid on several GPUs is read from /proc once per call. `now`: when the samples were read;
  // cpu_pct is the CPU time a pid used since the previous call that saw it, over the time
  // between the two.
  void Attribute(std::span<GpuSample> samples,
                 std::span<const LiveJob> live_jobs,
                 std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

  // The attribution of one pid (only job, uid, user, unmanaged are set; pid is).
  GpuProcessSample AttributePid(std::uint32_t pid, std::span<const LiveJob> live_jobs);

  // Kubernetes mode: the kubelet's view for the next Attribute calls; nullopt when it could
  // not be read (no process is given a pod then).
  void SetKubeView(std::optional<KubeNodeView> view) { kube_view_ = std::move(view); }

 private:
  std::optional<JobId> JobByParentChain(std::int64_t pid, std::span<const LiveJob> live_jobs);
  std::string UserName(std::uint32_t uid);
  std::filesystem::path ProcFile(std::int64_t pid, const char* name) const;
  // AttributePid with /proc/<pid>/status already read (nullopt: it could not be).
  GpuProcessSample AttributeWithStatus(std::uint32_t pid,
                                       const std::optional<std::string>& status,
                                       std::span<const LiveJob> live_jobs);
  // Sets cpu_pct, host_memory_mib and command of `out` (a pid already attributed), `status`
  // being its /proc/<pid>/status as AttributeWithStatus read it.
  void ReadHostUse(GpuProcessSample& out,
                   const std::optional<std::string>& status,
                   std::chrono::steady_clock::time_point now);

  // A pid's CPU time when last seen, for the next call's cpu_pct.
  struct CpuMark {
    ProcessCpuTime cpu;
    std::chrono::steady_clock::time_point at;
  };

  struct CachedName {
    std::string name;
    std::chrono::steady_clock::time_point looked_up;
  };

  // Kubernetes mode: sets job, unmanaged, pod and container of `process`, on GPU `gpu`, from
  // its owner (nullopt: in no pod's container).
  void ApplyKubeOwner(GpuProcessSample& process,
                      const GpuUuid& gpu,
                      const std::optional<KubeProcessOwner>& owner) const;

  std::filesystem::path proc_root_;
  JobSource source_;
  std::optional<KubeNodeView> kube_view_;
  std::map<std::uint32_t, CachedName> user_names_;
  std::unordered_map<std::uint32_t, CpuMark> cpu_marks_;  // pids of the last Attribute call
  double ticks_per_second_;
};

}  // namespace gf
