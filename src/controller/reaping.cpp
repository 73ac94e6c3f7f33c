// The idle reaper (issue #8): GPUs that a job holds but does not use go back to the queue.
//
// Once a second (kReapCheckInterval, on the controller's clock) each RUNNING job whose rule
// applies (IdleReapingFor: its class's and team's idle_* keys; not --no-reap) is judged on
// Telemetry::IdleSince, which says since when every GPU of the job has been idle (no process,
// or under the rule's utilisation with no memory change) and is nullopt while one is active
// or not yet sampled. Idle for `after`: a warning (event, the job's reason, a notification);
// used again before `grace` ends: the warning is withdrawn (event); still idle when it ends:
// the job is requeued at its place with its checkpoint signal (action requeue) or cancelled
// (action cancel), with the cause recorded and shown to its owner. The warnings live in
// memory: after a controller restart a still idle job is warned again, never reaped without
// a warning of the full grace.
#include "controller/controller.h"
#include "core/duration.h"
#include "scheduler/idle_policy.h"

namespace gf {
namespace {

// How often the running jobs are judged: GPU samples arrive about once a second, and a
// threshold is minutes, so judging on every loop turn would only cost time on a busy turn.
constexpr Millis kReapCheckInterval{1000};

std::chrono::seconds WholeSeconds(Millis d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d);
}

std::string JobLabel(const Job& job) {
  return "job " + std::to_string(job.id.value()) + " (" + job.spec.name + ")";
}

// "GPU 0" or "GPUs 0,1": the job's GPUs by their index on its node.
std::string GpuList(const Job& job, const Node& node) {
  std::string indexes;
  for (const GpuUuid& uuid : job.allocation->gpus) {
    std::string index = uuid.value();  // a GPU the node no longer lists: its UUID
    for (const Gpu& gpu : node.gpus) {
      if (gpu.uuid == uuid) {
        index = std::to_string(gpu.index);
      }
    }
    indexes += (indexes.empty() ? "" : ",") + index;
  }
  return (job.allocation->gpus.size() == 1 ? "GPU " : "GPUs ") + indexes;
}

std::string ActionText(const Job& job, IdleAction action) {
  if (action == IdleAction::kCancel) {
    return "cancelled";
  }
  return job.spec.requeue ? "requeued" : "cancelled (--no-requeue)";
}

}  // namespace

void Controller::ReapIdleJobs() {
  const Time now = clock_.Now();
  std::erase_if(idle_warnings_, [this](const auto& entry) {
    const auto job = active_.find(entry.first);
    return job == active_.end() || job->second.state != JobState::kRunning ||
           terminating_.contains(entry.first);
  });
  const bool due = next_reap_at_ && now >= *next_reap_at_;
  if (!AnyIdleReaping(options_.policy) ||
      (reap_checked_at_ && now - *reap_checked_at_ < kReapCheckInterval && !due)) {
    return;
  }
  reap_checked_at_ = now;
  next_reap_at_.reset();
  // A copy: reaping with action cancel may end a job (and change holding_) at once.
  for (const JobId id : std::vector<JobId>(holding_.begin(), holding_.end())) {
    Job& job = active_.at(id);
    if (job.state != JobState::kRunning || terminating_.contains(id)) {
      continue;
    }
    if (const std::optional<IdleReaping> rule = IdleReapingFor(options_.policy, job.spec)) {
      JudgeIdle(job, *rule, now);
    }
  }
}

void Controller::JudgeIdle(Job& job, const IdleReaping& rule, Time now) {
  const std::optional<Time> since = telemetry_->IdleSince(job.id);
  if (auto warned = idle_warnings_.find(job.id); warned != idle_warnings_.end()) {
    // A different start means the GPUs were active in between, even if idle again now.
    if (since && *since == warned->second.idle_since) {
      if (now >= warned->second.deadline) {
        ReapIdle(job, rule, *since, now);
      } else {
        NoteReapAt(warned->second.deadline);
      }
      return;
    }
    ClearIdleWarning(job, warned->second);
    idle_warnings_.erase(warned);
  }
  if (!since) {
    return;  // in use, or not judged yet
  }
  if (now < *since + rule.after) {
    NoteReapAt(*since + rule.after);
    return;
  }
  WarnIdle(job, rule, *since, now);
  if (rule.grace.count() == 0) {
    ReapIdle(job, rule, *since, now);
  }
}

std::string Controller::IdleText(const Job& job,
                                 const IdleReaping& rule,
                                 Time since,
                                 Time now) const {
  const NodeEntry* node = nodes_.Find(job.allocation->node);
  const std::string gpus = node == nullptr ? "its GPUs" : GpuList(job, node->node);
  return gpus + " on " + job.allocation->node.value() + " idle for " +
         FormatDuration(WholeSeconds(now - since)) + " (no process, or under " +
         std::to_string(rule.util_below_pct) + " % utilisation with no memory change; " +
         "the threshold is " + FormatDuration(rule.after) + ")";
}

void Controller::WarnIdle(Job& job, const IdleReaping& rule, Time since, Time now) {
  const std::string text = IdleText(job, rule, since, now);
  const std::string action = ActionText(job, rule.action);
  const std::string message =
      text + "; " + action + " in " + FormatDuration(rule.grace) + " unless they are used";
  idle_warnings_[job.id] =
      IdleWarning{.idle_since = since, .deadline = now + rule.grace, .reason = job.reason};
  NoteReapAt(now + rule.grace);
  Record(job.id, "idle_warning", "reaper", message);
  // What `gpufleet show` and `queue` tell its owner. In memory only, like a pending reason: the
  // warning itself is not kept across a restart (the event log keeps it for good).
  job.reason = "idle warning: " + message;
  NotifyJob(job,
            NotifyKind::kIdleWarning,
            JobLabel(job) + " is idle: " + action + " in " + FormatDuration(rule.grace) +
                " unless its GPUs are used",
            message);
}

void Controller::ClearIdleWarning(Job& job, const IdleWarning& warning) {
  Record(
      job.id, "idle_cleared", "reaper", "its GPUs are in use again: the idle warning is withdrawn");
  job.reason = warning.reason;
}

void Controller::ReapIdle(Job& job, const IdleReaping& rule, Time since, Time now) {
  idle_warnings_.erase(job.id);
  // Requeue says "requeued after idle reaping: <cause>"; a cancel's reason is the cause alone.
  const std::string cause = IdleText(job, rule, since, now) + ", past the " +
                            FormatDuration(rule.grace) + " grace after the warning";
  if (rule.action == IdleAction::kCancel) {
    job.reason = "idle reaping: " + cause;  // what its owner sees while it stops, and after
    Record(job.id, "idle_reap", "reaper", job.reason + ": cancelling the job (idle_action cancel)");
    RequestKill(job, JobState::kCancelled, job.reason, kSigTerm);
    return;
  }
  job.reason = "idle reaping: " + cause;
  Record(job.id,
         "idle_reap",
         "reaper",
         job.reason + ": sending SIG" + CheckpointSignalName(job.spec.checkpoint_signal) + ", " +
             AfterStopText(job, JobState::kCancelled));
  StopToRequeue(job, JobState::kPreempted, "idle reaping", cause, job.spec.checkpoint_signal);
  NotifyJob(job,
            NotifyKind::kPreempted,
            JobLabel(job) + " was " + ActionText(job, rule.action) + ": its GPUs stayed idle",
            job.reason);
}

void Controller::NoteReapAt(Time at) {
  if (!next_reap_at_ || at < *next_reap_at_) {
    next_reap_at_ = at;
  }
}

}  // namespace gf
