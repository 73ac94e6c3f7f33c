// IdleStage (idle_stage.h): the idle reaper's verdicts applied to the running jobs.
#include "controller/idle_stage.h"

#include "controller/notification_router.h"
#include "scheduler/idle_policy.h"

namespace gf {

IdleStage::IdleStage(const PolicyConfig& policy, IdleStageParts parts, bool kubernetes)
    : policy_(policy), p_(std::move(parts)), reaper_(kubernetes) {}

void IdleStage::Run() {
  const Time now = p_.clock.Now();
  reaper_.Prune([this](JobId id) {
    const auto job = p_.jobs.Active().find(id);
    return job != p_.jobs.Active().end() && job->second.state == JobState::kRunning &&
           !p_.jobs.Stops().Stopping(id);
  });
  if (!AnyIdleReaping(policy_) || !reaper_.Due(now)) {
    return;
  }
  std::vector<IdleCandidate> candidates;
  for (const JobId id : p_.jobs.Holding()) {
    const Job& job = p_.jobs.At(id);
    if (job.state != JobState::kRunning || p_.jobs.Stops().Stopping(id)) {
      continue;
    }
    if (const std::optional<IdleReaping> rule = IdleReapingFor(policy_, job.spec)) {
      const NodeEntry* node = p_.nodes.Find(job.allocation->node);
      candidates.push_back(IdleCandidate{.job = &job,
                                         .node = node == nullptr ? nullptr : &node->node,
                                         .rule = *rule,
                                         .idle_since = p_.telemetry.IdleSince(id)});
    }
  }
  // Jobs stay in the book until the turn's end (JobBook::EraseEnded), even one a cancel ends at
  // once.
  for (const IdleVerdict& verdict : reaper_.Judge(candidates, now)) {
    Apply(p_.jobs.At(verdict.job), verdict);
  }
}

void IdleStage::Apply(Job& job, const IdleVerdict& verdict) {
  switch (verdict.step) {
    case IdleStep::kWarn:
      p_.jobs.Record(job.id, "idle_warning", "reaper", verdict.event);
      job.reason = verdict.reason;
      break;
    case IdleStep::kWithdraw:
      p_.jobs.Record(job.id, "idle_cleared", "reaper", verdict.event);
      job.reason = verdict.reason;
      break;
    case IdleStep::kReap:
      job.reason = verdict.reason;
      if (IsPodAction(verdict.action)) {
        // A job in Kubernetes mode is a pod (kube_desk.h), so its stop is always known.
        const std::optional<KubePodStop> stop =
            KubePodStopOfJob(job.spec.env, verdict.action == IdleAction::kScaleOwner);
        if (!stop) {
          break;
        }
        p_.jobs.Record(job.id,
                       "idle_reap",
                       "reaper",
                       job.reason + ": " + KubeStopToDo(*stop) + " (idle_action " +
                           std::string(ToString(verdict.action)) + ")");
        if (p_.stop_pod) {
          p_.stop_pod(job, *stop, job.reason);
        }
        break;
      }
      if (verdict.action == IdleAction::kCancel) {
        p_.jobs.Record(job.id,
                       "idle_reap",
                       "reaper",
                       job.reason + ": cancelling the job (idle_action cancel)");
        p_.jobs.RequestKill(job, JobState::kCancelled, job.reason, kSigTerm);
        break;
      }
      p_.jobs.Record(job.id,
                     "idle_reap",
                     "reaper",
                     job.reason + ": sending SIG" +
                         CheckpointSignalName(job.spec.checkpoint_signal) + ", " +
                         p_.jobs.AfterStopText(job, JobState::kCancelled));
      p_.jobs.StopToRequeue(
          job, JobState::kPreempted, "idle reaping", verdict.cause, job.spec.checkpoint_signal);
      break;
  }
  if (!verdict.notify_subject.empty()) {
    p_.out.Notify(JobNotification(
        job, verdict.notify_kind, verdict.notify_subject, verdict.notify_message, p_.clock.Now()));
  }
}

}  // namespace gf
