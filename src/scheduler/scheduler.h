// The scheduler core (DESIGN.md §3, decided): a pure function from a snapshot of the cluster
// and the queue to decisions. No I/O, threads, clocks, globals or locks: the controller and
// `gpufleet sim` call the same code, and every policy is testable on its own.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/snapshot.h"

namespace gf {

struct PolicyConfig {
  // Room for later policies (quotas, fair share, backfill); v1 has no knobs.
};

struct StartDecision {
  JobId job;
  Allocation allocation;
};

struct PendingDecision {
  JobId job;
  std::string reason;  // "needs 4 GPUs, 2 free", "behind job 17 (high)"
};

struct Decisions {
  std::vector<StartDecision> starts;
  std::vector<PendingDecision> pending;  // one entry for every queued job not started
};

Decisions Decide(const ClusterSnapshot& cluster,
                 const Queue& queue,
                 const PolicyConfig& policy,
                 Time now);

// Whether a request can ever run on this cluster (ignoring what is busy now): used to reject
// a submission at once. Errors (kInvalidArgument) name the field: "gpus: 9 GPUs requested,
// the largest node has 8", "gpu-type: no GPU of type 'V100'; this cluster has H100-80GB".
Status CheckFeasible(const ClusterSnapshot& cluster, const JobRequest& request);

}  // namespace gf
