// Job arrays (`gpufleet submit --array 0-99%4`): checking an array request, and the throttle
// that keeps at most max_running tasks of an array holding GPUs.
//
// The controller expands an array into one job per index at submit (service/service.h,
// SubmitArray); from then on each task is an ordinary job that carries JobSpec::array. Only the
// throttle looks at tasks together: before each scheduling pass the controller gives Decide() at
// most `max_running - (tasks of the array holding GPUs)` pending tasks of each array, lowest index
// first, and the others wait with a reason. Pure functions; safe from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "model/job.h"
#include "service/service.h"

namespace gf {

// Checks an array request: 1 to kMaxArrayTasks indices, each 0..kMaxArrayIndex, none twice,
// max_running >= 1 when given. Errors: kInvalidArgument naming the field and the fix.
Status ValidateArrayRequest(const ArrayRequest& array);

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
std::map<JobId, std::string> ThrottledTasks(const std::vector<ArrayMember>& members);

// "40_3": how views and messages name a task (array id, underscore, index), as Slurm does.
std::string ArrayTaskName(const ArrayTask& task);

}  // namespace gf
