// Admission: the stage of the job lifecycle before the scheduler's pass, which keeps back the
// pending jobs that may not be candidates yet, each with the reason it waits (as the
// Kubernetes scheduler's PreEnqueue stage does). Four rules, in this order:
//   0. a job held by its owner or an admin (`gpufleet hold`, Job::held_by) waits for its
//      release, and takes no place in its array's throttle;
//   1. a job waits for an `--after` dependency (dependencies.h): not yet a candidate, and so
//      takes no place in its array's throttle;
//   2. a member of a gang (multi-node job) waits while another member still holds GPUs: a
//      requeued gang starts again whole, once every member has stopped;
//   3. the tasks of an array with a limit (`--array 0-99%4`) beyond max_running - (its tasks
//      holding GPUs), lowest index first.
// The controller runs it before each full pass and shows the reasons; what it keeps back never
// reaches Decide(). Pure functions over the active jobs; no I/O, no clock; thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.h"
#include "lifecycle/dependencies.h"
#include "model/job.h"
#include "model/pending_reason.h"

namespace gf {

// The jobs kept back from the next pass, each with its reason (stage kAdmission; codes kHeld,
// kDependency, kGangStopping, kArrayLimit). `active` holds every job not in a terminal state,
// by id.
std::map<JobId, PendingReason> HeldBack(const std::map<JobId, Job>& active,
                                        const DependencyGraph& dependencies);

// Rule 0 for one job: "held by alice: gpufleet release 12", or nullopt when it is not held.
// An administrator's hold (placed by someone other than the owner) says so, since its owner
// cannot release it.
std::optional<PendingReason> HoldReason(const Job& job);

// One task of an array as the throttle sees it.
struct ArrayMember {
  JobId job;
  ArrayTask task;
  // Holds (or is about to get) its GPUs: STARTING or RUNNING. False: pending and otherwise
  // free to be scheduled (the caller leaves out tasks that wait for a dependency).
  bool running = false;
};

// The pending members that must sit this pass out, each with its reason
// ("array 40: 4 tasks running, limit 4"). Per array with a max_running, the pending tasks
// beyond max_running - running, lowest index first. Arrays without a limit hold nothing.
std::map<JobId, PendingReason> ThrottledTasks(const std::vector<ArrayMember>& members);

// "40_3": how views and messages name a task (array id, underscore, index), as Slurm does.
std::string ArrayTaskName(const ArrayTask& task);

// Rule 2 for one pending gang member: "waiting for its gang's members 12, 13 to stop: the gang
// starts again whole", or nullopt when no member holds GPUs (or `job` is in no gang).
std::optional<PendingReason> GangHoldReason(const std::map<JobId, Job>& active, const Job& job);

}  // namespace gf
