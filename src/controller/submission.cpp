// The Controller's job calls (controller.h), on the state thread: submissions (one job, an
// array, a gang: checked whole before any job is created), cancels, and what a job's end means
// for the jobs that wait for it (dependency_book.h). Split from controller.cpp by topic.
#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "controller/job_arrays.h"
#include "controller/submit_team.h"
#include "core/duration.h"
#include "lifecycle/admission.h"

namespace gf {
namespace {

// A spec that names no class (the API leaves the name empty) gets the config's default class.
JobSpec WithDefaultClass(JobSpec spec, const PolicyConfig& policy) {
  if (spec.priority.name.empty()) {
    spec.priority.name = policy.default_class;
  }
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

// ---- ClusterService ----------------------------------------------------------------------

Result<Job> Controller::Submit(const Caller& caller, JobSpec spec) {
  return Call<Job>([this, caller, spec = std::move(spec)]() mutable {
    return DoSubmit(caller, std::move(spec));
  });
}

Result<std::vector<Job>> Controller::SubmitArray(const Caller& caller,
                                                 JobSpec spec,
                                                 ArrayRequest array) {
  return Call<std::vector<Job>>(
      [this, caller, spec = std::move(spec), array = std::move(array)]() mutable {
        return DoSubmitArray(caller, std::move(spec), array);
      });
}

Result<Job> Controller::DoSubmit(const Caller& caller, JobSpec spec) {
  spec = WithDefaultClass(std::move(spec), options_.policy);
  GF_TRY(CheckSubmission(caller, spec));
  if (spec.request.nodes > 1) {
    return DoSubmitGang(caller, spec);
  }
  return AddJob(caller, std::move(spec));
}

// One command on the state thread: the tasks get consecutive ids and share one commit, so
// an array is queued whole or not at all.
Result<std::vector<Job>> Controller::DoSubmitArray(const Caller& caller,
                                                   JobSpec spec,
                                                   const ArrayRequest& array) {
  GF_TRY(ValidateArrayRequest(array));
  if (spec.request.nodes > 1) {
    return InvalidArgument(
        "nodes: a job array's tasks run on one node each; submit a multi-node job (--nodes) "
        "without --array");
  }
  spec = WithDefaultClass(std::move(spec), options_.policy);
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

Status Controller::CheckSubmission(const Caller& caller, const JobSpec& spec) {
  if (fatal_) {
    return *fatal_;
  }
  GF_TRY(Authorize(caller, Resource::kJob, Action::kSubmit, Ownership::kNone, "submit"));
  if (options_.only_uid && caller.uid != *options_.only_uid) {
    return PermissionDenied("this gpufleet runs as uid " + std::to_string(*options_.only_uid) +
                            " and can only run that user's jobs; run gpufleet up as root to "
                            "serve every user");
  }
  GF_TRY(ValidateSpec(spec));
  GF_TRY(CheckSubmitTeam(caller, spec.team, options_.policy, options_.team_of_user));
  GF_TRY(CheckClassExists(options_.policy, spec.priority));  // "priority: no class 'urgent'; ..."
  if (!spec.idle_reap) {
    GF_TRY(CheckIdleOptOut(options_.policy, spec.priority));  // "--no-reap: class 'normal' ..."
  }
  const ClusterSnapshot nodes =
      nodes_.Snapshot({}, nullptr);  // what could ever run, not what is free
  if (!nodes.nodes.empty()) {
    GF_TRY(CheckFeasible(nodes, spec.request));
  }
  return dependencies_.Check(caller, spec.after);
}

Job Controller::AddJob(const Caller& caller, JobSpec spec) {
  Job job;
  job.id = JobId(next_job_id_++);
  job.owner = Owner{caller.uid, caller.gid, caller.user};
  job.spec = std::move(spec);
  if (job.spec.team.empty()) {
    if (auto team = options_.team_of_user.find(caller.user); team != options_.team_of_user.end()) {
      job.spec.team = team->second;
    }
  }
  if (job.spec.name.empty()) {
    job.spec.name = DefaultJobName(job.spec.argv.front());  // escaped: argv[0] is any bytes
  }
  job.state = JobState::kPending;
  job.submit_time = clock_.Now();
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
  jobs_.Record(job.id,
               "submit",
               caller.user,
               "submitted '" + job.spec.name + "'" + task + ": " + Describe(job.spec.request) +
                   ", priority " + std::string(ToString(job.spec.priority)) + limit);
  job.prediction = runtimes_.Estimate(job);
  jobs_.Add(job);
  dependencies_.Track(job);
  scheduling_.NoteArrival(job, dependencies_.Waiting(job.id));
  return job;
}

Result<Job> Controller::CancelJob(const Caller& caller, JobId id) {
  return Call<Job>([this, caller, id] { return DoCancel(caller, id); });
}

Result<Job> Controller::DoCancel(const Caller& caller, JobId id) {
  if (fatal_) {
    return *fatal_;
  }
  GF_ASSIGN_OR_RETURN(Job found, FindVisible(caller, id, Action::kCancel));
  auto it = jobs_.Active().find(id);
  if (it == jobs_.Active().end()) {
    return FailedPrecondition("job " + std::to_string(id.value()) + " already ended (" +
                              std::string(ToString(found.state)) + ")");
  }
  jobs_.Cancel(it->second, caller.user);
  return it->second;
}

Result<std::vector<Job>> Controller::CancelArray(const Caller& caller, JobId array_job) {
  return Call<std::vector<Job>>(
      [this, caller, array_job] { return DoCancelArray(caller, array_job); });
}

Result<std::vector<Job>> Controller::DoCancelArray(const Caller& caller, JobId array_job) {
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
  for (const auto& [task_id, job] : jobs_.Active()) {
    if (job.spec.array && job.spec.array->array_job == array_job && !IsTerminal(job.state)) {
      tasks.push_back(task_id);
    }
  }
  if (tasks.empty()) {
    return FailedPrecondition("array " + id + ": every task already ended");
  }
  std::vector<Job> out;
  for (JobId task : tasks) {
    GF_ASSIGN_OR_RETURN(Job job, DoCancel(caller, task));
    out.push_back(std::move(job));
  }
  return out;
}

// ---- dependencies (dependency_book.h) -----------------------------------------------------

// After a restart: the loaded pending jobs wait again for what has not ended; one whose :ok
// dependency ended otherwise while gpufleet was down is cancelled now, before the next job is
// judged (it may wait for this one).
Status Controller::RestoreDependencies() {
  for (auto& [id, job] : jobs_.Active()) {
    if (job.state != JobState::kPending || job.spec.after.empty()) {
      continue;
    }
    GF_ASSIGN_OR_RETURN(const std::optional<std::string> broken, dependencies_.Restore(job));
    if (broken) {
      jobs_.Transition(job, JobState::kCancelled, *broken, "controller");
    }
  }
  return OkStatus();
}

// A job's end resolves the dependencies on it by its id; an array task's end, once it was the
// last, those on the whole array. Each answer is applied before the next is asked for: the
// cancelled jobs' own ends resolve what waits for them first.
void Controller::ResolveDependents(const Job& job) {
  CancelBroken(dependencies_.OnEnded(job));
  if (!job.spec.array.has_value()) {
    return;
  }
  Result<DependencyBook::Resolution> array = dependencies_.OnArrayTaskEnded(job);
  if (!array.ok()) {
    spdlog::error("controller: dependencies on array {}: {}",
                  job.spec.array->array_job.value(),
                  array.error().message);
    return;
  }
  CancelBroken(*array);
}

void Controller::CancelBroken(const DependencyBook::Resolution& resolution) {
  for (const DependencyGraph::Broken& broken : resolution.cancel) {
    auto it = jobs_.Active().find(broken.job);
    if (it != jobs_.Active().end() && it->second.state == JobState::kPending) {
      jobs_.Transition(it->second, JobState::kCancelled, broken.cause, "scheduler");
    }
  }
  if (resolution.changed) {
    scheduling_.NeedFull();  // a job that waited is now a candidate (or was cancelled)
  }
}

}  // namespace gf
