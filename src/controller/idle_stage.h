// IdleStage: the idle reaper's side in the controller (issue #8), a component of its own. Each
// turn the running jobs whose idle rule applies are handed to the IdleReaper (idle_reaper.h),
// which it owns, when it is due, and its verdicts are applied: events, the job's reason, the
// owner's notification, and the stop through the job book (with the checkpoint signal to be
// requeued, or to cancel) or, for a Kubernetes pod where an admin opted in, through the API
// server (IdleStageParts::stop_pod). State thread only.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "controller/idle_reaper.h"
#include "controller/node_registry.h"
#include "controller/turn_outbox.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "monitor/telemetry.h"

#include "kube/kube_pod_stop.h"

namespace gf {

// The controller's parts the stage works with; each must outlive it.
struct IdleStageParts {
  JobBook& jobs;
  const NodeRegistry& nodes;
  const Telemetry& telemetry;  // how long each job's GPUs have been idle
  TurnOutbox& out;
  const Clock& clock;
  // Kubernetes mode: carries out `stop`, the stop of the pod `job` is (its rule's pod action),
  // with the cause as its reason (KubeDesk::StopIdlePod). Unset elsewhere.
  std::function<void(Job& job, const KubePodStop& stop, const std::string& cause)> stop_pod{};
};

class IdleStage {
 public:
  // `kubernetes`: pods are reaped only where their rule's action stops pods (IdleReaper).
  IdleStage(const PolicyConfig& policy, IdleStageParts parts, bool kubernetes = false);

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
