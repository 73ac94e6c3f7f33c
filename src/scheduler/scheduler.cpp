// Decide() v1: composes the ordering stage (ordering/priority_order.h) with the whole-GPU
// placement stage (placement/whole_gpu_fit.h). See README.md for the algorithm.
//
// Assumptions (v1):
// - Strict priority order, no backfill: there is no reasoning about when running jobs end.
// - A job that waits for busy GPUs ("blocked") claims every GPU it could ever use on the up
//   nodes; no job after it in the order may take a claimed GPU, so no later job delays it.
//   In a cluster of one GPU model this means a blocked job blocks every later GPU job of the
//   same or lower priority; jobs that need a model or node size the blocked job cannot use,
//   and CPU-only jobs, still start. Higher priority jobs come first in the order, so a
//   lower priority job never blocks them.
// - A job that cannot start on the up nodes even once every running job has ended (too
//   large, a model no up node has, no node up) claims nothing: waiting for it would idle the
//   cluster for nothing. Its reason says what it needs.
#include "scheduler/scheduler.h"

#include <algorithm>
#include <optional>
#include <set>

#include "scheduler/ordering/priority_order.h"
#include "scheduler/placement/whole_gpu_fit.h"

namespace gf {
namespace {

// A job that waits for busy GPUs, and the GPUs it keeps later jobs from taking.
struct Blocker {
  const QueuedJob* job;
  std::set<GpuUuid> claimed;
};

bool Intersects(const std::set<GpuUuid>& set, const std::vector<GpuUuid>& gpus) {
  return std::any_of(gpus.begin(), gpus.end(), [&](const GpuUuid& g) { return set.contains(g); });
}

// "behind job 17 (high priority, needs 4 GPUs)": names the first blocker whose claim covers
// one of `gpus`; nullopt when no blocker claims any of them.
std::optional<std::string> BehindReason(const std::vector<Blocker>& blockers,
                                        const std::vector<GpuUuid>& gpus) {
  for (const Blocker& blocker : blockers) {
    if (Intersects(blocker.claimed, gpus)) {
      return "behind job " + std::to_string(blocker.job->id.value()) + " (" +
             std::string(ToString(blocker.job->priority)) + " priority, needs " +
             DescribeRequest(blocker.job->request) + ")";
    }
  }
  return std::nullopt;
}

// The reason a job that cannot start now stays pending; records it as a blocker when it
// waits for GPUs that running jobs hold.
std::string PendingReason(const Capacity& capacity,
                          const QueuedJob& job,
                          std::vector<Blocker>& blockers) {
  if (job.request.gpus < 0) {
    return "invalid request: gpus is " + std::to_string(job.request.gpus) + ", must be 0 or more";
  }
  if (job.request.gpus == 0) {
    return ExplainNoFit(capacity, job.request);  // only when no node is up
  }
  std::set<GpuUuid> could_use = CouldEverUse(capacity, job.request);
  // A job that would fit but for the claims waits behind their owner. One that does not fit
  // even so still names the earlier job waiting for the same GPUs first (as Slurm's
  // "Priority" reason): those GPUs go to that job when they free up.
  const std::optional<Allocation> unclaimed = FindBestFit(capacity, job.request, {});
  const std::optional<std::string> behind = BehindReason(
      blockers, unclaimed.has_value() ? unclaimed->gpus
                                      : std::vector<GpuUuid>(could_use.begin(), could_use.end()));
  std::string reason = behind.has_value() ? *behind : ExplainNoFit(capacity, job.request);
  if (!could_use.empty()) {
    blockers.push_back(Blocker{.job = &job, .claimed = std::move(could_use)});
  }
  return reason;
}

}  // namespace

Decisions Decide(const ClusterSnapshot& cluster,
                 const Queue& queue,
                 const PolicyConfig& /*policy: v1 has no knobs*/,
                 Time /*now: unused in v1*/) {
  Decisions decisions;
  Capacity capacity = BuildCapacity(cluster);
  std::vector<Blocker> blockers;
  std::set<GpuUuid> claimed;  // union of the blockers' claims
  for (const QueuedJob* job : PriorityOrder(queue)) {
    std::optional<Allocation> allocation;
    if (job->request.gpus >= 0) {
      allocation = FindBestFit(capacity, job->request, claimed);
    }
    if (allocation.has_value()) {
      Reserve(capacity, *allocation);
      decisions.starts.push_back(StartDecision{.job = job->id, .allocation = *allocation});
      continue;
    }
    const std::size_t blockers_before = blockers.size();
    std::string reason = PendingReason(capacity, *job, blockers);
    if (blockers.size() > blockers_before) {
      claimed.insert(blockers.back().claimed.begin(), blockers.back().claimed.end());
    }
    decisions.pending.push_back(PendingDecision{.job = job->id, .reason = std::move(reason)});
  }
  return decisions;
}

Status CheckFeasible(const ClusterSnapshot& cluster, const JobRequest& request) {
  if (request.gpus < 0) {
    return InvalidArgument("gpus: must be 0 or more, got " + std::to_string(request.gpus));
  }
  // Nodes that are not down may take work again (draining and drained ones are undrained);
  // failed GPUs are left out, they need repair first.
  const Capacity capacity = BuildCapacity(cluster, NodeScope::kNotDown);
  if (capacity.nodes.empty() || request.gpus == 0) {
    // With no node known nothing can be judged, and agents may join later: accept.
    return OkStatus();
  }
  const int largest = LargestUsable(capacity, request);
  const bool typed = request.gpu_type.has_value() && !request.gpu_type->empty();
  if (typed && largest == 0) {
    const std::string models = UsableModels(capacity);
    return InvalidArgument("gpu-type: no GPU of type '" + *request.gpu_type +
                           "' in this cluster; " +
                           (models.empty() ? "it has no usable GPU" : "types: " + models));
  }
  if (largest < request.gpus) {
    return InvalidArgument("gpus: " + DescribeRequest(request) +
                           " requested on one node, the largest node has " +
                           std::to_string(largest) + (typed ? " of that type" : ""));
  }
  return OkStatus();
}

}  // namespace gf
