// Job dependencies (`gpufleet submit --after JOB[:ok]`, Slurm's afterany / afterok) and the
// wording the controller uses for them.
//
// DependencyGraph records which pending jobs still wait for which jobs, and decides what a
// job's end means for them: a dependency is met when its job ends (kAny), or ends COMPLETED
// with exit code 0 (kOk); a kOk dependency whose job ends otherwise can never be met, so the
// waiting job is to be cancelled, and so on down the chain of kOk dependencies on it.
// Plain data, no I/O and no clock: the controller owns one and calls it from its state thread
// only (not thread-safe).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "model/job.h"
#include "model/pending_reason.h"

namespace gf {

// At most this many --after jobs per submission.
inline constexpr std::size_t kMaxDependencies = 100;

// How a job ended: all a dependency on it needs to know.
struct JobOutcome {
  JobState state = JobState::kCompleted;  // a terminal state
  std::optional<int> exit_code;
};

// True when `outcome` meets a dependency of `kind`.
bool Satisfies(DependencyKind kind, const JobOutcome& outcome);

// Why a job is cancelled when its :ok dependency on `job` broke: "dependency job 12 failed
// (exit 1)", "dependency job 12 was cancelled", "dependency job 12 timed out". `name` is how
// the job is called ("job 12"; the simulator's "job 'j12'", by its trace id).
std::string BrokenCause(const std::string& name, const JobOutcome& outcome);
std::string BrokenCause(JobId job, const JobOutcome& outcome);  // named "job 12"

// How a DependencyGraph names a job in the causes it gives.
using JobNamer = std::function<std::string(JobId)>;

// The pending reason of a job that waits for `dependency`: "waiting for job 12 to end",
// "waiting for job 12 to complete successfully".
PendingReason WaitingReason(const Dependency& dependency);
PendingReason WaitingReason(DependencyKind kind, const std::string& name);  // of "job 'j12'"

// Checks a submitted `after` list on its own: at most kMaxDependencies, no job twice.
// Errors: kInvalidArgument naming the field `after` and the fix.
Status ValidateDependencies(const std::vector<Dependency>& after);

class DependencyGraph {
 public:
  // A waiting job whose dependency can never be met: cancel it with `cause`.
  struct Broken {
    JobId job;
    std::string cause;
    bool operator==(const Broken&) const = default;
  };

  DependencyGraph() = default;
  // Causes name jobs by `name_of` rather than "job 12".
  explicit DependencyGraph(JobNamer name_of) : name_of_(std::move(name_of)) {}

  // `job` waits for every dependency of `unmet` (those whose jobs have not ended). A job
  // added with an empty list does not wait. Adding a job again replaces its list.
  void Wait(JobId job, const std::vector<Dependency>& unmet);

  // True while `job` waits for at least one job.
  bool Waiting(JobId job) const;

  // The first dependency (in submission order) that `job` still waits for.
  std::optional<Dependency> FirstUnmet(JobId job) const;

  // `job` ended with `outcome`. Every dependency on it is now met or broken; `job` itself no
  // longer waits. Returns the waiting jobs to cancel, in the order found: those with a kOk
  // dependency on `job` that `outcome` does not meet, then (as each of those counts as
  // cancelled) those with a kOk dependency on them, and so on. Each job appears once; their
  // own dependents are already resolved, so reporting their end again returns nothing.
  std::vector<Broken> OnEnded(JobId job, const JobOutcome& outcome);

  // Jobs that wait, for tests and sizing.
  std::size_t WaitingCount() const { return unmet_.size(); }

 private:
  // Resolves the dependencies on `target`; appends newly broken waiters to `broken`.
  void Resolve(JobId target, const JobOutcome& outcome, std::vector<Broken>& broken);

  JobNamer name_of_;                                // empty: "job 12"
  std::map<JobId, std::vector<Dependency>> unmet_;  // waiting job → what it still waits for
  // Target → the jobs that waited for it when they were added. May name jobs that no longer
  // wait (cancelled meanwhile): Resolve skips them.
  std::map<JobId, std::vector<JobId>> waiters_;
};

}  // namespace gf
