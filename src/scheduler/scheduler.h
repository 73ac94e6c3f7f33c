// The scheduler core (DESIGN.md §3, decided): a pure function from a snapshot of the cluster
// and the queue to decisions. No I/O, threads, clocks, globals or locks: the controller and
// `gpufleet sim` call the same code, and every policy is testable on its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/pending_reason.h"
#include "model/snapshot.h"
#include "model/start_estimate.h"
#include "scheduler/policy.h"

namespace gf {

struct StartDecision {
  JobId job;
  Allocation allocation;
  bool preemptible = false;  // borrowed (beyond its team's guarantee, or over budget)
};

struct PendingDecision {
  JobId job;
  // Its stage and code, and for a person "needs 4 GPUs; 0 free", "behind job 17 (high ...)".
  PendingReason reason;
  // When it is expected to start: now for a job whose victims are stopping, the reservation's
  // start for a job that holds one; nullopt when not known.
  std::optional<Time> estimated_start;
  // With estimated_start (its `latest`): from how early, and whether time limits, predicted
  // run times or a preemption give it (model/start_estimate.h).
  std::optional<StartEstimate> start_estimate{};
  std::optional<Allocation> reservation;  // the GPUs set aside for it (reservation, preemption)
};

// Stop `victim` (checkpoint signal, grace period, kill) and requeue it keeping its place, so
// that `for_job` can start; `cause` is recorded and shown to the victim's owner.
struct PreemptDecision {
  JobId victim;
  JobId for_job;
  std::string cause;  // "preempted for job 9: high priority beats low"
};

struct Decisions {
  std::vector<StartDecision> starts;
  std::vector<PendingDecision> pending;  // one entry for every queued job not started (Listing)
  std::vector<PreemptDecision> preemptions;
};

// Which waiting jobs a pass lists in Decisions::pending. The starts and preemptions are the
// same either way.
enum class Listing {
  // Every queued job that did not start, with its reason: what the controller shows users.
  kEveryJob,
  // Not the jobs the pass passed over: once no reservation is left to anyone (nor a
  // preemption, for a one-node job; with backfill off, no claim beyond those made), a job
  // whose request is sure not to find GPUs (a no smaller one found none) changes nothing and
  // is not looked at (Pass::SurelyWaits). A pass that leaves jobs waiting still lists one:
  // the first that found no GPUs. For a caller that reads only what a pass changes and the
  // reasons or estimated starts of the jobs before that point (`gpufleet sim`): a deep queue
  // behind a full cluster then costs a pass a few lookups per job instead of a reason each.
  kLookedAt,
};

Decisions Decide(const ClusterSnapshot& cluster,
                 const Queue& queue,
                 const PolicyConfig& policy,
                 Time now,
                 Listing listing = Listing::kEveryJob);

// Whether a request can ever run on this cluster (ignoring what is busy now): used to reject
// a submission at once. Errors (kInvalidArgument) name the field: "gpus: 9 GPUs requested,
// the largest node has 8", "gpu-type: no GPU of type 'V100'; this cluster has H100-80GB".
Status CheckFeasible(const ClusterSnapshot& cluster, const JobRequest& request);

}  // namespace gf
