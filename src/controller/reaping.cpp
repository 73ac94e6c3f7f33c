// The idle reaper's side in the controller (issue #8): the running jobs whose idle rule applies
// are handed to the IdleReaper (idle_reaper.h) when it is due, and its verdicts are applied
// here: events, the job's reason, notifications, and the stop through the controller's own
// paths (StopToRequeue with the checkpoint signal, or RequestKill to cancel).
#include "controller/controller.h"
#include "scheduler/idle_policy.h"

namespace gf {

void Controller::ReapIdleJobs() {
  const Time now = clock_.Now();
  reaper_.Prune([this](JobId id) {
    const auto job = jobs_.Active().find(id);
    return job != jobs_.Active().end() && job->second.state == JobState::kRunning &&
           !jobs_.Stops().Stopping(id);
  });
  if (!AnyIdleReaping(options_.policy) || !reaper_.Due(now)) {
    return;
  }
  std::vector<IdleCandidate> candidates;
  for (const JobId id : jobs_.Holding()) {
    const Job& job = jobs_.At(id);
    if (job.state != JobState::kRunning || jobs_.Stops().Stopping(id)) {
      continue;
    }
    if (const std::optional<IdleReaping> rule = IdleReapingFor(options_.policy, job.spec)) {
      const NodeEntry* node = nodes_.Find(job.allocation->node);
      candidates.push_back(IdleCandidate{.job = &job,
                                         .node = node == nullptr ? nullptr : &node->node,
                                         .rule = *rule,
                                         .idle_since = telemetry_->IdleSince(id)});
    }
  }
  // Jobs stay in jobs_.Active() until the turn's end (EraseFinished), even one a cancel ends at
  // once.
  for (const IdleVerdict& verdict : reaper_.Judge(candidates, now)) {
    ApplyIdleVerdict(jobs_.At(verdict.job), verdict);
  }
}

void Controller::ApplyIdleVerdict(Job& job, const IdleVerdict& verdict) {
  switch (verdict.step) {
    case IdleStep::kWarn:
      jobs_.Record(job.id, "idle_warning", "reaper", verdict.event);
      job.reason = verdict.reason;
      break;
    case IdleStep::kWithdraw:
      jobs_.Record(job.id, "idle_cleared", "reaper", verdict.event);
      job.reason = verdict.reason;
      break;
    case IdleStep::kReap:
      job.reason = verdict.reason;
      if (verdict.action == IdleAction::kCancel) {
        jobs_.Record(job.id,
                     "idle_reap",
                     "reaper",
                     job.reason + ": cancelling the job (idle_action cancel)");
        jobs_.RequestKill(job, JobState::kCancelled, job.reason, kSigTerm);
        break;
      }
      jobs_.Record(job.id,
                   "idle_reap",
                   "reaper",
                   job.reason + ": sending SIG" + CheckpointSignalName(job.spec.checkpoint_signal) +
                       ", " + jobs_.AfterStopText(job, JobState::kCancelled));
      jobs_.StopToRequeue(
          job, JobState::kPreempted, "idle reaping", verdict.cause, job.spec.checkpoint_signal);
      break;
  }
  if (!verdict.notify_subject.empty()) {
    out_.Notify(JobNotification(
        job, verdict.notify_kind, verdict.notify_subject, verdict.notify_message, clock_.Now()));
  }
}

}  // namespace gf
