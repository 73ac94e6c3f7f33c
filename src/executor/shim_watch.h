// ShimWatcher: the kernel notifications the Executor waits on instead of naps and fixed polls:
//  - a pidfd per shim (pidfd_open works for processes that are not our children, Linux >= 5.3),
//    readable once the shim has exited; the shim writes exit.json before it exits, so this is
//    the moment a job's end becomes visible;
//  - an inotify watch on the folder of each job whose start is not known yet: the shim renames
//    job.pid (or exit.json, when the job could not start) into the folder, which is an
//    IN_MOVED_TO event (every file of the folder is written by rename, see job_files.h).
// All of them sit behind one epoll fd that the agent waits on together with its work queue.
//
// Watches are hints, never the truth: the job folder stays the only record (so a restarted
// agent adopts jobs from their files alone), and whoever is notified re-reads the files. A watch
// that cannot be set up (no pidfd support, inotify's per-user limits) just leaves the job
// unwatched; the Executor then checks it at every Poll, which the agent's slow fallback poll
// drives.
//
// Owned by one Executor; not thread-safe (the Executor's thread).
#pragma once

#include <filesystem>
#include <map>
#include <vector>

#include "core/ids.h"
#include "executor/job_files.h"

namespace gf::exec {

class ShimWatcher {
 public:
  ShimWatcher();
  ~ShimWatcher();
  ShimWatcher(const ShimWatcher&) = delete;
  ShimWatcher& operator=(const ShimWatcher&) = delete;

  // Readable (POLLIN) when some notification is pending; -1 when epoll is unavailable (then
  // nothing is ever watched).
  int Fd() const { return epoll_fd_; }

  // Watches the exit of the shim `shim` of `job`. False when it cannot be watched: the process
  // is gone or is not the recorded one (its pid was reused), or pidfds are not supported.
  bool WatchShim(JobId job, const PidRecord& shim);
  // Watches files being renamed into `dir`. False when it cannot be watched.
  bool WatchFolder(JobId job, const std::filesystem::path& dir);
  void UnwatchFolder(JobId job);
  // Drops every watch of the job.
  void Forget(JobId job);

  // The shim's pidfd is armed: it has not been seen exiting.
  bool ShimWatched(JobId job) const { return pidfds_.contains(job); }
  bool FolderWatched(JobId job) const { return folder_watches_.contains(job); }

  // Reads every pending notification without blocking and returns the jobs concerned, each
  // once. A shim seen exiting loses its pidfd (ShimWatched turns false). When the kernel
  // dropped inotify events (queue overflow), every job with a watched folder is returned.
  std::vector<JobId> Drain();

 private:
  void DrainFolderEvents(std::vector<JobId>* jobs);

  int epoll_fd_ = -1;
  int inotify_fd_ = -1;
  std::map<JobId, int> pidfds_;
  std::map<JobId, int> folder_watches_;  // job -> inotify watch descriptor
  std::map<int, JobId> jobs_by_watch_;
};

}  // namespace gf::exec
