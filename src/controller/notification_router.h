// NotificationRouter (issue #8): who wants to hear of what, and which GPU-hour budget
// thresholds have been notified.
//
// It owns the subscriptions (loaded from the store at start, then kept as they are created and
// removed) and matches each Notification the controller raises to those that want it: its
// kinds, if any; kUser: the notification's user is the owner; kTeam: its team; kCluster: all.
// It also keeps which budget thresholds (80 %, 100 % of a team's GPU-hour budget) were
// notified in the current period, each once per team, threshold and period, and says which
// were crossed since the last check (at most once a second). Everything it decides comes back
// as values: the matches, the alerts to record and raise, the subscription removed. Storing
// (StoreBatch), events and delivery after the turn's commit stay with the controller, so that
// nothing is sent for a turn that did not reach the disk.
//
// Owned by the Controller; the class is state thread only (thread-compatible). The free
// functions are pure and safe from any thread (the controller checks a new subscription on
// the caller's thread, before its command).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/job.h"
#include "model/notification.h"
#include "model/webhook_allow.h"
#include "service/service.h"

namespace gf {

// A budget threshold a team just crossed: the `quota` event's message, and what to raise.
struct BudgetAlert {
  std::string event{};
  Notification notification{};  // kQuota80 or kQuota100, for the team
};

class NotificationRouter {
 public:
  // How often the budget thresholds are checked: use grows with running time, so a check per
  // second is as good as one per turn at a fraction of the work.
  static constexpr Millis kBudgetCheckInterval{1000};

  // At start: the stored subscriptions, and `teams`' use in the period that starts at
  // `period_start` (each with its budget, as `gpufleet quota` computes it). The thresholds
  // already reached count as sent: they were, before the restart (use only grows while a
  // controller runs).
  void Load(std::vector<Subscription> subscriptions,
            Time period_start,
            const std::vector<TeamQuota>& teams);

  // The subscriptions that want `notification`, in id order.
  std::vector<Subscription> Route(const Notification& notification) const;

  // A subscription made (NewSubscription) and stored with this turn.
  void Add(Subscription subscription);
  // The subscriptions `caller` may read: its own, or every one for an admin.
  std::vector<Subscription> VisibleTo(const Caller& caller) const;
  // Forgets subscription `id` and returns it. Errors: kNotFound when there is none the caller
  // may remove (another user's is "not found" too: its existence is not the caller's business).
  Result<Subscription> Remove(const Caller& caller, const std::string& id);
  // Whether some subscription is for this one job or array (SubscriptionScope::kJob).
  bool HasJobSubscriptions(JobId job) const;
  // Removes the subscriptions for this job or array; returns them.
  std::vector<Subscription> RemoveJobSubscriptions(JobId job);

  // Whether the budget thresholds are to be checked at `now` (a second since the last check).
  bool BudgetCheckDue(Time now) const;
  // Records `now` as the last check and returns the thresholds `teams` (each team's use in the
  // period that starts at `period_start`, with its budget) crossed since the last one, in
  // order. A new period starts every team afresh.
  std::vector<BudgetAlert> CheckBudgets(Time now,
                                        Time period_start,
                                        const std::vector<TeamQuota>& teams);

 private:
  std::map<std::string, Subscription> subscriptions_;  // by id
  // The budget alerts sent in the period that starts at alert_period_: (team, 80 or 100).
  std::set<std::pair<std::string, int>> budget_alerts_;
  Time alert_period_{};
  std::optional<Time> budget_checked_at_;
};

// The budget thresholds (80, 100) `team` has reached: its used_gpu_hours against its
// budget_gpu_hours. None without a budget; a zero budget is "nothing may run", not a use to
// warn of.
std::vector<int> ReachedBudgetThresholds(const TeamQuota& team);

// "sub-1a2b...: webhook https://... for team vision (job_end, job_failed)": for events and logs.
std::string DescribeSubscription(const Subscription& subscription);

// What a new subscription must pass, and who may make it (authorization.h).
struct SubscriptionRules {
  const WebhookAllowList* webhook_allow = nullptr;  // [notify] webhook_allow; never null
  // [team.NAME] members: only a team's members (and admins) may subscribe to it.
  const std::map<std::string, std::string>* team_of_user = nullptr;  // never null
};

// `request` checked (its target for its channel, a webhook's address, its team's name; the
// caller's right to subscribe to that scope) and made the caller's: a new unguessable id, the
// caller as owner, created `now`. Errors: kInvalidArgument naming the field, kPermissionDenied
// naming what the caller may subscribe to instead.
Result<Subscription> NewSubscription(const Caller& caller,
                                     Subscription request,
                                     const SubscriptionRules& rules,
                                     Time now);

// Notifications about a job (its owner, team and node filled in) raised at `now`: any kind;
// its end (COMPLETED/CANCELLED: job_end; FAILED/TIMEOUT: job_failed); its preemption.
Notification JobNotification(
    const Job& job, NotifyKind kind, std::string subject, std::string message, Time now);
Notification EndedNotification(const Job& job, JobState state, const std::string& cause, Time now);
Notification PreemptedNotification(const Job& job, const std::string& cause, Time now);

}  // namespace gf
