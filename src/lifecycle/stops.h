// StopBook: the jobs being stopped and what a run's end means. A stop is decided (a cancel, a
// time limit, a preemption, an idle verdict, a failed GPU, its gang) some time before it takes
// effect (the processes exit after their first signal, or at SIGKILL when the kill grace ends);
// meanwhile the job holds its GPUs and carries its StopIntent here. When the run ends, whoever
// saw it end asks the book what that end is (RunVerdict): the controller for an agent's exit report
// or a lost node, the simulator on its virtual clock, so that both end, requeue and cancel a
// run alike. The book also keeps why a requeued job waits again, until it starts (in memory
// only: the event log keeps it for good).
//
// Plain data, no I/O and no clock; not thread-safe (the controller's state thread, or the
// simulator's loop).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/ids.h"
#include "lifecycle/stop_intent.h"
#include "model/job.h"

namespace gf {

// How a run ended, and what follows.
struct RunVerdict {
  JobState state = JobState::kCompleted;  // the state the run ends in
  std::string cause;                      // why, for its events and its owner
  // Set when the job then goes back to the queue at its place (PREEMPTED or NODE_FAIL, then
  // PENDING): what happened ("preemption", "node failure"), the cause, and the state it ends in
  // instead when it must not run twice (--no-requeue): CANCELLED after a preemption, FAILED
  // after a failure.
  struct Requeue {
    std::string after;
    std::string cause;
    JobState otherwise = JobState::kFailed;
    bool operator==(const Requeue&) const = default;
  };
  std::optional<Requeue> requeue{};
  bool operator==(const RunVerdict&) const = default;
};

class StopBook {
 public:
  // `job` is to be stopped for `intent`; a later request replaces an earlier one (a cancel of a
  // job being preempted ends it cancelled instead of requeued).
  void Request(JobId job, StopIntent intent);
  bool Stopping(JobId job) const { return intents_.contains(job); }
  // Its intent while it is being stopped; nullopt otherwise.
  std::optional<StopIntent> Find(JobId job) const;
  const std::map<JobId, StopIntent>& Intents() const { return intents_; }

  // The job's processes exited with `exit_code`; `how` is the account of it ("exited with
  // status 0", "killed by signal 9", or the stop's cause followed by ": " and that, as an agent
  // reports a kill it was given a cause for). Not being stopped: COMPLETED (0) or FAILED, with
  // `how`. Being stopped: the intent's state, its cause with `how` in brackets (its cause said
  // once), and a requeue where the intent asks for one, whatever the exit code: a job that
  // exits 0 on its checkpoint signal has saved its work and stopped, it has not finished.
  RunVerdict OnExit(JobId job, int exit_code, const std::string& how) const;
  // The job's node was lost under it (`cause`). A stop under way that ends the job ends it as
  // meant, though its kill cannot be confirmed (it is not to run again); otherwise NODE_FAIL,
  // requeued (FAILED if it must not run twice).
  RunVerdict OnLost(JobId job, const std::string& cause) const;

  // The job went back to the queue (RunVerdict::requeue): its stop is over, and until it starts
  // again it waits "requeued after AFTER (CAUSE)" (RequeueCause).
  void Requeued(JobId job, const std::string& after, const std::string& cause);
  // Why a requeued job waits again; nullptr when it is not such a job.
  const std::string* RequeueCause(JobId job) const;
  void Started(JobId job) { requeue_causes_.erase(job); }
  // The job ended: the book forgets it.
  void Forget(JobId job);

 private:
  std::map<JobId, StopIntent> intents_;
  std::map<JobId, std::string> requeue_causes_;
};

}  // namespace gf
