// The rules that keep a multi-node (gang) job whole (docs/scheduling.md, decision 0005): its
// members are jobs of their own, started together by the scheduler, and stopped together here.
// - A member that ended other than COMPLETED (failed, cancelled, timed out), or that is being
//   stopped to end so: the gang cannot go on; every other member is cancelled (a pending one at
//   once, a running one through a kill, one being stopped to be requeued ends CANCELLED
//   instead).
// - Else a member back in the queue, or being stopped to go back: every member still running
//   follows it (stopped with its checkpoint signal and requeued), so the gang starts again
//   whole (admission.h holds its members back until all have stopped).
// The controller and the simulator apply the actions SettleGang returns, each in its own way
// (a kill through the node's agent; a stop at the virtual instant). Pure; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/ids.h"
#include "lifecycle/stop_intent.h"
#include "model/job.h"

namespace gf {

// The members of `gang` still in `active` (jobs by id), by rank: Job* or const Job* as `active`
// is. Members of a gang have consecutive ids from the gang's first (GangMember::gang_job).
template <typename Active>
auto GangMembers(Active& active, const GangMember& gang) {
  std::vector<decltype(&active.begin()->second)> members;
  for (int rank = 0; rank < gang.size; ++rank) {
    const auto it = active.find(JobId(gang.gang_job.value() + rank));
    if (it != active.end() && it->second.spec.gang.has_value() &&
        it->second.spec.gang->gang_job == gang.gang_job) {
      members.push_back(&it->second);
    }
  }
  return members;
}

// One member as the rules see it.
struct GangMemberState {
  JobId job;
  int rank = 0;  // 0-based
  int size = 1;
  JobState state = JobState::kPending;
  std::string reason;                  // its reason or cause (quoted in the others' causes)
  std::optional<StopIntent> stopping;  // set while it is being stopped
};

enum class GangStep {
  kCancel,            // pending: ends CANCELLED now
  kStopToCancel,      // holds GPUs: stop it (SIGTERM, then SIGKILL); it ends CANCELLED
  kRetargetToCancel,  // being stopped to be requeued: it ends CANCELLED instead
  kStopToRequeue,     // holds GPUs: stop it with its checkpoint signal; it is requeued
};

struct GangAction {
  JobId job;
  GangStep step = GangStep::kCancel;
  std::string cause;  // "its gang's member 12 (node 1 of 2) ended FAILED (exit 1)"
};

// What the gang's members must do now, given all of them (any order); empty when the gang is
// whole (every member running, pending or completed alike). Applying the actions and asking
// again returns nothing more.
std::vector<GangAction> SettleGang(const std::vector<GangMemberState>& members);

// "member 12 (node 1 of 2)": how causes name a member.
std::string GangMemberName(JobId job, int rank, int size);

}  // namespace gf
