#include "monitor/attribution.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <unordered_map>

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include "model/kube_pod.h"

#include "slurm/slurm_attribution.h"
#include "slurm/slurm_jobs.h"

namespace gf {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kJobCgroupParent = "gpufleet/";
constexpr std::string_view kJobMarker = "job-";
constexpr std::size_t kAgentKeyDigits = 8;  // executor/cgroup.h: "<8 hex digits>-job-<id>"

// The whole of a small /proc file; nullopt when it cannot be opened (the process is gone).
// /proc files report size 0, so this reads until EOF instead of trusting stat.
std::optional<std::string> ReadProcFile(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string text;
  std::array<char, 4096> buf{};
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      ::close(fd);
      return std::nullopt;  // ESRCH: the process exited while we read
    }
    if (n == 0) {
      break;
    }
    text.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

// Parses a whole unsigned decimal number; nullopt for anything else (sign, spaces, overflow).
template <typename T>
std::optional<T> ParseNumber(std::string_view s) {
  T value{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) {
    return std::nullopt;
  }
  return value;
}

// Calls `fn` on each line of `text` (without its '\n') until it returns true.
template <typename Fn>
bool AnyLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (fn(line)) {
      return true;
    }
    if (end == std::string_view::npos) {
      break;
    }
    text.remove_prefix(end + 1);
  }
  return false;
}

std::string_view SkipBlanks(std::string_view s) {
  std::size_t first = s.find_first_not_of(" \t");
  return first == std::string_view::npos ? std::string_view{} : s.substr(first);
}

// /proc/<pid>/stat's fields by their number in proc(5): the parent pid, user and system CPU
// time, start time.
constexpr int kStatParentPid = 4;
constexpr int kStatUserTime = 14;
constexpr int kStatSystemTime = 15;
constexpr int kStatStartTime = 22;
constexpr int kStatFirstAfterName = 3;  // the state, right after "(<comm>)"
constexpr std::int64_t kKibPerMib = 1024;
constexpr double kPercent = 100.0;

// Field `n` (numbered as in proc(5), n >= 3) of a /proc/<pid>/stat line: "<pid> (<comm>)
// <state> <ppid> ...", where comm may itself hold ") " and spaces, so fields are counted from
// after the last ')'.
std::optional<std::string_view> StatField(std::string_view proc_stat, int n) {
  const std::size_t close = proc_stat.rfind(')');
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view rest = proc_stat.substr(close + 1);
  for (int field = kStatFirstAfterName;; ++field) {
    rest = SkipBlanks(rest);
    const std::size_t end = rest.find_first_of(" \n");
    if (rest.empty()) {
      return std::nullopt;
    }
    if (field == n) {
      return rest.substr(0, end);
    }
    if (end == std::string_view::npos) {
      return std::nullopt;
    }
    rest.remove_prefix(end);
  }
}

}  // namespace

std::optional<JobId> JobFromCgroupPath(std::string_view path) {
  // The job's cgroup is <root>/gpufleet/<agent>-job-<id> (executor/cgroup.h; "job-<id>" alone
  // before the agent key): match that pair of components anywhere (the agent may itself run in
  // a nested cgroup namespace) and allow sub-cgroups below it.
  std::size_t at = 0;
  while ((at = path.find(kJobCgroupParent, at)) != std::string_view::npos) {
    const bool starts_component = at == 0 || path[at - 1] == '/';
    at += kJobCgroupParent.size();
    std::string_view name = path.substr(at);
    name = name.substr(0, name.find('/'));
    if (name.size() > kAgentKeyDigits && name[kAgentKeyDigits] == '-' &&
        name.substr(0, kAgentKeyDigits).find_first_not_of("0123456789abcdef") ==
            std::string_view::npos) {
      name.remove_prefix(kAgentKeyDigits + 1);
    }
    if (!starts_component || !name.starts_with(kJobMarker)) {
      continue;
    }
    std::optional<std::int64_t> id = ParseNumber<std::int64_t>(name.substr(kJobMarker.size()));
    if (id && *id > 0) {
      return JobId(*id);
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> CgroupV2Path(std::string_view proc_cgroup) {
  // cgroup v2 has one line, "0::<path>"; v1 hierarchies have "N:controllers:<path>" lines.
  std::optional<std::string_view> found;
  AnyLine(proc_cgroup, [&found](std::string_view line) {
    if (line.starts_with("0::")) {
      found = line.substr(3);
      return true;
    }
    return false;
  });
  return found;
}

std::optional<std::uint32_t> RealUidFromStatus(std::string_view proc_status) {
  // "Uid:\t<real>\t<effective>\t<saved>\t<filesystem>"
  std::optional<std::uint32_t> uid;
  AnyLine(proc_status, [&uid](std::string_view line) {
    if (!line.starts_with("Uid:")) {
      return false;
    }
    std::string_view rest = SkipBlanks(line.substr(4));
    uid = ParseNumber<std::uint32_t>(rest.substr(0, rest.find_first_of(" \t")));
    return true;
  });
  return uid;
}

std::optional<std::int64_t> ParentPidFromStat(std::string_view proc_stat) {
  const std::optional<std::string_view> ppid = StatField(proc_stat, kStatParentPid);
  return ppid ? ParseNumber<std::int64_t>(*ppid) : std::nullopt;
}

std::optional<ProcessCpuTime> CpuTimeFromStat(std::string_view proc_stat) {
  const auto field = [proc_stat](int n) {
    const std::optional<std::string_view> text = StatField(proc_stat, n);
    return text ? ParseNumber<std::uint64_t>(*text) : std::nullopt;
  };
  const auto utime = field(kStatUserTime);
  const auto stime = field(kStatSystemTime);
  const auto start = field(kStatStartTime);
  if (!utime || !stime || !start) {
    return std::nullopt;
  }
  return ProcessCpuTime{.ticks = *utime + *stime, .start_ticks = *start};
}

std::optional<std::int64_t> ResidentMibFromStatus(std::string_view proc_status) {
  // "VmRSS:\t  123456 kB"
  std::optional<std::int64_t> mib;
  AnyLine(proc_status, [&mib](std::string_view line) {
    if (!line.starts_with("VmRSS:")) {
      return false;
    }
    std::string_view rest = SkipBlanks(line.substr(6));
    const auto kib = ParseNumber<std::int64_t>(rest.substr(0, rest.find_first_of(" \t")));
    mib = kib ? std::optional<std::int64_t>(*kib / kKibPerMib) : std::nullopt;
    return true;
  });
  return mib;
}

std::string CommandFromCmdline(std::string_view cmdline) {
  while (!cmdline.empty() && cmdline.back() == '\0') {
    cmdline.remove_suffix(1);
  }
  std::string out(cmdline.substr(0, kProcessCommandMaxBytes));
  std::replace(out.begin(), out.end(), '\0', ' ');
  if (cmdline.size() > kProcessCommandMaxBytes) {
    // Cut at a character boundary: drop the continuation bytes of a split UTF-8 sequence and
    // its lead byte.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0U) == 0x80U) {
      out.pop_back();
    }
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0U) {
      out.pop_back();
    }
  }
  return out;
}

std::string_view JobSourceName(JobSource source) {
  switch (source) {
    case JobSource::kSlurm:
      return "slurm";
    case JobSource::kKubernetes:
      return "kubernetes";
    case JobSource::kGpufleet:
      break;
  }
  return "";
}

std::optional<JobSource> JobSourceOfName(std::string_view name) {
  for (const JobSource source : {JobSource::kGpufleet, JobSource::kSlurm, JobSource::kKubernetes}) {
    if (JobSourceName(source) == name) {
      return source;
    }
  }
  return std::nullopt;
}

ProcessAttributor::ProcessAttributor(fs::path proc_root, JobSource source)
    : proc_root_(std::move(proc_root)),
      source_(source),
      ticks_per_second_(static_cast<double>(std::max(1L, ::sysconf(_SC_CLK_TCK)))) {}

fs::path ProcessAttributor::ProcFile(std::int64_t pid, const char* name) const {
  return proc_root_ / std::to_string(pid) / name;
}

void ProcessAttributor::Attribute(std::span<GpuSample> samples,
                                  std::span<const LiveJob> live_jobs,
                                  std::chrono::steady_clock::time_point now) {
  // A multi-GPU process shows up on each of its GPUs; /proc is read once for it.
  std::unordered_map<std::uint32_t, GpuProcessSample> seen;
  // Kubernetes mode: each pid's pod and container (nullopt: none), read once too.
  std::unordered_map<std::uint32_t, std::optional<KubeProcessOwner>> kube_owners;
  for (GpuSample& sample : samples) {
    for (GpuProcessSample& process : sample.processes) {
      auto it = seen.find(process.pid);
      if (it == seen.end()) {
        // status is read once: the owner's uid and the resident memory are both in it.
        const std::optional<std::string> status = ReadProcFile(ProcFile(process.pid, "status"));
        GpuProcessSample found = AttributeWithStatus(process.pid, status, live_jobs);
        ReadHostUse(found, status, now);
        if (source_ == JobSource::kKubernetes && kube_view_ && found.uid) {
          const std::optional<std::string> cgroup = ReadProcFile(ProcFile(process.pid, "cgroup"));
          kube_owners[process.pid] =
              cgroup ? KubeOwnerOfProcess(*cgroup, kube_view_->logs, kube_view_->holders)
                     : std::nullopt;
        }
        it = seen.emplace(process.pid, std::move(found)).first;
      }
      process.job = it->second.job;
      process.uid = it->second.uid;
      process.user = it->second.user;
      process.unmanaged = it->second.unmanaged;
      process.cpu_pct = it->second.cpu_pct;
      process.host_memory_mib = it->second.host_memory_mib;
      process.command = it->second.command;
      if (const auto owner = kube_owners.find(process.pid); owner != kube_owners.end()) {
        ApplyKubeOwner(process, sample.uuid, owner->second);
      }
    }
  }
  // Forget the pids that left the GPUs: a pid reused later starts from no mark.
  std::erase_if(cpu_marks_, [&seen](const auto& mark) { return !seen.contains(mark.first); });
}

void ProcessAttributor::ApplyKubeOwner(GpuProcessSample& process,
                                       const GpuUuid& gpu,
                                       const std::optional<KubeProcessOwner>& owner) const {
  process.job.reset();
  process.unmanaged = true;
  if (!owner) {
    return;  // in no pod's container
  }
  process.pod = owner->pod_name.empty() ? "uid " + owner->pod_uid
                                        : owner->pod_namespace + "/" + owner->pod_name;
  process.container = owner->container;
  // The container holds the GPU, or the MIG device the process runs on (pod-resources names
  // MIG devices by their own UUIDs; NVML reports their processes on the parent GPU).
  const std::string& mig = process.mig_uuid.value();
  const bool holds =
      std::any_of(owner->gpus.begin(), owner->gpus.end(), [&gpu, &mig](const KubeGpu& g) {
        return g.gpu == gpu.value() || (!mig.empty() && g.gpu == mig);
      });
  if (holds) {
    process.job = KubeJobIdOfPod(owner->pod_uid);
    process.unmanaged = !process.job.has_value();
  }
}

void ProcessAttributor::ReadHostUse(GpuProcessSample& out,
                                    const std::optional<std::string>& status,
                                    std::chrono::steady_clock::time_point now) {
  const std::optional<std::string> stat = ReadProcFile(ProcFile(out.pid, "stat"));
  const std::optional<ProcessCpuTime> cpu = stat ? CpuTimeFromStat(*stat) : std::nullopt;
  if (cpu) {
    const auto mark = cpu_marks_.find(out.pid);
    if (mark != cpu_marks_.end() && mark->second.cpu.start_ticks == cpu->start_ticks &&
        now > mark->second.at && cpu->ticks >= mark->second.cpu.ticks) {
      const double seconds = std::chrono::duration<double>(now - mark->second.at).count();
      const auto used = static_cast<double>(cpu->ticks - mark->second.cpu.ticks);
      out.cpu_pct = used / ticks_per_second_ / seconds * kPercent;
    }
    cpu_marks_[out.pid] = CpuMark{.cpu = *cpu, .at = now};
  }
  if (status) {
    out.host_memory_mib = ResidentMibFromStatus(*status);
  }
  if (const std::optional<std::string> cmdline = ReadProcFile(ProcFile(out.pid, "cmdline"))) {
    out.command = CommandFromCmdline(*cmdline);
  }
}

GpuProcessSample ProcessAttributor::AttributePid(std::uint32_t pid,
                                                 std::span<const LiveJob> live_jobs) {
  // status first: if it is missing the process is gone and nothing else is read.
  return AttributeWithStatus(pid, ReadProcFile(ProcFile(pid, "status")), live_jobs);
}

GpuProcessSample ProcessAttributor::AttributeWithStatus(std::uint32_t pid,
                                                        const std::optional<std::string>& status,
                                                        std::span<const LiveJob> live_jobs) {
  GpuProcessSample out;
  out.pid = pid;
  std::optional<std::uint32_t> uid = status ? RealUidFromStatus(*status) : std::nullopt;
  std::optional<std::string> cgroup = ReadProcFile(ProcFile(pid, "cgroup"));
  if (!uid || !cgroup) {
    return out;  // vanished (or unreadable): unknown owner
  }
  if (source_ == JobSource::kSlurm) {
    // The job from its cgroup (or its environment), and on which node of a multi-node job it
    // runs from its environment (slurm_jobs.h SlurmNodeJobId): each node's share is a job.
    const std::optional<std::string> environ = ReadProcFile(ProcFile(pid, "environ"));
    std::optional<std::int64_t> slurm_job = SlurmJobFromCgroup(*cgroup);
    if (!slurm_job && environ) {
      slurm_job = SlurmJobFromEnviron(*environ);
    }
    if (slurm_job) {
      out.job = JobId{SlurmNodeJobId(*slurm_job, environ ? SlurmNodeRankFromEnviron(*environ) : 0)};
    }
  } else if (source_ == JobSource::kKubernetes) {
    // The pod is judged per GPU (Attribute, ApplyKubeOwner); alone, the owner is unknown.
    out.uid = uid;
    out.user = UserName(*uid);
    return out;
  } else {
    std::optional<std::string_view> path = CgroupV2Path(*cgroup);
    out.job = path ? JobFromCgroupPath(*path) : std::nullopt;
    if (!out.job) {
      out.job = JobByParentChain(pid, live_jobs);
    }
  }
  out.uid = uid;
  out.user = UserName(*uid);
  out.unmanaged = !out.job.has_value();
  return out;
}

std::optional<JobId> ProcessAttributor::JobByParentChain(std::int64_t pid,
                                                         std::span<const LiveJob> live_jobs) {
  if (live_jobs.empty()) {
    return std::nullopt;
  }
  // From the process itself up to init (pid 1, never a shim): a job's main process is the
  // shim's child, its descendants and adopted orphans lie further down.
  std::int64_t current = pid;
  for (int step = 0; step < kMaxParentChain && current > 1; ++step) {
    auto live = std::find_if(live_jobs.begin(), live_jobs.end(), [current](const LiveJob& j) {
      return j.shim_pid == current;
    });
    if (live != live_jobs.end()) {
      return live->job;
    }
    std::optional<std::string> stat = ReadProcFile(ProcFile(current, "stat"));
    std::optional<std::int64_t> parent = stat ? ParentPidFromStat(*stat) : std::nullopt;
    if (!parent) {
      return std::nullopt;
    }
    current = *parent;
  }
  return std::nullopt;
}

std::string ProcessAttributor::UserName(std::uint32_t uid) {
  auto now = std::chrono::steady_clock::now();
  auto cached = user_names_.find(uid);
  if (cached != user_names_.end() && now - cached->second.looked_up < kUserCacheLifetime) {
    return cached->second.name;
  }
  std::string name = "uid" + std::to_string(uid);
  passwd entry{};
  passwd* result = nullptr;
  std::vector<char> buf(16384);
  // ERANGE asks for a bigger buffer; any other failure (or no entry) keeps "uid<N>".
  int rc = 0;
  while ((rc = ::getpwuid_r(uid, &entry, buf.data(), buf.size(), &result)) == ERANGE &&
         buf.size() < (std::size_t{1} << 20)) {
    buf.resize(buf.size() * 2);
  }
  if (rc == 0 && result != nullptr && result->pw_name != nullptr && result->pw_name[0] != '\0') {
    name = result->pw_name;
  }
  user_names_[uid] = CachedName{name, now};
  return name;
}

}  // namespace gf
