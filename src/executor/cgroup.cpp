#include "executor/cgroup.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "executor/job_files.h"

namespace gf::exec {
namespace {

namespace fs = std::filesystem;

// cgroup control files are written with one write(2) each; O_TRUNC/rename make no sense there.
bool WriteControl(const fs::path& file, const std::string& value) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return ok;
}

// Enables what `dir` offers of cpu, memory and pids for its children. One controller at a time:
// a write naming a controller the parent lacks fails as a whole.
void EnableControllers(const fs::path& dir) {
  for (const char* c : {"+cpu", "+memory", "+pids"}) {
    WriteControl(dir / "cgroup.subtree_control", c);
  }
}

Status MakeDir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    int err = errno;
    return IoError("cannot create cgroup " + dir.string() + ": " + ErrnoText(err));
  }
  return OkStatus();
}

// The file system type of the mount at `path`; nullopt when it cannot be read.
std::optional<std::uint64_t> FileSystemType(const fs::path& path) {
  struct statfs fs_info {};
  if (::statfs(path.c_str(), &fs_info) != 0) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(fs_info.f_type);
}

}  // namespace

fs::path DefaultCgroupRoot() {
  if (FileSystemType(kCgroupRoot) != CGROUP2_SUPER_MAGIC &&
      FileSystemType(kHybridCgroupRoot) == CGROUP2_SUPER_MAGIC) {
    return kHybridCgroupRoot;
  }
  return kCgroupRoot;
}

bool JobCgroup::Available(const fs::path& root) {
  if (FileSystemType(root) != CGROUP2_SUPER_MAGIC) {
    return false;
  }
  return ::access(root.c_str(), W_OK) == 0 && ::access((root / "cgroup.procs").c_str(), W_OK) == 0;
}

Containment DetectContainment(const fs::path& root) {
  constexpr const char* kFix =
      "; a process that leaves its session and outlives a killed supervisor escapes (docs/"
      "cluster.md#process-containment)";
  if (root.empty()) {
    return {"none", std::string("cgroups turned off") + kFix};
  }
  if (JobCgroup::Available(root)) {
    return {"cgroup-v2", "each job in its own cgroup under " + (root / "gpufleet").string()};
  }
  const std::optional<std::uint64_t> type = FileSystemType(root);
  if (type == CGROUP2_SUPER_MAGIC) {
    return {"none",
            root.string() + " is cgroup v2 but not writable by uid " + std::to_string(::geteuid()) +
                " (run the agent as root, or delegate "
                "the subtree)" +
                kFix};
  }
  // cgroup v1: one hierarchy mounted at the root, or a tmpfs holding one per controller.
  const auto v1_inside = [&root] {
    for (const char* hierarchy : {"systemd", "memory", "cpu", "pids"}) {
      if (FileSystemType(root / hierarchy) == CGROUP_SUPER_MAGIC) {
        return true;
      }
    }
    return false;
  };
  if (type == CGROUP_SUPER_MAGIC || (type == TMPFS_MAGIC && v1_inside())) {
    return {"cgroup-v1",
            root.string() +
                " is a cgroup v1 hierarchy (boot with "
                "systemd.unified_cgroup_hierarchy=1 for cgroup v2)" +
                kFix};
  }
  return {"none", "no cgroup2 mount at " + root.string() + kFix};
}

std::string JobTag(JobId job, const fs::path& job_dir) {
  // FNV-1a (32 bits): the same in every build, unlike std::hash.
  fs::path dir = job_dir.lexically_normal();
  if (dir.filename().empty()) {
    dir = dir.parent_path();  // "jobs/1/" names the folder "jobs/1"
  }
  std::uint32_t hash = 2166136261U;
  for (const char c : dir.parent_path().string()) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 16777619U;
  }
  char agent[9];
  std::snprintf(agent, sizeof agent, "%08x", hash);
  return std::string(agent) + "-job-" + std::to_string(job.value());
}

fs::path JobCgroup::PathFor(JobId job, const fs::path& job_dir, const fs::path& root) {
  return root / "gpufleet" / JobTag(job, job_dir);
}

Result<JobCgroup> JobCgroup::Create(JobId job, const fs::path& job_dir, const fs::path& root) {
  if (!Available(root)) {
    return Unavailable(root.string() + " is not a writable cgroup2 mount");
  }
  fs::path dir = PathFor(job, job_dir, root);
  EnableControllers(root);
  GF_TRY(MakeDir(dir.parent_path()));
  EnableControllers(dir.parent_path());
  GF_TRY(MakeDir(dir));
  return JobCgroup(dir);
}

Result<int> JobCgroup::OpenProcs() const {
  int fd = ::open((dir_ / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return IoError("cannot open " + (dir_ / "cgroup.procs").string() + ": " + ErrnoText(err));
  }
  return fd;
}

std::vector<pid_t> JobCgroup::Pids() const {
  std::vector<pid_t> pids;
  Result<std::string> text = ReadWholeFile(dir_ / "cgroup.procs");
  if (!text.ok()) {
    return pids;
  }
  std::istringstream in(*text);
  pid_t pid = 0;
  while (in >> pid) {
    pids.push_back(pid);
  }
  return pids;
}

void JobCgroup::Signal(int sig) const {
  if (sig == SIGKILL && WriteControl(dir_ / "cgroup.kill", "1")) {
    return;
  }
  for (pid_t pid : Pids()) {
    ::kill(pid, sig);
  }
}

Status JobCgroup::Remove() const {
  if (::rmdir(dir_.c_str()) != 0 && errno != ENOENT) {
    int err = errno;
    return IoError("cannot remove cgroup " + dir_.string() + ": " + ErrnoText(err));
  }
  return OkStatus();
}

}  // namespace gf::exec
