#include "lifecycle/wakeups.h"

#include "scheduler/ordering/baseline.h"

namespace gf {

std::optional<Time> NextPassAt(const std::vector<RunningJob>& running,
                               const PolicyConfig& policy,
                               Time now) {
  if (!policy.preemption.enabled) {
    return std::nullopt;
  }
  std::optional<Time> next;
  const auto consider = [&](Time at) {
    if (at > now && (!next || at < *next)) {
      next = at;
    }
  };
  for (const RunningJob& job : running) {
    if (job.stopping) {
      continue;  // it leaves anyway: nothing to preempt
    }
    consider(job.start_time + policy.preemption.min_run_time);
    if (const std::optional<Time> change = NextRankChange(job, policy, now)) {
      consider(*change);
    }
  }
  return next;
}

}  // namespace gf
