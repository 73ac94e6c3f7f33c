#include "controller/explain_privacy.h"

#include <optional>
#include <utility>
#include <vector>

namespace gf {

void HideOtherUsersJobs(Explanation& explanation, const std::function<bool(JobId)>& may_see) {
  const auto hidden = [&](const std::optional<JobId>& job) {
    return job.has_value() && !may_see(*job);
  };
  for (JobAhead& ahead : explanation.ahead) {
    if (hidden(ahead.id)) {
      ahead.id.reset();
    }
  }
  for (NodeExplanation& node : explanation.nodes) {
    for (GpuHold& hold : node.held) {
      if (hidden(hold.job)) {
        hold.job.reset();
        hold.other_user = true;
        // A running job's `until` is its start plus its time limit, a starting one's its end:
        // theirs to know. A reservation's start is when this job's GPUs are promised away.
        if (hold.kind == "running" || hold.kind == "started") {
          hold.until.reset();
        }
      }
      if (hidden(hold.then_for)) {
        hold.then_for.reset();
        hold.then_for_other_user = true;
      }
    }
    for (VictimCandidate& victim : node.victims) {
      if (hidden(victim.job)) {
        victim.job.reset();
      }
    }
  }
  std::vector<JobId> seen;
  for (const JobId victim : explanation.preempts) {
    if (may_see(victim)) {
      seen.push_back(victim);
    } else {
      ++explanation.preempts_other_users;
    }
  }
  explanation.preempts = std::move(seen);
}

}  // namespace gf
