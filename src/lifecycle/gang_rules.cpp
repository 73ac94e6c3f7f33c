#include "lifecycle/gang_rules.h"

#include <algorithm>

namespace gf {

std::string GangMemberName(JobId job, int rank, int size) {
  return "member " + std::to_string(job.value()) + " (node " + std::to_string(rank + 1) + " of " +
         std::to_string(size) + ")";
}

std::vector<GangAction> SettleGang(const std::vector<GangMemberState>& members) {
  std::vector<GangAction> actions;
  const auto name = [](const GangMemberState& m) {
    return GangMemberName(m.job, m.rank, m.size);
  };
  // The first member (by rank) that ended other than COMPLETED, or is being stopped to end so.
  const auto by_rank = [](const GangMemberState* a, const GangMemberState* b) {
    return a->rank < b->rank;
  };
  std::vector<const GangMemberState*> ranked;
  ranked.reserve(members.size());
  for (const GangMemberState& m : members) {
    ranked.push_back(&m);
  }
  std::sort(ranked.begin(), ranked.end(), by_rank);
  const auto failed = std::find_if(ranked.begin(), ranked.end(), [](const GangMemberState* m) {
    if (IsTerminal(m->state)) {
      return m->state != JobState::kCompleted;
    }
    return m->stopping.has_value() && !Requeues(*m->stopping);
  });
  if (failed != ranked.end()) {
    const GangMemberState& cause_member = **failed;
    const std::string cause =
        "its gang's " + name(cause_member) +
        (IsTerminal(cause_member.state) ? " ended " + std::string(ToString(cause_member.state))
                                        : std::string(" is being stopped")) +
        " (" + cause_member.reason + ")";
    for (const GangMemberState* m : ranked) {
      if (IsTerminal(m->state) || m == &cause_member) {
        continue;
      }
      if (m->state == JobState::kPending) {
        actions.push_back(GangAction{.job = m->job, .step = GangStep::kCancel, .cause = cause});
      } else if (!m->stopping.has_value()) {
        actions.push_back(
            GangAction{.job = m->job, .step = GangStep::kStopToCancel, .cause = cause});
      } else if (Requeues(*m->stopping)) {
        actions.push_back(
            GangAction{.job = m->job, .step = GangStep::kRetargetToCancel, .cause = cause});
      }
    }
    return actions;
  }
  const auto requeued = std::find_if(ranked.begin(), ranked.end(), [](const GangMemberState* m) {
    return m->state == JobState::kPending || (m->stopping.has_value() && Requeues(*m->stopping));
  });
  if (requeued == ranked.end()) {
    return actions;
  }
  const std::string cause =
      "requeued with its gang's " + name(**requeued) + " (" + (*requeued)->reason + ")";
  for (const GangMemberState* m : ranked) {
    const bool holds = m->state == JobState::kStarting || m->state == JobState::kRunning;
    if (holds && !m->stopping.has_value()) {
      actions.push_back(
          GangAction{.job = m->job, .step = GangStep::kStopToRequeue, .cause = cause});
    }
  }
  return actions;
}

}  // namespace gf
