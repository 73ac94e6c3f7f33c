// IdleReaper (issue #8): GPUs that a job holds but does not use go back to the queue.
//
// The reaper judges the running jobs it is handed, each with its idle rule
// (scheduler/idle_policy.h IdleReapingFor: its class's and team's idle_* keys; none for
// --no-reap) and Telemetry::IdleSince, which says since when every GPU of the job has been
// idle (no process, or under the rule's utilisation with no memory change) and is nullopt
// while one is active or not yet sampled. Idle for `after`: a warning; used again before
// `grace` ends: the warning is withdrawn; still idle when it ends: the job is reaped, requeued
// at its place with its checkpoint signal (action requeue) or cancelled (action cancel). It
// returns these verdicts as values, with the texts its owner reads; the controller applies
// them (events, the job's reason, notifications, the stop through its own kill paths).
//
// The reaper owns the warnings under way, when it last judged and its next deadline (a
// warning's grace, a job's projected threshold), which the controller's loop wakes up for.
// The warnings live in memory: after a controller restart a still idle job is warned again,
// never reaped without a warning of the full grace.
//
// Owned by the Controller; state thread only (thread-compatible). Time comes in as arguments:
// it has no clock of its own, so tests drive it on a manual one.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "model/job.h"
#include "model/node.h"
#include "model/notification.h"
#include "scheduler/idle_policy.h"

namespace gf {

// One running job as the reaper judges it: not being stopped, holding its allocation.
struct IdleCandidate {
  const Job* job = nullptr;          // RUNNING, with an allocation
  const Node* node = nullptr;        // its node, for the GPUs' indexes; null when unknown
  IdleReaping rule{};                // IdleReapingFor(policy, job->spec)
  std::optional<Time> idle_since{};  // Telemetry::IdleSince(job->id)
};

enum class IdleStep {
  kWarn,      // idle past its threshold: event `event`, reason `reason`, notify
  kWithdraw,  // used again during the grace: event `event`, reason back to `reason`
  kReap,      // still idle at the grace's end: stop the job as `action` says
};

struct IdleVerdict {
  JobId job{};
  IdleStep step = IdleStep::kWarn;
  IdleAction action = IdleAction::kRequeue;  // kReap: how the job is stopped
  // kWarn, kWithdraw: the `idle_warning` / `idle_cleared` event's message. kReap: empty; the
  // controller writes the `idle_reap` event, as it says how it stops the job.
  std::string event{};
  // The job's reason from now on: the warning, the one it had before the warning, or (kReap)
  // "idle reaping: <cause>", which its owner reads while it stops and after.
  std::string reason{};
  // kReap: why, without the "idle reaping: " prefix ("requeued after idle reaping: <cause>").
  std::string cause{};
  // The notification to raise for the job (kWarn: kIdleWarning; kReap with action requeue:
  // kPreempted); none when `notify_subject` is empty.
  NotifyKind notify_kind = NotifyKind::kIdleWarning;
  std::string notify_subject{};
  std::string notify_message{};
};

class IdleReaper {
 public:
  // `kubernetes` (Kubernetes mode): only a pod whose rule's action stops pods (delete_pod,
  // scale_owner: an admin's opt-in) is reaped; any other idle pod is warned (event, reason,
  // notification) and stays warned while idle, its grace's end reaping nothing. Elsewhere those
  // actions reap nothing (the settings are refused there: CheckPodActions).
  explicit IdleReaper(bool kubernetes = false) : kubernetes_(kubernetes) {}

  // How often the running jobs are judged: GPU samples arrive about once a second, and a
  // threshold is minutes, so judging on every loop turn would only cost time on a busy turn.
  static constexpr Millis kCheckInterval{1000};

  // Each turn, before Due: the warnings of jobs that `judged` no longer accepts (ended, no
  // longer RUNNING, being stopped) are dropped, so that a job that runs again is judged
  // afresh. Calls `judged` only for jobs under a warning.
  void Prune(const std::function<bool(JobId)>& judged);

  // Whether to judge the running jobs at `now`: a second after the last judgment, or sooner
  // when NextAt() is due. The caller skips the reaper when no rule sets a threshold
  // (AnyIdleReaping), and hands Judge the running jobs only when this is true.
  bool Due(Time now) const;

  // Judges `jobs` (in the order given, which the verdicts keep; a job may get a warning and
  // its reaping at once when its grace is 0) and records `now` as the last judgment.
  std::vector<IdleVerdict> Judge(const std::vector<IdleCandidate>& jobs, Time now);

  // The next deadline the reaper waits for (a grace's end, a job reaching its threshold),
  // for the controller's wake-up; nullopt when none.
  std::optional<Time> NextAt() const { return next_at_; }

  // Whether `job` is under a warning now.
  bool Warned(JobId job) const { return warnings_.contains(job); }

 private:
  struct Warning {
    Time idle_since;     // IdleSince when warned: a later one means it was active in between
    Time deadline;       // the end of the grace
    std::string reason;  // the job's reason before the warning, restored when it is withdrawn
  };

  void JudgeOne(const IdleCandidate& c, Time now, std::vector<IdleVerdict>& out);
  IdleVerdict Warn(const IdleCandidate& c, Time since, Time now);
  IdleVerdict Reap(const IdleCandidate& c, Time since, Time now);
  void NoteAt(Time at);
  // Whether the end of `c`'s grace stops it (see the constructor).
  bool Reaps(const IdleCandidate& c) const { return kubernetes_ == IsPodAction(c.rule.action); }

  bool kubernetes_;
  std::map<JobId, Warning> warnings_;
  std::optional<Time> next_at_;
  std::optional<Time> checked_at_;
};

}  // namespace gf
