// SlurmLink: the companion server's line to Slurm (issue #23), on a thread of its own, because
// every Slurm command waits for slurmctld (tens of milliseconds, seconds when it is busy) and the
// controller's state thread must not. Every poll_interval it reads Slurm's jobs and hands the
// whole reading to `on_jobs` (which posts it to the state thread: Controller::OnSlurmJobs); the
// actions the controller asks for (cancel, requeue, drain, resume) are queued and run in order,
// before the next reading, which then shows their effect. A failed command is logged with
// Slurm's own message (and a failing reading once until it reads again); nothing is retried
// blindly: the next reading shows what Slurm did. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"

#include "slurm/slurm_control.h"

namespace gf {

class SlurmLink {
 public:
  SlurmLink(std::unique_ptr<SlurmControl> control, Millis poll_interval);
  ~SlurmLink();
  SlurmLink(const SlurmLink&) = delete;
  SlurmLink& operator=(const SlurmLink&) = delete;

  // Reads at once, then every poll_interval, until Stop.
  void Start(std::function<void(std::vector<SlurmJob>)> on_jobs);
  void Stop();

  void Cancel(std::int64_t job, const std::string& cause);
  void Requeue(std::int64_t job, const std::string& cause);
  void DrainNode(const std::string& node, const std::string& reason);
  void ResumeNode(const std::string& node);

 private:
  void Enqueue(std::string what, std::function<Status()> action);
  void Loop();

  std::unique_ptr<SlurmControl> control_;
  Millis poll_interval_;
  std::function<void(std::vector<SlurmJob>)> on_jobs_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::pair<std::string, std::function<Status()>>> actions_;  // GUARDED_BY(mu_)
  bool stop_ = false;                                                    // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace gf
