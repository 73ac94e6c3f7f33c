// DependencyBook: the controller's job dependencies (`gpufleet submit --after JOB[:ok]`,
// lifecycle/dependencies.h) with the facts they are judged on. It owns the DependencyGraph of
// the pending jobs that wait, and decides, from the jobs it reads, whether a submitted `after`
// list is acceptable, which jobs wait again after a restart and which waiting jobs a job's end
// cancels. It also knows job arrays as a dependency sees them: an array's id (its first task's
// id) names the whole array, which ends when its last task does (Slurm's afterok:ARRAY).
//
// Why a component: the graph and the dozen functions around it were controller state that
// only the state thread's submit, end and load paths touched. Jobs stay the controller's: the
// book reads the active jobs (a const view of the controller's map, every job not in a
// terminal state, by id) and, for jobs no longer active, the store through the read-only
// StoreReader. It changes no job: it answers with values (an error for a refused submission,
// the cause a restored job is cancelled with, the jobs a job's end cancels and whether the
// scheduler's view changed), and the controller transitions the jobs, records the events and
// plans the next pass.
//
// Owned by the Controller, which must outlive it with the map and store it was given. Not
// thread-safe: the controller's state thread only, like the jobs it reads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "lifecycle/dependencies.h"
#include "model/job.h"
#include "service/service.h"
#include "store/store.h"

namespace gf {

class DependencyBook {
 public:
  // What a job's end means for the jobs that wait: `cancel` the pending ones whose :ok
  // dependency can no longer be met (in the order found, down the chain, each with its
  // cause); `changed` when a job stopped waiting (met or cancelled), so that the scheduler's
  // view changed and a full pass is due.
  struct Resolution {
    std::vector<DependencyGraph::Broken> cancel;
    bool changed = false;
  };

  // `active`: every job not in a terminal state, by id (the controller's); `store`: the jobs
  // that ended. Both must outlive the book.
  DependencyBook(const std::map<JobId, Job>& active, StoreReader& store);

  // A submission's `after` list: every job must exist and be visible to `caller` (or the
  // caller is root); one that already ended must have met its dependency. Errors:
  // kInvalidArgument naming the field and the fix; the store's.
  Status Check(const Caller& caller, const std::vector<Dependency>& after) const;
  // `job` was just added (pending): it waits for those of its `after` jobs not yet ended.
  // Check judged the others at submit.
  void Track(const Job& job);
  // After a restart, for each loaded pending job with an `after` list: the job waits again
  // for what has not ended, or, when an :ok dependency ended otherwise while gpufleet was down,
  // the cause to cancel it with is returned (and it does not wait). Call it for each job in
  // id order and apply the cancel before the next call: a later job may wait for this one.
  // Errors: the store's.
  Result<std::optional<std::string>> Restore(const Job& job);

  // `job` just ended (terminal in the active map): the dependencies on it by its own id are
  // resolved. An array's first task shares the array's id, so its end alone resolves nothing.
  Resolution OnEnded(const Job& job);
  // `task` (of an array) just ended, and the controller applied OnEnded's answer: once it was
  // the array's last unfinished task, the dependencies on the whole array are resolved with
  // the array's outcome. Errors: the store's (nothing resolved).
  Result<Resolution> OnArrayTaskEnded(const Job& task);

  // True while `job` waits for at least one job.
  bool Waiting(JobId job) const { return graph_.Waiting(job); }
  // The waits themselves, for admission (lifecycle/admission.h HeldBack).
  const DependencyGraph& Graph() const { return graph_; }

 private:
  // How `id` ended, for a dependency on it; nullopt while it (or, for an array's id, any of
  // its tasks) has not ended. A job in neither the active map nor the store counts as
  // cancelled. Errors: the store's.
  Result<std::optional<JobOutcome>> OutcomeOf(JobId id) const;
  Resolution Resolve(JobId target, const JobOutcome& outcome);
  bool HasUnfinishedTask(JobId id) const;
  Result<bool> IsArrayId(JobId id) const;
  Result<std::optional<JobOutcome>> ArrayOutcome(JobId array) const;

  const std::map<JobId, Job>& active_;
  StoreReader& store_;
  DependencyGraph graph_;  // pending jobs that wait for other jobs to end
};

}  // namespace gf
