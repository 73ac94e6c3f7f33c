// The idle reaper's judgments and the texts of its verdicts (idle_reaper.h).
#include "controller/idle_reaper.h"

#include <algorithm>

#include "core/duration.h"

#include "kube/kube_pod_stop.h"

namespace gf {
namespace {

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
  switch (action) {
    case IdleAction::kCancel:
      return "cancelled";
    case IdleAction::kRequeue:
      return job.spec.requeue ? "requeued" : "cancelled (--no-requeue)";
    case IdleAction::kDeletePod:
    case IdleAction::kScaleOwner:
      break;
  }
  const std::optional<KubePodStop> stop =
      KubePodStopOfJob(job.spec.env, action == IdleAction::kScaleOwner);
  return stop ? KubeStopDone(*stop) : "stopped";
}

// "GPUs 0,1 on gpu01 idle for 31m (...)": the idleness of the job, for events and causes.
std::string IdleText(const IdleCandidate& c, Time since, Time now) {
  const Job& job = *c.job;
  const std::string gpus = c.node == nullptr ? "its GPUs" : GpuList(job, *c.node);
  return gpus + " on " + job.allocation->node.value() + " idle for " +
         FormatDuration(WholeSeconds(now - since)) + " (no process, or under " +
         std::to_string(c.rule.util_below_pct) + " % utilisation with no memory change; " +
         "the threshold is " + FormatDuration(c.rule.after) + ")";
}

}  // namespace

void IdleReaper::Prune(const std::function<bool(JobId)>& judged) {
  std::erase_if(warnings_, [&](const auto& entry) { return !judged(entry.first); });
}

bool IdleReaper::Due(Time now) const {
  const bool deadline = next_at_ && now >= *next_at_;
  return !checked_at_ || now - *checked_at_ >= kCheckInterval || deadline;
}

std::vector<IdleVerdict> IdleReaper::Judge(const std::vector<IdleCandidate>& jobs, Time now) {
  checked_at_ = now;
  next_at_.reset();
  std::vector<IdleVerdict> verdicts;
  for (const IdleCandidate& c : jobs) {
    JudgeOne(c, now, verdicts);
  }
  return verdicts;
}

void IdleReaper::JudgeOne(const IdleCandidate& c, Time now, std::vector<IdleVerdict>& out) {
  const std::optional<Time>& since = c.idle_since;
  const JobId id = c.job->id;
  std::string reason = c.job->reason;  // what a new warning restores when it is withdrawn
  if (auto warned = warnings_.find(id); warned != warnings_.end()) {
    // A different start means the GPUs were active in between, even if idle again now.
    if (since && *since == warned->second.idle_since) {
      if (!Reaps(c)) {
        return;  // warned once for this idle spell: nothing more is done
      }
      if (now >= warned->second.deadline) {
        out.push_back(Reap(c, *since, now));
      } else {
        NoteAt(warned->second.deadline);
      }
      return;
    }
    reason = warned->second.reason;
    out.push_back(IdleVerdict{.job = id,
                              .step = IdleStep::kWithdraw,
                              .event = "its GPUs are in use again: the idle warning is withdrawn",
                              .reason = reason});
    warnings_.erase(warned);
  }
  if (!since) {
    return;  // in use, or not judged yet
  }
  if (now < *since + c.rule.after) {
    NoteAt(*since + c.rule.after);
    return;
  }
  out.push_back(Warn(c, *since, now));
  warnings_[id] = Warning{.idle_since = *since, .deadline = now + c.rule.grace, .reason = reason};
  if (c.rule.grace.count() == 0 && Reaps(c)) {
    out.push_back(Reap(c, *since, now));
  }
}

IdleVerdict IdleReaper::Warn(const IdleCandidate& c, Time since, Time now) {
  const std::string action = ActionText(*c.job, c.rule.action);
  const bool reaps = Reaps(c);
  const std::string message =
      reaps ? IdleText(c, since, now) + "; " + action + " in " + FormatDuration(c.rule.grace) +
                  " unless they are used"
            : IdleText(c, since, now) +
                  "; reported only: gpufleet stops a pod only where idle_action is "
                  "\"delete_pod\" or \"scale_owner\"";
  if (reaps) {
    NoteAt(now + c.rule.grace);
  }
  // The reason is what `gpufleet show` and `queue` tell its owner. In memory only, like a
  // pending reason: the warning itself is not kept across a restart (the event log keeps it).
  return IdleVerdict{.job = c.job->id,
                     .step = IdleStep::kWarn,
                     .action = c.rule.action,
                     .event = message,
                     .reason = "idle warning: " + message,
                     .notify_kind = NotifyKind::kIdleWarning,
                     .notify_subject = !reaps ? JobLabel(*c.job) + " is idle: its GPUs are not used"
                                              : JobLabel(*c.job) + " is idle: " + action + " in " +
                                                    FormatDuration(c.rule.grace) +
                                                    " unless its GPUs are used",
                     .notify_message = message};
}

IdleVerdict IdleReaper::Reap(const IdleCandidate& c, Time since, Time now) {
  warnings_.erase(c.job->id);
  // Requeue says "requeued after idle reaping: <cause>"; a cancel's reason is the cause alone.
  const std::string cause = IdleText(c, since, now) + ", past the " + FormatDuration(c.rule.grace) +
                            " grace after the warning";
  IdleVerdict verdict{.job = c.job->id,
                      .step = IdleStep::kReap,
                      .action = c.rule.action,
                      .reason = "idle reaping: " + cause,
                      .cause = cause};  // copied: the reason above reads it too
  if (c.rule.action == IdleAction::kRequeue) {
    // A cancel is told as the job's end (job_end); a requeue as what it is.
    verdict.notify_kind = NotifyKind::kPreempted;
    verdict.notify_subject =
        JobLabel(*c.job) + " was " + ActionText(*c.job, c.rule.action) + ": its GPUs stayed idle";
    verdict.notify_message = verdict.reason;
  }
  return verdict;
}

void IdleReaper::NoteAt(Time at) {
  if (!next_at_ || at < *next_at_) {
    next_at_ = at;
  }
}

}  // namespace gf
