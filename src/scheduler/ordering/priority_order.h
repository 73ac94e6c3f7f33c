// Ordering stage of the scheduler ("who goes next"), apart from placement ("where does it
// fit"), as in the Mesos allocator's sorters and the Kubernetes QueueSort plugin.
//
// Assumptions (v1): the only ordering signals are the job's priority class, its submit time
// and its id. Fair share and quotas (later issues) become further orderings behind the same
// kind of function.
//
// Algorithm: a stable sort by (priority class tier (ClassTable), submit time, job id). Job ids
// increase in submit order, so the id only breaks ties between jobs submitted in the same
// millisecond, and the order is total for distinct ids: the result never depends on the queue's
// input order.
//
// Pure functions over values: safe to call from any thread.
#pragma once

#include <vector>

#include "model/snapshot.h"
#include "scheduler/classes.h"

namespace gf {

// True when `a` is considered before `b`: higher priority class (earlier tier of `classes`)
// first, then earlier submit time, then lower job id.
bool ComesBefore(const QueuedJob& a, const QueuedJob& b, const ClassTable& classes);

// The queue's jobs in scheduling order. The pointers point into `queue.pending` and are
// valid while `queue` is alive and unchanged.
std::vector<const QueuedJob*> PriorityOrder(const Queue& queue, const ClassTable& classes);

}  // namespace gf
