#include "executor/host_limits.h"

#include <cerrno>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/job_files.h"
#include "model/job.h"

namespace gf::exec {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kBytesPerMib = std::int64_t{1024} * 1024;

// One write(2) of `value` to a cgroup control file. Errors: kUnavailable when the file is
// absent (its controller is not enabled there), kIo otherwise; both name the file.
Status WriteControl(const fs::path& file, const std::string& value) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return Unavailable(file.string() + " does not exist (controller not enabled there)");
    }
    return IoError("cannot open " + file.string() + ": " + ErrnoText(err));
  }
  const bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  const int err = errno;
  ::close(fd);
  if (!ok) {
    return IoError("cannot write '" + value + "' to " + file.string() + ": " + ErrnoText(err));
  }
  return OkStatus();
}

// `key value` lines (memory.events, memory.oom_control): the value of `key`, -1 when absent.
std::int64_t KeyedValue(const fs::path& file, const std::string& key) {
  Result<std::string> text = ReadWholeFile(file);
  if (!text.ok()) {
    return -1;
  }
  std::istringstream in(*text);
  std::string name;
  std::int64_t value = 0;
  while (in >> name >> value) {
    if (name == key) {
      return value;
    }
  }
  return -1;
}

// Creates `dir` and its parent (the shared "gpufleet" folder) under a v1 hierarchy.
Status MakeDirs(const fs::path& dir) {
  for (const fs::path& d : {dir.parent_path(), dir}) {
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
      const int err = errno;
      return IoError("cannot create cgroup " + d.string() + ": " + ErrnoText(err));
    }
  }
  return OkStatus();
}

}  // namespace

std::string DescribeLimits(const HostLimits& limits) {
  JobRequest request;
  request.cpus = limits.cpus;
  request.memory_mib = limits.memory_mib;
  return DescribeHostRequest(request);
}

Status ApplyV2Limits(const fs::path& dir, const HostLimits& limits) {
  if (limits.cpus > 0) {
    GF_TRY(WriteControl(
        dir / "cpu.max",
        std::to_string(limits.cpus * kCpuPeriodUs) + " " + std::to_string(kCpuPeriodUs)));
  }
  if (limits.memory_mib > 0) {
    GF_TRY(WriteControl(dir / "memory.max", std::to_string(limits.memory_mib * kBytesPerMib)));
    // Absent without swap accounting (swapaccount=0): the memory limit alone then holds.
    if (::access((dir / "memory.swap.max").c_str(), F_OK) == 0) {
      GF_TRY(WriteControl(dir / "memory.swap.max", "0"));
    }
  }
  return OkStatus();
}

fs::path V1RootFor(const fs::path& cgroup_root) {
  fs::path root = cgroup_root.lexically_normal();
  if (root.filename().empty()) {
    root = root.parent_path();
  }
  return root.filename() == "unified" ? root.parent_path() : root;
}

V1LimitGroups V1LimitGroups::For(const fs::path& v1_root, const std::string& tag) {
  V1LimitGroups groups;
  groups.cpu_dir_ = v1_root / "cpu" / "gpufleet" / tag;
  groups.memory_dir_ = v1_root / "memory" / "gpufleet" / tag;
  return groups;
}

Result<V1LimitGroups> V1LimitGroups::Create(const fs::path& v1_root,
                                            const std::string& tag,
                                            const HostLimits& limits) {
  V1LimitGroups groups = For(v1_root, tag);
  if (limits.cpus <= 0) {
    groups.cpu_dir_.clear();
  }
  if (limits.memory_mib <= 0) {
    groups.memory_dir_.clear();
  }
  for (const fs::path* dir : {&groups.cpu_dir_, &groups.memory_dir_}) {
    if (dir->empty()) {
      continue;
    }
    const fs::path hierarchy = dir->parent_path().parent_path();
    if (::access((hierarchy / "cgroup.procs").c_str(), W_OK) != 0) {
      return Unavailable("no writable cgroup v1 hierarchy at " + hierarchy.string());
    }
  }
  const auto fail = [&groups](const Error& error) -> Result<V1LimitGroups> {
    Status removed = groups.Remove();
    (void)removed;  // the first error is the one to report
    return error;
  };
  if (!groups.cpu_dir_.empty()) {
    Status made = MakeDirs(groups.cpu_dir_);
    if (made.ok()) {
      made = WriteControl(groups.cpu_dir_ / "cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
    }
    if (made.ok()) {
      made = WriteControl(groups.cpu_dir_ / "cpu.cfs_quota_us",
                          std::to_string(limits.cpus * kCpuPeriodUs));
    }
    if (!made.ok()) {
      return fail(made.error());
    }
  }
  if (!groups.memory_dir_.empty()) {
    const std::string bytes = std::to_string(limits.memory_mib * kBytesPerMib);
    Status made = MakeDirs(groups.memory_dir_);
    if (made.ok()) {
      made = WriteControl(groups.memory_dir_ / "memory.limit_in_bytes", bytes);
    }
    // memory+swap no higher than memory: no swap beyond the limit (absent without swapaccount).
    if (made.ok() &&
        ::access((groups.memory_dir_ / "memory.memsw.limit_in_bytes").c_str(), F_OK) == 0) {
      made = WriteControl(groups.memory_dir_ / "memory.memsw.limit_in_bytes", bytes);
    }
    if (!made.ok()) {
      return fail(made.error());
    }
  }
  return groups;
}

Result<std::vector<int>> V1LimitGroups::OpenProcs() const {
  std::vector<int> fds;
  for (const fs::path& dir : {cpu_dir_, memory_dir_}) {
    if (dir.empty()) {
      continue;
    }
    const int fd = ::open((dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      for (const int open_fd : fds) {
        ::close(open_fd);
      }
      return IoError("cannot open " + (dir / "cgroup.procs").string() + ": " + ErrnoText(err));
    }
    fds.push_back(fd);
  }
  return fds;
}

Status V1LimitGroups::Remove() const {
  for (const fs::path& dir : {cpu_dir_, memory_dir_}) {
    if (!dir.empty() && ::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
      const int err = errno;
      return IoError("cannot remove cgroup " + dir.string() + ": " + ErrnoText(err));
    }
  }
  return OkStatus();
}

namespace {

// A file holding one number (cpuacct.usage, memory.peak); nullopt when absent or not a number.
std::optional<std::int64_t> NumberIn(const fs::path& file) {
  Result<std::string> text = ReadWholeFile(file);
  if (!text.ok()) {
    return std::nullopt;
  }
  std::istringstream in(*text);
  std::int64_t value = 0;
  return in >> value ? std::optional<std::int64_t>(value) : std::nullopt;
}

}  // namespace

std::optional<std::int64_t> CgroupCpuUsec(const fs::path& dir) {
  if (dir.empty()) {
    return std::nullopt;
  }
  if (const std::int64_t usec = KeyedValue(dir / "cpu.stat", "usage_usec"); usec >= 0) {
    return usec;  // cgroup v2
  }
  const std::optional<std::int64_t> ns = NumberIn(dir / "cpuacct.usage");
  return ns ? std::optional<std::int64_t>(*ns / 1000) : std::nullopt;
}

std::optional<std::int64_t> CgroupMemoryPeakBytes(const fs::path& dir) {
  if (dir.empty()) {
    return std::nullopt;
  }
  if (std::optional<std::int64_t> peak = NumberIn(dir / "memory.peak")) {
    return peak;  // cgroup v2, Linux 5.19+
  }
  return NumberIn(dir / "memory.max_usage_in_bytes");
}

bool OomKilled(const fs::path& dir) {
  if (dir.empty()) {
    return false;
  }
  if (const std::int64_t kills = KeyedValue(dir / "memory.events", "oom_kill"); kills >= 0) {
    return kills > 0;  // cgroup v2
  }
  if (const std::int64_t kills = KeyedValue(dir / "memory.oom_control", "oom_kill"); kills >= 0) {
    return kills > 0;  // cgroup v1, Linux 4.13+
  }
  Result<std::string> failures = ReadWholeFile(dir / "memory.failcnt");
  return failures.ok() && !failures->empty() && failures->front() != '0';
}

}  // namespace gf::exec
