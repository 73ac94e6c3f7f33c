#include "scheduler/quota/ledger.h"

#include <algorithm>
#include <cmath>

#include "model/team.h"

namespace gf {
namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

// "1050.5" → "1050.5", "1000" → "1000": GPU-hours as a person writes them.
std::string Hours(double hours) {
  // One decimal reads well for budgets of hours; below one hour (a tiny budget, a test's) four
  // decimals, so that "0.0012 of 0.001" does not read "0 of 0".
  const double scale = std::abs(hours) < 1 ? 1e4 : 10;
  std::string text = std::to_string(std::round(hours * scale) / scale);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') {
    text.pop_back();
  }
  return text;
}

QuotaVerdict Refuse(PendingReason reason) {
  return QuotaVerdict{
      .may_start = false, .borrowed = false, .guarantee_right = false, .reason = std::move(reason)};
}

}  // namespace

Ledger::Ledger(const PolicyConfig& policy,
               const ClusterSnapshot& cluster,
               const ClassTable& classes)
    : policy_(policy),
      quotas_on_(!policy.teams.empty()),
      classes_(classes),
      user_class_held_(classes.Configured() + 1),
      usage_(cluster.team_usage) {
  for (const TeamPolicy& team : policy.teams) {
    listed_.emplace(team.name, team);
  }
  for (std::size_t r = 0; r < cluster.running.size(); ++r) {
    const RunningJob& job = cluster.running[r];
    if (!job.stopping) {
      Add(job.team, job.user, classes.OfRunning(static_cast<int>(r)), HeldMilli(job.allocation));
    }
  }
}

Ledger::TeamState& Ledger::StateOf(const std::string& team) const {
  // The order groups a (team, user)'s jobs together, so most lookups repeat the last one.
  if (last_ != nullptr && last_->first == team) {
    return last_->second;
  }
  auto it = teams_.find(team);
  if (it == teams_.end()) {
    TeamState state;
    const auto listed = listed_.find(team);
    state.policy = listed == listed_.end() ? &policy_.other_teams : &listed->second;
    const auto usage = usage_.find(team);
    state.period_gpu_hours = usage == usage_.end() ? 0 : usage->second.period_gpu_hours;
    const TeamPolicy& policy = *state.policy;
    if (policy.gpu_hour_budget.has_value() && state.period_gpu_hours >= *policy.gpu_hour_budget) {
      // Written once per team and pass: a deep queue of a held team repeats it per job.
      state.over_budget = "team " + TeamLabel(team) + " is over its GPU-hour budget (" +
                          Hours(state.period_gpu_hours) + " of " + Hours(*policy.gpu_hour_budget) +
                          " this period); waits until an admin raises the budget or approves "
                          "the job";
    }
    it = teams_.emplace(team, std::move(state)).first;
  }
  last_ = &*it;  // a pointer to an element survives rehashing; an iterator would not
  return it->second;
}

void Ledger::Add(const std::string& team, const std::string& user, ClassIndex cls, int milli) {
  StateOf(team).held += milli;
  user_class_held_[cls][user] += milli;
}

void Ledger::Remove(const RunningJob& job) {
  const int milli = HeldMilli(job.allocation);
  StateOf(job.team).held -= milli;
  user_class_held_[classes_.IndexOf(job.priority)][job.user] -= milli;  // rare: victims only
}

bool Ledger::BelowGuarantee(const std::string& team) const {
  if (!quotas_on_) {
    return false;
  }
  const TeamState& state = StateOf(team);
  return state.held < state.policy->guaranteed_gpus * kWholeGpuMilli;
}

double Ledger::Weight(const std::string& team) const {
  return quotas_on_ ? StateOf(team).policy->fair_share_weight : 1.0;
}

QuotaVerdict Ledger::Check(const QueuedJob& job, ClassIndex c, int milli) const {
  const PriorityClassPolicy& cls = classes_.Policy(c);
  if (!cls.allowed_users.empty() &&
      std::find(cls.allowed_users.begin(), cls.allowed_users.end(), job.user) ==
          cls.allowed_users.end()) {
    return Refuse(PendingReason::Of(PendingCode::kClassNotAllowed,
                                    "user " +
                                        (job.user.empty() ? std::string("(unknown)") : job.user) +
                                        " may not use priority class " + cls.name +
                                        " (allowed: " + Join(cls.allowed_users) + ")"));
  }
  if (cls.max_gpus_per_user.has_value()) {
    const auto it = user_class_held_[c].find(job.user);
    const int held = it == user_class_held_[c].end() ? 0 : it->second;
    if (held + milli > *cls.max_gpus_per_user * kWholeGpuMilli) {
      // A job that asks more than the class allows a user in all waits for nothing.
      return Refuse(PendingReason::Of(
          PendingCode::kUserClassLimit,
          milli <= *cls.max_gpus_per_user * kWholeGpuMilli,
          "user " + job.user + " holds " + GpuAmountText(held) + " GPUs in class " + cls.name +
              ", which allows " + std::to_string(*cls.max_gpus_per_user) +
              " per user; this job needs " + GpuAmountText(milli) + " more"));
    }
  }
  return CheckTeam(job, milli);
}

PendingReason Ledger::AtLimitReason(const std::string& team, TeamState& state, int milli) const {
  const auto write = [&] {
    // A job that asks more than max_gpus in all waits for nothing.
    return PendingReason::Of(PendingCode::kTeamMaxGpus,
                             milli <= *state.policy->max_gpus * kWholeGpuMilli,
                             "team " + TeamLabel(team) + " is at its limit: holds " +
                                 GpuAmountText(state.held) + " of max_gpus " +
                                 std::to_string(*state.policy->max_gpus) + "; this job needs " +
                                 GpuAmountText(milli) + " more");
  };
  constexpr int kRemembered = 64;  // GPU counts a node can have; larger asks (and shares) are rare
  if (milli % kWholeGpuMilli != 0 || milli / kWholeGpuMilli >= kRemembered) {
    return write();
  }
  const auto slot = static_cast<std::size_t>(milli / kWholeGpuMilli);
  if (state.at_limit.size() <= slot) {
    state.at_limit.resize(slot + 1, {-1, PendingReason()});
  }
  auto& [held, reason] = state.at_limit[slot];
  if (held != state.held) {
    held = state.held;
    reason = write();
  }
  return reason;
}

QuotaVerdict Ledger::CheckTeam(const QueuedJob& job, int milli) const {
  if (!quotas_on_ || milli == 0) {
    return QuotaVerdict{};
  }
  TeamState& state = StateOf(job.team);
  const TeamPolicy& team = *state.policy;
  if (team.max_gpus.has_value() && state.held + milli > *team.max_gpus * kWholeGpuMilli) {
    return Refuse(AtLimitReason(job.team, state, milli));
  }
  const bool over_budget = !state.over_budget.empty();
  if (over_budget && team.over_budget == OverBudget::kHold && !job.budget_approved) {
    return Refuse(PendingReason::Of(PendingCode::kBudgetExhausted, state.over_budget));
  }
  // An approved job runs as if the team were within its budget.
  const bool limited = over_budget && !job.budget_approved;
  const bool within_guarantee = state.held + milli <= team.guaranteed_gpus * kWholeGpuMilli;
  return QuotaVerdict{.may_start = true,
                      .borrowed = limited || !within_guarantee,
                      .guarantee_right = !limited && within_guarantee,
                      .reason = {}};
}

}  // namespace gf
