// JobDesk (job_desk.h): the job calls of the service on the state thread.
#include "controller/job_desk.h"

#include <algorithm>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "controller/explain_privacy.h"
#include "controller/job_arrays.h"
#include "controller/submit_team.h"
#include "core/duration.h"
#include "lifecycle/admission.h"
#include "model/team.h"
#include "scheduler/idle_policy.h"

namespace gf {
namespace {

// A spec that names no class (the API leaves the name empty) gets the config's default class.
JobSpec WithDefaultClass(JobSpec spec, const PolicyConfig& policy) {
  if (spec.priority.name.empty()) {
    spec.priority.name = policy.default_class;
  }
  // Not a class matter, but filled in at the same moment: what the job holds is then its
  // request for every reader (show, the scheduler, the agent's limits).
  spec.request = WithHostDefaults(std::move(spec.request), policy.host_defaults);
  return spec;
}

std::string Describe(const JobRequest& r) {
  std::string out = std::to_string(r.gpus) + (r.gpus == 1 ? " GPU" : " GPUs");
  if (r.gpu_type) {
    out += " of type " + *r.gpu_type;
  }
  return out;
}
}  // namespace

JobDesk::JobDesk(const JobDeskOptions& options, JobDeskParts parts)
    : policy_(options.policy),
      team_of_user_(options.team_of_user),
      only_uid_(options.only_uid),
      p_(parts) {}

Result<Job> JobDesk::Submit(const Caller& caller, JobSpec spec) {
  spec = WithDefaultClass(std::move(spec), policy_);
  GF_TRY(CheckSubmission(caller, spec));
  if (spec.request.nodes > 1) {
    return SubmitGang(caller, spec);
  }
  return AddJob(caller, std::move(spec));
}

// One command on the state thread: the tasks get consecutive ids and share one commit, so
// an array is queued whole or not at all.
Result<std::vector<Job>> JobDesk::SubmitArray(const Caller& caller,
                                              JobSpec spec,
                                              const ArrayRequest& array) {
  GF_TRY(ValidateArrayRequest(array));
  if (spec.request.nodes > 1) {
    return InvalidArgument(
        "nodes: a job array's tasks run on one node each; submit a multi-node job (--nodes) "
        "without --array");
  }
  spec = WithDefaultClass(std::move(spec), policy_);
  GF_TRY(CheckSubmission(caller, spec));
  const JobId first(next_job_id_);
  std::vector<Job> tasks;
  tasks.reserve(array.indices.size());
  for (int index : array.indices) {
    JobSpec task = spec;
    task.array = ArrayTask{.array_job = first, .index = index, .max_running = array.max_running};
    tasks.push_back(AddJob(caller, std::move(task)));
  }
  return tasks;
}

// One command on the state thread, as an array: every spec is checked before any job is
// created, so the batch is queued whole or not at all, in one commit.
Result<std::vector<Job>> JobDesk::SubmitBatch(const Caller& caller, std::vector<JobSpec> specs) {
  if (specs.empty()) {
    return InvalidArgument("jobs: an empty list; send at least one job spec");
  }
  if (specs.size() > static_cast<std::size_t>(kMaxBatchJobs)) {
    return InvalidArgument("jobs: " + std::to_string(specs.size()) +
                           " job specs; a request has at most " + std::to_string(kMaxBatchJobs) +
                           " (send the rest in another request)");
  }
  const ClusterSnapshot nodes = FeasibilityNodes();  // once, not once per spec
  for (std::size_t i = 0; i < specs.size(); ++i) {
    specs[i] = WithDefaultClass(std::move(specs[i]), policy_);
    if (Status checked = CheckSubmission(caller, specs[i], nodes); !checked.ok()) {
      return MakeError(checked.error().code,
                       "jobs[" + std::to_string(i) + "]: " + checked.error().message);
    }
  }
  std::vector<Job> jobs;
  jobs.reserve(specs.size());
  for (JobSpec& spec : specs) {
    jobs.push_back(spec.request.nodes > 1 ? SubmitGang(caller, spec)
                                          : AddJob(caller, std::move(spec)));
  }
  return jobs;
}

Job JobDesk::SubmitGang(const Caller& caller, const JobSpec& spec) {
  const JobId first(next_job_id_);
  const int size = spec.request.nodes;
  std::optional<Job> lead;
  for (int rank = 0; rank < size; ++rank) {
    JobSpec member = spec;
    member.gang = GangMember{.gang_job = first, .rank = rank, .size = size};
    Job job = AddJob(caller, std::move(member));
    if (rank == 0) {
      lead = std::move(job);
    }
  }
  return *lead;
}

Status JobDesk::CheckSubmission(const Caller& caller, const JobSpec& spec) {
  return CheckSubmission(caller, spec, FeasibilityNodes());
}

ClusterSnapshot JobDesk::FeasibilityNodes() const {
  return p_.nodes.Snapshot({}, nullptr);  // what could ever run, not what is free
}

Status JobDesk::CheckSubmission(const Caller& caller,
                                const JobSpec& spec,
                                const ClusterSnapshot& nodes) {
  GF_TRY(Authorize(caller, Resource::kJob, Action::kSubmit, Ownership::kNone, "submit"));
  if (only_uid_ && caller.uid != *only_uid_) {
    return PermissionDenied("this gpufleet runs as uid " + std::to_string(*only_uid_) +
                            " and can only run that user's jobs; run gpufleet up as root to "
                            "serve every user");
  }
  GF_TRY(ValidateSpec(spec));
  GF_TRY(CheckSubmitTeam(caller, spec.team, policy_, team_of_user_));
  GF_TRY(CheckClassExists(policy_, spec.priority));  // "priority: no class 'urgent'; ..."
  if (!spec.idle_reap) {
    GF_TRY(CheckIdleOptOut(policy_, spec.priority));  // "--no-reap: class 'normal' ..."
  }
  if (!nodes.nodes.empty()) {
    GF_TRY(CheckFeasible(nodes, spec.request));
  }
  return p_.dependencies.Check(caller, spec.after);
}

Job JobDesk::AddJob(const Caller& caller, JobSpec spec) {
  Job job;
  job.id = JobId(next_job_id_++);
  job.owner = Owner{caller.uid, caller.gid, caller.user};
  job.spec = std::move(spec);
  if (job.spec.team.empty()) {
    if (auto team = team_of_user_.find(caller.user); team != team_of_user_.end()) {
      job.spec.team = team->second;
    }
  }
  if (job.spec.name.empty()) {
    job.spec.name = DefaultJobName(job.spec.argv.front());  // escaped: argv[0] is any bytes
  }
  job.state = JobState::kPending;
  job.submit_time = p_.clock.Now();
  job.reason = "waiting for the scheduler";
  std::string limit =
      job.spec.time_limit ? ", time limit " + FormatDuration(*job.spec.time_limit) : "";
  std::string task;
  if (job.spec.array) {
    task = " (array task " + ArrayTaskName(*job.spec.array) + ")";
  } else if (job.spec.gang) {
    task = " (node " + std::to_string(job.spec.gang->rank + 1) + " of " +
           std::to_string(job.spec.gang->size) + " of job " +
           std::to_string(job.spec.gang->gang_job.value()) + ")";
  }
  p_.jobs.Record(job.id,
                 "submit",
                 caller.user,
                 "submitted '" + job.spec.name + "'" + task + ": " + Describe(job.spec.request) +
                     ", priority " + std::string(ToString(job.spec.priority)) + limit);
  job.prediction = p_.runtimes.Estimate(job);
  p_.jobs.Add(job);
  p_.dependencies.Track(job);
  p_.scheduling.NoteArrival(job, p_.dependencies.Waiting(job.id));
  return job;
}

Result<Job> JobDesk::Cancel(const Caller& caller, JobId id) {
  GF_ASSIGN_OR_RETURN(Job found, FindVisible(caller, id, Action::kCancel));
  auto it = p_.jobs.Active().find(id);
  if (it == p_.jobs.Active().end()) {
    return FailedPrecondition("job " + std::to_string(id.value()) + " already ended (" +
                              std::string(ToString(found.state)) + ")");
  }
  p_.jobs.Cancel(it->second, caller.user);
  return it->second;
}

Result<std::vector<Job>> JobDesk::CancelArray(const Caller& caller, JobId array_job) {
  GF_ASSIGN_OR_RETURN(Job first, FindVisible(caller, array_job, Action::kCancel));
  const std::string id = std::to_string(array_job.value());
  if (!first.spec.array || first.spec.array->array_job != array_job) {
    return InvalidArgument("array: job " + id + " is not a job array" +
                           (first.spec.array
                                ? "; it is task " + ArrayTaskName(*first.spec.array) +
                                      " (cancel the whole array with gpufleet cancel --array " +
                                      std::to_string(first.spec.array->array_job.value()) + ")"
                                : "; cancel it with gpufleet cancel " + id));
  }
  std::vector<JobId> tasks;
  for (const auto& [task_id, job] : p_.jobs.Active()) {
    if (job.spec.array && job.spec.array->array_job == array_job && !IsTerminal(job.state)) {
      tasks.push_back(task_id);
    }
  }
  if (tasks.empty()) {
    return FailedPrecondition("array " + id + ": every task already ended");
  }
  std::vector<Job> out;
  for (JobId task : tasks) {
    GF_ASSIGN_OR_RETURN(Job job, Cancel(caller, task));
    out.push_back(std::move(job));
  }
  return out;
}

// After a restart: the loaded pending jobs wait again for what has not ended; one whose :ok
// dependency ended otherwise while gpufleet was down is cancelled now, before the next job is
// judged (it may wait for this one).
Status JobDesk::RestoreDependencies() {
  for (auto& [id, job] : p_.jobs.Active()) {
    if (job.state != JobState::kPending || job.spec.after.empty()) {
      continue;
    }
    GF_ASSIGN_OR_RETURN(const std::optional<std::string> broken, p_.dependencies.Restore(job));
    if (broken) {
      p_.jobs.Transition(job, JobState::kCancelled, *broken, "controller");
    }
  }
  return OkStatus();
}

// A job's end resolves the dependencies on it by its id; an array task's end, once it was the
// last, those on the whole array. Each answer is applied before the next is asked for: the
// cancelled jobs' own ends resolve what waits for them first.
void JobDesk::ResolveDependents(const Job& job) {
  CancelBroken(p_.dependencies.OnEnded(job));
  if (!job.spec.array.has_value()) {
    return;
  }
  Result<DependencyBook::Resolution> array = p_.dependencies.OnArrayTaskEnded(job);
  if (!array.ok()) {
    spdlog::error("controller: dependencies on array {}: {}",
                  job.spec.array->array_job.value(),
                  array.error().message);
    return;
  }
  CancelBroken(*array);
}

std::set<std::string> JobDesk::TeamsOf(const Caller& caller) const {
  std::set<std::string> teams;
  for (const auto& [id, job] : p_.jobs.Active()) {
    if (job.owner.uid == caller.uid) {
      teams.insert(job.spec.team);
    }
  }
  return teams;
}

void JobDesk::CancelBroken(const DependencyBook::Resolution& resolution) {
  for (const DependencyGraph::Broken& broken : resolution.cancel) {
    auto it = p_.jobs.Active().find(broken.job);
    if (it != p_.jobs.Active().end() && it->second.state == JobState::kPending) {
      p_.jobs.Transition(it->second, JobState::kCancelled, broken.cause, "scheduler");
    }
  }
  if (resolution.changed) {
    p_.scheduling.NeedFull();  // a job that waited is now a candidate (or was cancelled)
  }
}

// On the state thread: a job not in the book was committed by an earlier turn (EraseEnded
// follows the commit), so the store has it.
Result<Job> JobDesk::FindVisible(const Caller& caller, JobId id, Action action) {
  // Who has no identity is told how to get one, not that the job does not exist.
  GF_TRY(Authorize(
      caller, Resource::kJob, action, Ownership::kOwn, "job " + std::to_string(id.value())));
  if (auto it = p_.jobs.Active().find(id); it != p_.jobs.Active().end()) {
    if (!Visible(caller, it->second, action)) {
      return NotVisible(id);
    }
    return it->second;
  }
  GF_ASSIGN_OR_RETURN(std::optional<Job> stored, p_.store.GetJob(id));
  if (!stored || !Visible(caller, *stored, action)) {
    return NotVisible(id);
  }
  return *stored;
}

// What the next pass would decide (SchedulingStage::Explain), with the prediction, and the other
// users' jobs it names hidden.
Result<Explanation> JobDesk::Explain(const Caller& caller, JobId id) {
  GF_ASSIGN_OR_RETURN(Job job, FindVisible(caller, id));
  const std::string name = "job " + std::to_string(id.value());
  if (IsTerminal(job.state)) {
    return FailedPrecondition(name + " has ended (" + std::string(ToString(job.state)) +
                              "): only pending and running jobs are explained; see gpufleet "
                              "show " +
                              std::to_string(id.value()));
  }
  Result<Explanation> explanation = p_.scheduling.Explain(p_.jobs, job, p_.clock.Now());
  if (explanation.ok()) {
    explanation->prediction = job.prediction;
    // The jobs it names are queued or running, so active; one that is not is hidden.
    HideOtherUsersJobs(*explanation, [&](JobId other) {
      const auto it = p_.jobs.Active().find(other);
      return it != p_.jobs.Active().end() && Visible(caller, it->second);
    });
  }
  return explanation;
}

Result<Job> JobDesk::Approve(const Caller& caller, JobId id) {
  const std::string name = std::to_string(id.value());
  if (Status allowed =
          Authorize(caller, Resource::kJob, Action::kApprove, Ownership::kNone, "quota approve");
      !allowed.ok()) {
    return PermissionDenied(allowed.error().message +
                            "; ask an administrator to run 'gpufleet "
                            "quota approve " +
                            name + "'");
  }
  GF_ASSIGN_OR_RETURN(Job found, FindVisible(caller, id));
  if (found.state != JobState::kPending) {
    return FailedPrecondition("quota approve: job " + name + " is " +
                              std::string(ToString(found.state)) +
                              ", not PENDING; only a waiting job can be approved");
  }
  Job& job = p_.jobs.At(id);
  if (!job.budget_approved) {
    job.budget_approved = true;
    p_.jobs.Write(job);
    p_.jobs.Record(id,
                   "approve",
                   caller.user,
                   "approved by " + caller.user + " to run past team " + TeamLabel(job.spec.team) +
                       "'s GPU-hour budget");
    p_.scheduling.NeedFull();
  }
  return job;
}

Result<Job> JobDesk::Checkpoint(const Caller& caller, JobId id) {
  GF_ASSIGN_OR_RETURN(Job found, FindVisible(caller, id, Action::kCheckpoint));
  // STARTING too: the job's process may run (and report) before its start is recorded.
  if (!HoldsGpus(found)) {
    return FailedPrecondition("checkpoint: job " + std::to_string(id.value()) + " is " +
                              std::string(ToString(found.state)) +
                              "; only a running job can report a checkpoint");
  }
  Job& job = p_.jobs.At(id);
  job.last_checkpoint = p_.clock.Now();
  p_.jobs.Write(job);
  p_.jobs.Record(id,
                 "checkpoint",
                 caller.user,
                 "checkpoint saved: a preemption now loses only the work done since");
  p_.scheduling.NeedFull();  // a waiting job may now pick other victims
  return job;
}

}  // namespace gf
