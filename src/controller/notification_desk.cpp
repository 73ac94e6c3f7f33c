// NotificationDesk (notification_desk.h): the turn's notifications routed and handed over,
// subscriptions, budget alerts.
#include "controller/notification_desk.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "controller/authorization.h"
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
  for (const JobId job : std::exchange(ended_with_subscriptions_, {})) {
    for (const Subscription& sub : router_.RemoveJobSubscriptions(job)) {
      p_.out.batch.removed_subscriptions.push_back(sub.id);
      p_.jobs.Record(job,
                     "subscription",
                     "controller",
                     "removed " + DescribeSubscription(sub) + ": the job has ended");
    }
  }
}

void NotificationDesk::JobEnded(const Job& job) {
  if (router_.HasJobSubscriptions(job.id)) {
    ended_with_subscriptions_.push_back(job.id);
  }
  if (!job.spec.array || !router_.HasJobSubscriptions(job.spec.array->array_job)) {
    return;
  }
  const JobId array = job.spec.array->array_job;
  const bool tasks_left =
      std::any_of(p_.jobs.Active().begin(), p_.jobs.Active().end(), [&](const auto& entry) {
        const Job& other = entry.second;
        return other.spec.array && other.spec.array->array_job == array && !IsTerminal(other.state);
      });
  if (!tasks_left) {
    ended_with_subscriptions_.push_back(array);
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
  if (sub.scope == SubscriptionScope::kJob) {
    // One job (or array) of the caller's, still to end; an admin may subscribe to anyone's.
    const Job* job = sub.job ? p_.jobs.Find(*sub.job) : nullptr;
    const std::string name = "job " + std::to_string(sub.job ? sub.job->value() : 0);
    if (job == nullptr || IsTerminal(job->state) ||
        !Allows(caller,
                Resource::kSubscription,
                Action::kCreate,
                job->owner.user == caller.user ? Ownership::kOwn : Ownership::kOther)) {
      return NotFound("notify add --job: " + name +
                      " is not one of your jobs that has yet to end (gpufleet queue shows them)");
    }
  }
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
