// SchedulingStage: the controller's scheduling step, a component of its own (decision 0007).
// It owns the scheduler kept between passes (scheduler/incremental.h) and the rule for which
// pass a turn runs (lifecycle/pass_planner.h, the one `gpufleet sim` replays with), builds what
// a pass is shown — the nodes with their free GPUs and loads, the running jobs, fair-share usage,
// the pending jobs that admission lets through (lifecycle/admission.h HeldBack) — and applies
// the pass's decisions to the job book: starts, preemptions, pending reasons and estimated
// starts. What follows a decision outside the book (telemetry, launching through an agent, the
// owner's notification) is the controller's, from the PassOutcome.
//
// It reads the controller's other components and never changes them, except the usage book's
// pass bookkeeping. State thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "controller/dependency_book.h"
#include "controller/node_registry.h"
#include "controller/usage_book.h"
#include "lifecycle/job_book.h"
#include "lifecycle/pass_planner.h"
#include "monitor/telemetry.h"
#include "scheduler/incremental.h"
#include "scheduler/scheduler.h"
#include "service/service.h"

namespace gf {

// What a pass decided that the controller acts on beyond the job book.
struct PassOutcome {
  std::vector<JobId> started;              // now STARTING, in the order started: to launch
  std::vector<PreemptDecision> preempted;  // victims now being stopped: to tell their owners
};

// What a pass reads, owned by the controller; each must outlive the stage.
struct SchedulingInputs {
  const NodeRegistry& nodes;
  const Telemetry& telemetry;  // each GPU's latest load, for spreading
  UsageBook& usage;
  const DependencyBook& dependencies;
  // The jobs holding GPUs as the usage book reads them (with energy and GPU models).
  std::function<std::vector<RunningSpan>()> running_spans;
  // Where the passes are counted (gpufleet_scheduler_passes_total).
  PassStats& full_passes;
  PassStats& incremental_passes;
};

class SchedulingStage {
 public:
  SchedulingStage(const PolicyConfig& policy, const PassRules& rules, SchedulingInputs inputs);

  // ---- what the next pass must look at
  // A job joined the queue, or left it or gave up its GPUs: decided by the next incremental
  // pass when nothing else changed. `waits`: it waits for another job (a dependency), so the
  // full pass sorts out what admission says.
  void NoteArrival(const Job& job, bool waits);
  void NoteEnd(const Job& job);
  // Something the kept scheduler is not told of changed (a node, a requeue, a dependency met,
  // an approval): the next pass is a full one.
  void NeedFull() { passes_.NeedFull(); }
  // A pass is owed at `at` on unchanged state (a running job becomes preemptible).
  void ArmAt(Time at) { passes_.ArmAt(at); }
  // When the next pass is owed, if no event comes first.
  std::optional<Time> WakeAt() const { return passes_.WakeAt(); }

  // The turn's pass, if one is owed at `now`, its decisions applied to `jobs`.
  PassOutcome Run(JobBook& jobs, Time now);

  // What the next pass would decide for `id` (scheduler/explain.h), or why it is not queued:
  // kFailedPrecondition naming the admission stage's reason, or the state it is between.
  Result<Explanation> Explain(const JobBook& jobs, const Job& job, Time now) const;

  // The queued jobs' ids in the order the last pass considered them (the scheduler's order,
  // whose 1-based positions `explain` shows), as of that pass; null before the first. Shared
  // with the views published until the next pass, so a turn without a pass copies nothing.
  std::shared_ptr<const std::vector<JobId>> QueueOrder() const { return order_; }

 private:
  void FullPass(JobBook& jobs, Time now, PassOutcome& outcome);
  void IncrementalPass(JobBook& jobs, Time now, PassOutcome& outcome);
  void Apply(JobBook& jobs, Decisions decisions, PassOutcome& outcome);
  Queue PendingQueue(const JobBook& jobs, const std::map<JobId, PendingReason>& held) const;
  std::vector<RunningJob> RunningJobs(const JobBook& jobs, Time now) const;
  // What a pass sees: the nodes with their free GPUs and loads, the running jobs, and the usage
  // that `spans` (the jobs holding GPUs, as the usage book reads them) adds to the ledgers.
  ClusterSnapshot Snapshot(const JobBook& jobs,
                           const std::vector<RunningSpan>& spans,
                           Time now) const;
  // Each GPU's latest utilisation and memory use, so that placement spreads work over equally
  // good GPUs; a GPU with no sample yet is left out (counted idle).
  std::map<GpuUuid, GpuLoad> GpuLoads(const Node& node) const;
  // The next moment a pass may decide something new on unchanged state (lifecycle/wakeups.h).
  std::optional<Time> NextPassAt(const JobBook& jobs, Time now) const;

  const PolicyConfig& policy_;
  SchedulingInputs in_;
  // What the last pass decided on plus the events fed since; passes_ plans the next pass:
  // anything scheduler_ is not told of asks it for a full one (NeedFull).
  IncrementalScheduler scheduler_;
  PassPlanner passes_;
  std::shared_ptr<const std::vector<JobId>> order_;  // QueueOrder()
};

}  // namespace gf
