// JobDesk: the job calls of the cluster service, on the state thread (a component of the
// controller, decision 0007). Submissions (one job, an array, a gang: checked whole before any
// job is created, so that an array or a gang is queued whole or not at all), cancels, a budget
// approval, a reported checkpoint and an explanation; job control (holds, a requeue, a cancel by
// filter, a signal to a running job, an update of a pending job: job_control.cpp); which jobs a
// caller may see (others' jobs answer as if they did not exist); and what a job's end means for the
// jobs that wait for it (dependency_book.h).
//
// Jobs change only through the job book; the next pass is told through the scheduling stage.
// A caller checks that the controller still accepts work before calling. State thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controller/authorization.h"
#include "controller/dependency_book.h"
#include "controller/node_registry.h"
#include "controller/run_time_book.h"
#include "controller/scheduling_stage.h"
#include "controller/turn_outbox.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "service/service.h"
#include "store/store.h"

namespace gf {

struct JobDeskOptions {
  const PolicyConfig& policy;
  // A job submitted without --team is accounted to its user's team ([team.NAME] members).
  const std::map<std::string, std::string>& team_of_user;
  // Set when the daemon is not root: it can only run its own user's jobs.
  std::optional<std::uint32_t> only_uid;
};

// The controller's parts the desk works with; each must outlive it.
struct JobDeskParts {
  JobBook& jobs;
  Store& store;  // the ended jobs, for their owners
  DependencyBook& dependencies;
  const NodeRegistry& nodes;  // what could ever run a submission
  RunTimeBook& runtimes;      // a new job's run-time estimate
  SchedulingStage& scheduling;
  TurnOutbox& out;  // signals to agents, sent once the turn is durable
  const Clock& clock;
};

class JobDesk {
 public:
  JobDesk(const JobDeskOptions& options, JobDeskParts parts);

  // The next job's id (the store's largest + 1, at load).
  void SetNextId(std::int64_t id) { next_job_id_ = id; }
  std::int64_t NextId() const { return next_job_id_; }

  Result<Job> Submit(const Caller& caller, JobSpec spec);
  // The tasks get consecutive ids and share one commit.
  Result<std::vector<Job>> SubmitArray(const Caller& caller,
                                       JobSpec spec,
                                       const ArrayRequest& array);
  // A multi-job submission (ClusterService::SubmitBatch): all checked first, then queued in the
  // order sent with consecutive ids, in one commit.
  Result<std::vector<Job>> SubmitBatch(const Caller& caller, std::vector<JobSpec> specs);
  Result<Job> Cancel(const Caller& caller, JobId id);
  Result<std::vector<Job>> CancelArray(const Caller& caller, JobId array_job);
  // An administrator lets a pending job run past its team's GPU-hour budget.
  Result<Job> Approve(const Caller& caller, JobId id);
  // The job saved a checkpoint: a preemption now loses only the work done since.
  Result<Job> Checkpoint(const Caller& caller, JobId id);
  // Job control (job_control.cpp; ClusterService's HoldJob .. UpdateJob say what each does).
  Result<Job> Hold(const Caller& caller, JobId id);
  Result<Job> Release(const Caller& caller, JobId id);
  Result<Job> Requeue(const Caller& caller, JobId id);
  Result<std::vector<Job>> CancelMatching(const Caller& caller, const JobSelector& selector);
  // `gpufleet cancel --signal` (ClusterService::SignalJob, SignalJobs).
  Result<Job> Signal(const Caller& caller, JobId id, int sig);
  Result<SignalOutcome> SignalMatching(const Caller& caller, const JobSelector& selector, int sig);
  Result<Job> Update(const Caller& caller, JobId id, const JobUpdate& update);
  // What the next pass would decide for the job (SchedulingStage::Explain), with its
  // prediction, and other users' jobs it names hidden.
  Result<Explanation> Explain(const Caller& caller, JobId id);

  // The job, when the caller may do `action` to it (authorization.h); kNotFound otherwise, as
  // if it did not exist, so that others' jobs do not leak. A job no longer in the book was
  // committed by an earlier turn (the book erases after the commit), so the store has it.
  Result<Job> FindVisible(const Caller& caller, JobId id, Action action = Action::kRead);

  // Dependencies: after a restart the loaded pending jobs wait again for what has not ended
  // (one whose :ok dependency broke meanwhile is cancelled); a job just ended resolves those on
  // it, cancelling the jobs that waited with :ok and can no longer run.
  Status RestoreDependencies();
  void ResolveDependents(const Job& job);

  // The teams of the caller's active jobs, pending ones too (its quota view shows them).
  std::set<std::string> TeamsOf(const Caller& caller) const;

 private:
  // Multi-node jobs (model/job.h GangMember): a submission of `--nodes N` becomes N member jobs
  // with consecutive ids in one commit; the member of rank 0 is returned.
  // Requires CheckSubmission.
  Job SubmitGang(const Caller& caller, const JobSpec& spec);
  // What every submission must pass before any job is created (Submit, SubmitArray,
  // SubmitBatch); `nodes` (FeasibilityNodes) is what the request must fit on.
  Status CheckSubmission(const Caller& caller, const JobSpec& spec);
  Status CheckSubmission(const Caller& caller, const JobSpec& spec, const ClusterSnapshot& nodes);
  // The nodes as the feasibility check sees them: what could ever run, not what is free.
  ClusterSnapshot FeasibilityNodes() const;
  // Creates the PENDING job (id, owner, defaults, submit event); requires CheckSubmission.
  Job AddJob(const Caller& caller, JobSpec spec);
  void CancelBroken(const DependencyBook::Resolution& resolution);
  // The job `found` names and, for a member of a multi-node job, the other members: a hold or
  // release acts on the whole gang, which starts only whole.
  std::vector<Job*> WholeJob(const Job& found);
  // The pending job, when the caller may do `action` to it (FindVisible); kFailedPrecondition
  // naming its state and `why` ("only a waiting job can be held") otherwise.
  Result<Job> FindPending(const Caller& caller, JobId id, Action action, const std::string& why);
  // The active jobs the caller may cancel that `selector` matches, by id; kInvalidArgument naming
  // `what` ("cancel") for an empty selector.
  Result<std::vector<JobId>> Matching(const Caller& caller,
                                      const JobSelector& selector,
                                      const std::string& what);
  // Queues `sig` to the processes of `found` (RUNNING; every member of a gang) once the turn is
  // durable, with an event. kFailedPrecondition when a member's node has no agent now.
  Status SendSignal(const Caller& caller, const Job& found, int sig);

  const PolicyConfig& policy_;
  const std::map<std::string, std::string>& team_of_user_;
  std::optional<std::uint32_t> only_uid_;
  std::int64_t next_job_id_ = 1;
  JobDeskParts p_;
};

}  // namespace gf
