#include "executor/shim_watch.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "executor/process_tree.h"

namespace gf::exec {
namespace {

// The epoll tag of the inotify fd; pidfds are tagged with their (positive) job id.
constexpr std::uint64_t kInotifyTag = 0;

int PidfdOpen(pid_t pid) {
  // Through syscall(2): glibc's wrapper needs 2.36 headers and the kernel call is all we use.
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

bool AddToEpoll(int epoll_fd, int fd, std::uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  return ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

}  // namespace

ShimWatcher::ShimWatcher() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    return;
  }
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ >= 0 && !AddToEpoll(epoll_fd_, inotify_fd_, kInotifyTag)) {
    ::close(inotify_fd_);
    inotify_fd_ = -1;
  }
}

ShimWatcher::~ShimWatcher() {
  for (const auto& [job, fd] : pidfds_) {
    ::close(fd);
  }
  for (int fd : {inotify_fd_, epoll_fd_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

bool ShimWatcher::WatchShim(JobId job, const PidRecord& shim) {
  if (epoll_fd_ < 0 || shim.pid <= 0 || job.value() <= 0) {
    return false;
  }
  if (auto it = pidfds_.find(job); it != pidfds_.end()) {
    ::close(it->second);
    pidfds_.erase(it);
  }
  int fd = PidfdOpen(static_cast<pid_t>(shim.pid));
  if (fd < 0) {
    return false;  // ESRCH: gone already; ENOSYS: a kernel older than 5.3
  }
  // The pidfd names whatever process had the pid when it was opened: make sure it is ours. A
  // process that vanished in between is fine to keep: its pidfd is readable at once.
  std::optional<ProcStat> now = ReadProcStat(static_cast<pid_t>(shim.pid));
  if ((now && now->start_time != shim.start_time) ||
      !AddToEpoll(epoll_fd_, fd, static_cast<std::uint64_t>(job.value()))) {
    ::close(fd);
    return false;
  }
  pidfds_[job] = fd;
  return true;
}

bool ShimWatcher::WatchFolder(JobId job, const std::filesystem::path& dir) {
  if (inotify_fd_ < 0) {
    return false;
  }
  UnwatchFolder(job);
  int wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), IN_MOVED_TO | IN_ONLYDIR);
  if (wd < 0) {
    return false;  // ENOSPC: fs.inotify.max_user_watches reached
  }
  folder_watches_[job] = wd;
  jobs_by_watch_[wd] = job;
  return true;
}

void ShimWatcher::UnwatchFolder(JobId job) {
  auto it = folder_watches_.find(job);
  if (it == folder_watches_.end()) {
    return;
  }
  // EINVAL when the folder is gone (the kernel dropped the watch): nothing left to undo.
  ::inotify_rm_watch(inotify_fd_, it->second);
  jobs_by_watch_.erase(it->second);
  folder_watches_.erase(it);
}

void ShimWatcher::Forget(JobId job) {
  UnwatchFolder(job);
  if (auto it = pidfds_.find(job); it != pidfds_.end()) {
    ::close(it->second);  // closing also removes it from the epoll set
    pidfds_.erase(it);
  }
}

std::vector<JobId> ShimWatcher::Drain() {
  std::vector<JobId> jobs;
  if (epoll_fd_ < 0) {
    return jobs;
  }
  std::array<epoll_event, 64> events{};
  int n = 0;
  do {
    n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 0);
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[static_cast<std::size_t>(i)].data.u64;
      if (tag == kInotifyTag) {
        DrainFolderEvents(&jobs);
        continue;
      }
      // A pidfd stays readable once its process has exited: drop it, or every wait would
      // return at once from now on.
      const JobId job(static_cast<std::int64_t>(tag));
      if (auto it = pidfds_.find(job); it != pidfds_.end()) {
        ::close(it->second);
        pidfds_.erase(it);
      }
      jobs.push_back(job);
    }
  } while (n == static_cast<int>(events.size()));
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  return jobs;
}

void ShimWatcher::DrainFolderEvents(std::vector<JobId>* jobs) {
  alignas(inotify_event) std::array<char, 16384> buffer{};
  while (true) {
    ssize_t n = ::read(inotify_fd_, buffer.data(), buffer.size());
    if (n <= 0) {
      return;  // EAGAIN: all read
    }
    for (ssize_t off = 0; off < n;) {
      inotify_event ev{};
      std::memcpy(&ev, buffer.data() + off, sizeof ev);
      off += static_cast<ssize_t>(sizeof ev + ev.len);
      if ((ev.mask & IN_Q_OVERFLOW) != 0) {
        for (const auto& [job, wd] : folder_watches_) {
          jobs->push_back(job);
        }
      } else if (auto it = jobs_by_watch_.find(ev.wd); it != jobs_by_watch_.end()) {
        jobs->push_back(it->second);
      }
    }
  }
}

}  // namespace gf::exec
