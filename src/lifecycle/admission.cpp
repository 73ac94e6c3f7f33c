#include "lifecycle/admission.h"

#include <algorithm>

#include "lifecycle/gang_rules.h"

namespace gf {

std::map<JobId, PendingReason> HeldBack(const std::map<JobId, Job>& active,
                                        const DependencyGraph& dependencies) {
  std::map<JobId, PendingReason> held;
  std::vector<ArrayMember> members;
  for (const auto& [id, job] : active) {
    if (job.state == JobState::kPending) {
      if (std::optional<PendingReason> hold = HoldReason(job)) {
        held.emplace(id, std::move(*hold));
        continue;  // not a candidate until released: takes no place in its array's throttle
      }
      if (std::optional<Dependency> waiting = dependencies.FirstUnmet(id)) {
        held.emplace(id, WaitingReason(*waiting));
        continue;  // not yet a candidate: takes no place in its array's throttle
      }
      if (std::optional<PendingReason> reason = GangHoldReason(active, job)) {
        held.emplace(id, std::move(*reason));
        continue;
      }
    } else if (!HoldsGpus(job)) {
      continue;
    }
    if (job.spec.array && job.spec.array->max_running) {
      members.push_back(ArrayMember{
          .job = id, .task = *job.spec.array, .running = job.state != JobState::kPending});
    }
  }
  held.merge(ThrottledTasks(members));
  return held;
}

std::optional<PendingReason> HoldReason(const Job& job) {
  if (job.held_by.empty()) {
    return std::nullopt;
  }
  const std::string release = "gpufleet release " + std::to_string(job.id.value());
  if (job.held_by == job.owner.user) {
    return PendingReason::Of(PendingCode::kHeld, "held by " + job.held_by + ": " + release);
  }
  return PendingReason::Of(PendingCode::kHeld,
                           "held by " + job.held_by +
                               " (an administrator's hold): an operator or an admin releases it "
                               "with " +
                               release);
}

std::map<JobId, PendingReason> ThrottledTasks(const std::vector<ArrayMember>& members) {
  struct Array {
    int limit = 0;
    int running = 0;
    std::vector<const ArrayMember*> pending;
  };
  std::map<JobId, Array> arrays;
  for (const ArrayMember& m : members) {
    if (!m.task.max_running) {
      continue;
    }
    Array& a = arrays[m.task.array_job];
    a.limit = *m.task.max_running;
    if (m.running) {
      a.running += 1;
    } else {
      a.pending.push_back(&m);
    }
  }
  std::map<JobId, PendingReason> held;
  for (auto& [id, a] : arrays) {
    // Lowest index first, as Slurm starts array tasks; the job id breaks ties (none expected).
    std::sort(a.pending.begin(), a.pending.end(), [](const ArrayMember* x, const ArrayMember* y) {
      return x->task.index != y->task.index ? x->task.index < y->task.index : x->job < y->job;
    });
    const auto room = static_cast<std::size_t>(std::max(0, a.limit - a.running));
    const std::string running =
        std::to_string(a.running) + (a.running == 1 ? " task" : " tasks") + " running";
    // With room left, the tasks before it by index take that room first.
    const PendingReason reason = PendingReason::Of(
        PendingCode::kArrayLimit,
        "array " + std::to_string(id.value()) + ": " +
            (room == 0 ? running + ", limit " + std::to_string(a.limit)
                       : "at most " + std::to_string(a.limit) + " at once; " + running + ", " +
                             std::to_string(room) + " lower-index " +
                             (room == 1 ? "task goes" : "tasks go") + " first"));
    for (std::size_t i = room; i < a.pending.size(); ++i) {
      held.emplace(a.pending[i]->job, reason);
    }
  }
  return held;
}

std::string ArrayTaskName(const ArrayTask& task) {
  return std::to_string(task.array_job.value()) + "_" + std::to_string(task.index);
}

std::optional<PendingReason> GangHoldReason(const std::map<JobId, Job>& active, const Job& job) {
  if (!job.spec.gang.has_value()) {
    return std::nullopt;
  }
  std::string holding;
  for (const Job* member : GangMembers(active, *job.spec.gang)) {
    if (HoldsGpus(*member)) {
      holding += (holding.empty() ? "" : ", ") + std::to_string(member->id.value());
    }
  }
  if (holding.empty()) {
    return std::nullopt;
  }
  return PendingReason::Of(
      PendingCode::kGangStopping,
      "waiting for its gang's members " + holding + " to stop: the gang starts again whole");
}

}  // namespace gf
