// IdleStage: the idle reaper's side in the controller (issue #8), a component of its own. Each
// turn the running jobs whose idle rule applies are handed to the IdleReaper (idle_reaper.h),
// which it owns, when it is due, and its verdicts are applied: events, the job's reason, the
// owner's notification, and the stop through the job book (with the checkpoint signal to be
// requeued, or to cancel). State thread only.
#pragma once

#include <optional>

#include "controller/idle_reaper.h"
#include "controller/node_registry.h"
#include "controller/turn_outbox.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "monitor/telemetry.h"

namespace gf {

// The controller's parts the stage works with; each must outlive it.
struct IdleStageParts {
  JobBook& jobs;
  const NodeRegistry& nodes;
  const Telemetry& telemetry;  // how long each job's GPUs have been idle
  TurnOutbox& out;
  const Clock& clock;
};

class IdleStage {
 public:
  // `reaps` false: the reaper only warns (IdleReaper; Kubernetes mode).
  IdleStage(const PolicyConfig& policy, IdleStageParts parts, bool reaps = true);

  // Judges the running jobs when the reaper is due, and applies its verdicts.
  void Run();
  // The next deadline the reaper waits for (a grace's end, a job reaching its threshold).
  std::optional<Time> NextAt() const { return reaper_.NextAt(); }

 private:
  void Apply(Job& job, const IdleVerdict& verdict);

  const PolicyConfig& policy_;
  IdleStageParts p_;
  IdleReaper reaper_;  // its warnings under way and next deadline
};

}  // namespace gf
