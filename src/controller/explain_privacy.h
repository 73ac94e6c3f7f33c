// What `gpufleet explain` may say about other users' jobs. An explanation names the jobs that
// stand in this one's way: the jobs ahead, the job holding or setting aside each GPU (with its
// expected end), the running jobs it could preempt. A caller who may not read other users'
// jobs (authorization.h: job read other's) must not learn their ids or when they end from it,
// as `gpufleet show` answers "not found" for them (decision 0001). It still learns that a job
// of another user is there and what it does with the GPUs, which is what explains the wait; the
// pending reason keeps naming the job ahead, as decision 0001 allows ("behind job 17 ...").
//
// The scheduler explains without knowing who asks (scheduler/explain.h); the controller hides
// afterwards, on its state thread, with what it knows of each job's owner.
//
// Pure function; thread-safe.
#pragma once

#include <functional>

#include "core/ids.h"
#include "model/explanation.h"

namespace gf {

// Leaves out of `explanation` the ids of the jobs `may_see` refuses, and the end times of those
// that hold GPUs: JobAhead::id, GpuHold::job and ::then_for (marking ::other_user and
// ::then_for_other_user), GpuHold::until of a running or starting job, VictimCandidate::job,
// and Explanation::preempts (counted in ::preempts_other_users instead). Everything else, the
// explained job's own figures included, stays.
void HideOtherUsersJobs(Explanation& explanation, const std::function<bool(JobId)>& may_see);

}  // namespace gf
