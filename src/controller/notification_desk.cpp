// NotificationDesk (notification_desk.h): the turn's notifications routed and handed over,
// subscriptions, budget alerts.
#include "controller/notification_desk.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "notify/notifier.h"

namespace gf {

NotificationDesk::NotificationDesk(const PolicyConfig& policy,
                                   Notifier* notifier,
                                   NotificationDeskParts parts)
    : policy_(policy), notifier_(notifier), p_(std::move(parts)) {}

// Routed once the turn is done, in the order raised, each handed over after the commit.
void NotificationDesk::HandOver() {
  for (Notification& notification : std::exchange(p_.out.notifications, {})) {
    std::vector<Subscription> matches = router_.Route(notification);
    p_.out.After([notifier = notifier_, n = std::move(notification), matches = std::move(matches)] {
      spdlog::info("notify: {}: {} ({} subscription{})",
                   ToString(n.kind),
                   n.subject,
                   matches.size(),
                   matches.size() == 1 ? "" : "s");
      if (notifier == nullptr) {
        return;
      }
      for (const Subscription& sub : matches) {
        notifier->Send(n, sub);
      }
    });
  }
}

Status NotificationDesk::Load(StoreReader& store) {
  GF_ASSIGN_OR_RETURN(std::vector<Subscription> subs, store.ListSubscriptions());
  // Requires p_.usage.Load: the thresholds already reached count as sent.
  router_.Load(std::move(subs), p_.usage.CurrentPeriod().start, TeamBudgets(p_.clock.Now()));
  return OkStatus();
}

std::vector<TeamQuota> NotificationDesk::TeamBudgets(Time now) const {
  std::vector<TeamQuota> teams;
  for (const auto& [team, hours] : p_.usage.TeamHours(p_.running_spans(), now)) {
    TeamQuota quota{.team = team, .used_gpu_hours = hours};
    FillTeamPolicy(policy_,
                   quota);  // the budget `team` runs under, as `gpufleet quota` shows it
    teams.push_back(std::move(quota));
  }
  return teams;
}

void NotificationDesk::CheckBudgets() {
  const Time now = p_.clock.Now();
  if (policy_.teams.empty() || !router_.BudgetCheckDue(now)) {
    return;  // no teams: no budgets (FillTeamPolicy)
  }
  // The period first (a new month starts every team afresh), then the use in it.
  const Time period_start = p_.usage.CurrentPeriod().start;
  for (BudgetAlert& alert : router_.CheckBudgets(now, period_start, TeamBudgets(now))) {
    p_.jobs.Record(std::nullopt, "quota", "scheduler", alert.event);
    p_.out.Notify(std::move(alert.notification));
  }
}

std::vector<NotificationCount> NotificationDesk::Counts() const {
  std::vector<NotificationCount> out;
  if (notifier_ == nullptr) {
    return out;
  }
  for (const DeliveryCount& c : notifier_->Counts()) {
    out.push_back({.channel = c.channel, .outcome = c.outcome, .count = c.count});
  }
  return out;
}

Result<Subscription> NotificationDesk::Add(const Caller& caller, Subscription sub) {
  p_.out.batch.subscriptions.push_back(sub);
  router_.Add(sub);
  p_.jobs.Record(std::nullopt, "subscription", caller.user, "created " + DescribeSubscription(sub));
  return sub;
}

Result<Subscription> NotificationDesk::Remove(const Caller& caller, const std::string& id) {
  GF_ASSIGN_OR_RETURN(Subscription removed, router_.Remove(caller, id));
  p_.out.batch.removed_subscriptions.push_back(id);
  p_.jobs.Record(
      std::nullopt, "subscription", caller.user, "removed " + DescribeSubscription(removed));
  return removed;
}

}  // namespace gf
