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
    const auto job = active_.find(id);
    return job != active_.end() && job->second.state == JobState::kRunning && !stops_.Stopping(id);
  });
  if (!AnyIdleReaping(options_.policy) || !reaper_.Due(now)) {
    return;
  }
  std::vector<IdleCandidate> candidates;
  for (const JobId id : holding_) {
    const Job& job = active_.at(id);
    if (job.state != JobState::kRunning || stops_.Stopping(id)) {
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
  // Jobs stay in active_ until the turn's end (EraseFinished), even one a cancel ends at once.
  for (const IdleVerdict& verdict : reaper_.Judge(candidates, now)) {
    ApplyIdleVerdict(active_.at(verdict.job), verdict);
  }
}

void Controller::ApplyIdleVerdict(Job& job, const IdleVerdict& verdict) {
  switch (verdict.step) {
    case IdleStep::kWarn:
      Record(job.id, "idle_warning", "reaper", verdict.event);
      job.reason = verdict.reason;
      break;
    case IdleStep::kWithdraw:
      Record(job.id, "idle_cleared", "reaper", verdict.event);
      job.reason = verdict.reason;
      break;
    case IdleStep::kReap:
      job.reason = verdict.reason;
      if (verdict.action == IdleAction::kCancel) {
        Record(job.id,
               "idle_reap",
               "reaper",
               job.reason + ": cancelling the job (idle_action cancel)");
        RequestKill(job, JobState::kCancelled, job.reason, kSigTerm);
        break;
      }
      Record(job.id,
             "idle_reap",
             "reaper",
             job.reason + ": sending SIG" + CheckpointSignalName(job.spec.checkpoint_signal) +
                 ", " + AfterStopText(job, JobState::kCancelled));
      StopToRequeue(
          job, JobState::kPreempted, "idle reaping", verdict.cause, job.spec.checkpoint_signal);
      break;
  }
  if (!verdict.notify_subject.empty()) {
    NotifyJob(job, verdict.notify_kind, verdict.notify_subject, verdict.notify_message);
  }
}

}  // namespace gf
