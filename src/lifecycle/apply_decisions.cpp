#include "lifecycle/apply_decisions.h"

#include <utility>

namespace gf {

AppliedDecisions ApplyDecisions(
    JobBook& book,
    std::vector<PreemptDecision> preemptions,
    const std::vector<StartDecision>& starts,
    const std::function<std::string(const StartDecision&)>& start_cause) {
  AppliedDecisions applied;
  for (PreemptDecision& preemption : preemptions) {
    Job* victim = book.Find(preemption.victim);
    if (victim != nullptr && HoldsGpus(*victim) && !book.Stops().Stopping(preemption.victim)) {
      book.Preempt(*victim, preemption.cause);
      applied.preempted.push_back(std::move(preemption));
    } else {
      applied.stale = true;  // the scheduler thought it running
    }
  }
  for (const StartDecision& start : starts) {
    Job* job = book.Find(start.job);
    if (job == nullptr || job->state != JobState::kPending) {
      applied.stale_starts.push_back(start.job);  // never start a job twice
      applied.stale = true;
      continue;
    }
    book.Start(*job, start.allocation, start.preemptible, start_cause(start));
    applied.started.push_back(job->id);
  }
  return applied;
}

void NotePending(JobBook& book, std::vector<PendingDecision> pending) {
  for (PendingDecision& decision : pending) {
    Job* job = book.Find(decision.job);
    if (job == nullptr) {
      continue;
    }
    const std::string* requeued = book.Stops().RequeueCause(decision.job);
    job->reason =
        requeued == nullptr ? decision.reason.text : *requeued + "; " + decision.reason.text;
    job->pending_reason = std::move(decision.reason);
    job->estimated_start = decision.estimated_start;
  }
}

}  // namespace gf
