#include "controller/dependency_book.h"

#include "controller/authorization.h"

namespace gf {

DependencyBook::DependencyBook(const std::map<JobId, Job>& active, StoreReader& store)
    : active_(active), store_(store) {}

Status DependencyBook::Check(const Caller& caller, const std::vector<Dependency>& after) const {
  GF_TRY(ValidateDependencies(after));
  for (const Dependency& d : after) {
    const std::string id = std::to_string(d.job.value());
    std::optional<Job> stored;
    const Job* target = nullptr;
    if (auto it = active_.find(d.job); it != active_.end()) {
      target = &it->second;
    } else {
      GF_ASSIGN_OR_RETURN(stored, store_.GetJob(d.job));
      target = stored ? &*stored : nullptr;
    }
    // Another user's job is "does not exist" too: its existence must not leak.
    if (target == nullptr || !Visible(caller, *target)) {
      return InvalidArgument("after: job " + id +
                             " does not exist; give the id of a job you submitted "
                             "(gpufleet queue --all lists them)");
    }
    // For an array's id, how the whole array ended (nullopt while a task is unfinished).
    GF_ASSIGN_OR_RETURN(const std::optional<JobOutcome> outcome, OutcomeOf(d.job));
    if (outcome.has_value() && !Satisfies(d.kind, *outcome)) {
      std::string message = "after: job " + id + " already ended ";
      message += ToString(outcome->state);
      if (outcome->exit_code) {
        message += " (exit " + std::to_string(*outcome->exit_code) + ")";
      }
      message += ", so ";
      message += id;
      message += ":ok can never be met; give ";
      message += id;
      message += " without :ok to run after it anyway";
      return InvalidArgument(message);
    }
  }
  return OkStatus();
}

// At submit, Check judged the jobs that had ended: only the live ones remain.
void DependencyBook::Track(const Job& job) {
  std::vector<Dependency> unmet;
  for (const Dependency& d : job.spec.after) {
    if (HasUnfinishedTask(d.job)) {
      unmet.push_back(d);
    }
  }
  graph_.Wait(job.id, unmet);
}

// One job at a time, so that the controller cancels a broken job before the next is judged:
// a job that waits for it then sees it cancelled, as it would have been had gpufleet been up.
Result<std::optional<std::string>> DependencyBook::Restore(const Job& job) {
  std::vector<Dependency> unmet;
  std::optional<std::string> broken;
  for (const Dependency& d : job.spec.after) {
    GF_ASSIGN_OR_RETURN(const std::optional<JobOutcome> outcome, OutcomeOf(d.job));
    if (!outcome) {
      unmet.push_back(d);
    } else if (!Satisfies(d.kind, *outcome) && !broken) {
      broken = BrokenCause(d.job, *outcome);
    }
  }
  if (!broken) {
    graph_.Wait(job.id, unmet);
  }
  return broken;
}

// A job's end resolves the dependencies on it; an array task's end resolves those on the
// whole array (named by the array's id, as Slurm's afterok:ARRAY) once it was the last task
// (OnArrayTaskEnded). The array's id is also its first task's id, so that task's end alone
// resolves nothing.
DependencyBook::Resolution DependencyBook::OnEnded(const Job& job) {
  if (job.spec.array.has_value() && job.spec.array->array_job == job.id) {
    return {};
  }
  return Resolve(job.id, JobOutcome{.state = job.state, .exit_code = job.exit_code});
}

Result<DependencyBook::Resolution> DependencyBook::OnArrayTaskEnded(const Job& task) {
  const JobId array = task.spec.array->array_job;
  GF_ASSIGN_OR_RETURN(const std::optional<JobOutcome> outcome, ArrayOutcome(array));
  if (!outcome.has_value()) {
    return Resolution{};
  }
  return Resolve(array, *outcome);
}

DependencyBook::Resolution DependencyBook::Resolve(JobId target, const JobOutcome& outcome) {
  const std::size_t waiting = graph_.WaitingCount();
  Resolution resolution;
  resolution.cancel = graph_.OnEnded(target, outcome);
  resolution.changed = graph_.WaitingCount() != waiting;
  return resolution;
}

// Whether `id` names a job (or, for an array's id, any task of that array) not yet ended. The
// tasks of an array have consecutive ids from the array's id, and only they: walking active_
// from there meets them first, and the first entry of another job ends the walk.
bool DependencyBook::HasUnfinishedTask(JobId id) const {
  for (auto it = active_.lower_bound(id); it != active_.end(); ++it) {
    const Job& job = it->second;
    const bool of_array = job.spec.array.has_value() && job.spec.array->array_job == id;
    if (it->first != id && !of_array) {
      return false;
    }
    if (!IsTerminal(job.state)) {
      return true;
    }
    if (!of_array) {
      return false;
    }
  }
  return false;
}

// How the array `array` ended once every task has: COMPLETED with exit 0 when all did, else
// the outcome of the first task (by index) that did not. nullopt while a task runs or waits.
Result<std::optional<JobOutcome>> DependencyBook::ArrayOutcome(JobId array) const {
  if (HasUnfinishedTask(array)) {
    return std::optional<JobOutcome>();
  }
  GF_ASSIGN_OR_RETURN(std::vector<Job> tasks,
                      store_.ListJobs({.array_job = array, .limit = kMaxArrayTasks}));
  std::optional<JobOutcome> failed;
  int failed_index = 0;
  for (const Job& stored : tasks) {  // newest first: the lowest index ends up in `failed`
    // A task that ended in this loop turn is not committed yet: active_ has its end.
    const auto live = active_.find(stored.id);
    const Job& task = live != active_.end() ? live->second : stored;
    const JobOutcome outcome{.state = task.state, .exit_code = task.exit_code};
    if (!IsTerminal(task.state)) {
      return std::optional<JobOutcome>();  // stored as live, not yet in active_: not ended
    }
    if (!Satisfies(DependencyKind::kOk, outcome) &&
        (!failed || task.spec.array->index < failed_index)) {
      failed = outcome;
      failed_index = task.spec.array->index;
    }
  }
  return std::optional<JobOutcome>(
      failed.value_or(JobOutcome{.state = JobState::kCompleted, .exit_code = 0}));
}

Result<std::optional<JobOutcome>> DependencyBook::OutcomeOf(JobId id) const {
  GF_ASSIGN_OR_RETURN(const bool array, IsArrayId(id));
  if (array) {
    return ArrayOutcome(id);
  }
  if (auto it = active_.find(id); it != active_.end()) {
    if (!IsTerminal(it->second.state)) {
      return std::optional<JobOutcome>();
    }
    return std::optional<JobOutcome>(
        JobOutcome{.state = it->second.state, .exit_code = it->second.exit_code});
  }
  GF_ASSIGN_OR_RETURN(std::optional<Job> stored, store_.GetJob(id));
  if (!stored) {
    // Not in the store: it can never end now. Counted as cancelled, so a job waiting for it
    // with :ok is cancelled rather than left waiting forever.
    return std::optional<JobOutcome>(
        JobOutcome{.state = JobState::kCancelled, .exit_code = std::nullopt});
  }
  return std::optional<JobOutcome>(
      JobOutcome{.state = stored->state, .exit_code = stored->exit_code});
}

// Whether `id` is the id of a job array (its first task's id). Errors: the store's.
Result<bool> DependencyBook::IsArrayId(JobId id) const {
  if (auto it = active_.find(id); it != active_.end()) {
    return it->second.spec.array.has_value() && it->second.spec.array->array_job == id;
  }
  GF_ASSIGN_OR_RETURN(std::optional<Job> stored, store_.GetJob(id));
  return stored.has_value() && stored->spec.array.has_value() &&
         stored->spec.array->array_job == id;
}

}  // namespace gf
