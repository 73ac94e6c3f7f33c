// A scheduling pass's decisions applied to the job book, as the controller and the simulator
// both apply them (decision 0007): each preemption stops its victim to be requeued, each start
// moves its job to STARTING on its allocation. A decision the book contradicts (a victim that
// no longer holds GPUs or is being stopped, a start of a job that is not pending) can only come
// from an incremental pass on a stale copy of the state: it is skipped, and the caller runs a
// full pass.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lifecycle/job_book.h"
#include "scheduler/scheduler.h"

namespace gf {

struct AppliedDecisions {
  std::vector<PreemptDecision> preempted;  // in the pass's order
  std::vector<JobId> started;
  std::vector<JobId> stale_starts;  // not pending: not started again
  bool stale = false;               // a decision was skipped: decide again with a full pass
};

// Preemptions first (their victims' GPUs are counted as about to be free by the starts that
// follow), then starts, each with the cause `start_cause` says ("starting on n1 GPUs 0,1").
AppliedDecisions ApplyDecisions(
    JobBook& book,
    std::vector<PreemptDecision> preemptions,
    const std::vector<StartDecision>& starts,
    const std::function<std::string(const StartDecision&)>& start_cause);

// The pass's word on each job it left waiting: its reason (after the cause of a requeue, while
// it waits again), the structured reason and its estimated start. Kept in memory only: they are
// recomputed on every pass, so they are not written.
void NotePending(JobBook& book, std::vector<PendingDecision> pending);

}  // namespace gf
