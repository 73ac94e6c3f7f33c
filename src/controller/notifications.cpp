// Notifications (issue #8), the controller's side: what the NotificationRouter
// (notification_router.h) decides is stored with the turn, recorded as events, and handed to
// the Notifier (notify/notifier.h) only after the turn that raised it is durable.
//
// State thread only, except where a method says it checks its arguments first.
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "notify/notifier.h"

namespace gf {

// Routed once the turn is done, in the order raised, each handed over after the commit.
void Controller::HandOverNotifications() {
  for (Notification& notification : std::exchange(out_.notifications, {})) {
    std::vector<Subscription> matches = router_.Route(notification);
    out_.After(
        [notifier = options_.notifier, n = std::move(notification), matches = std::move(matches)] {
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

Status Controller::LoadSubscriptions() {
  GF_ASSIGN_OR_RETURN(std::vector<Subscription> subs, store_->ListSubscriptions());
  // Requires usage_.Load: the thresholds already reached count as sent.
  router_.Load(std::move(subs), usage_.CurrentPeriod().start, TeamBudgets(clock_.Now()));
  return OkStatus();
}

std::vector<TeamQuota> Controller::TeamBudgets(Time now) const {
  std::vector<TeamQuota> teams;
  for (const auto& [team, hours] : usage_.TeamHours(RunningSpans(), now)) {
    TeamQuota quota{.team = team, .used_gpu_hours = hours};
    FillTeamPolicy(options_.policy,
                   quota);  // the budget `team` runs under, as `gpufleet quota` shows it
    teams.push_back(std::move(quota));
  }
  return teams;
}

void Controller::CheckBudgetAlerts() {
  const Time now = clock_.Now();
  if (options_.policy.teams.empty() || !router_.BudgetCheckDue(now)) {
    return;  // no teams: no budgets (FillTeamPolicy)
  }
  // The period first (a new month starts every team afresh), then the use in it.
  const Time period_start = usage_.CurrentPeriod().start;
  for (BudgetAlert& alert : router_.CheckBudgets(now, period_start, TeamBudgets(now))) {
    jobs_.Record(std::nullopt, "quota", "scheduler", alert.event);
    out_.Notify(std::move(alert.notification));
  }
}

std::vector<NotificationCount> Controller::NotificationCounts() const {
  std::vector<NotificationCount> out;
  if (options_.notifier == nullptr) {
    return out;
  }
  for (const DeliveryCount& c : options_.notifier->Counts()) {
    out.push_back({.channel = c.channel, .outcome = c.outcome, .count = c.count});
  }
  return out;
}

// ---- ClusterService: subscriptions ---------------------------------------------------------

Result<Subscription> Controller::CreateSubscription(const Caller& caller, Subscription request) {
  // Checked on the caller's thread (reads only options_), stored on the state thread.
  GF_ASSIGN_OR_RETURN(Subscription sub,
                      NewSubscription(caller,
                                      std::move(request),
                                      {.webhook_allow = &options_.webhook_allow,
                                       .team_of_user = &options_.team_of_user},
                                      clock_.Now()));
  return Call<Subscription>([this, caller, sub = std::move(sub)]() -> Result<Subscription> {
    out_.batch.subscriptions.push_back(sub);
    router_.Add(sub);
    jobs_.Record(std::nullopt, "subscription", caller.user, "created " + DescribeSubscription(sub));
    return sub;
  });
}

Result<std::vector<Subscription>> Controller::ListSubscriptions(const Caller& caller) {
  GF_TRY(Authorize(caller, Resource::kSubscription, Action::kRead, Ownership::kOwn, "notify list"));
  return Call<std::vector<Subscription>>(
      [this, caller]() -> Result<std::vector<Subscription>> { return router_.VisibleTo(caller); });
}

Result<Subscription> Controller::DeleteSubscription(const Caller& caller, const std::string& id) {
  GF_TRY(Authorize(
      caller, Resource::kSubscription, Action::kDelete, Ownership::kOwn, "notify remove"));
  return Call<Subscription>([this, caller, id]() -> Result<Subscription> {
    GF_ASSIGN_OR_RETURN(Subscription removed, router_.Remove(caller, id));
    out_.batch.removed_subscriptions.push_back(id);
    jobs_.Record(
        std::nullopt, "subscription", caller.user, "removed " + DescribeSubscription(removed));
    return removed;
  });
}

}  // namespace gf
