// PassProbe: a look inside one Decide() pass at the moment it reaches one job, for Explain()
// (explain.h). An explanation must never disagree with a decision, so it is read from the
// pass itself (its GPU pool, ledger and order, with everything the jobs ahead set aside)
// rather than from a second model of the cluster.
//
// The view is valid only during the probe call: the pass goes on changing its state after.
// Pure, like Decide: safe from any thread.
#pragma once

#include <functional>
#include <vector>

#include "core/clock.h"
#include "model/snapshot.h"
#include "scheduler/placement/gpu_pool.h"
#include "scheduler/policy.h"
#include "scheduler/quota/ledger.h"
#include "scheduler/scheduler.h"

namespace gf {

// The pass just before it considers the probed job.
struct PassView {
  const GpuPool& pool;                         // what the jobs ahead took, claimed, reserved
  const Ledger& ledger;                        // GPUs counted per team and user so far
  const std::vector<const QueuedJob*>& order;  // the whole queue in scheduling order
  int position;                                // the probed job's place in `order`
  const Decisions& so_far;                     // the decisions for the jobs ahead of it
};

using PassProbe = std::function<void(const PassView&)>;

// Decide() up to job `target`: calls `probe` just before the pass considers it, considers it,
// and stops. The decisions returned are Decide()'s for the jobs ahead of `target` and for
// `target` (a pass decides in order, so later jobs change none of them). When `target` is not
// queued the probe is not called and the decisions cover the whole queue.
Decisions DecideUpTo(const ClusterSnapshot& cluster,
                     const Queue& queue,
                     const PolicyConfig& policy,
                     Time now,
                     JobId target,
                     const PassProbe& probe);

}  // namespace gf
