// NotificationDesk: the controller's side of notifications (issue #8), a component of its own.
// It owns the NotificationRouter (notification_router.h: subscriptions, matching, budget alerts
// sent) and does what the router decides: the turn's notifications (TurnOutbox) are routed at
// the turn's end, in the order raised, and handed to the Notifier (notify/notifier.h) only after
// the turn is durable; subscriptions are stored with the turn and recorded; teams whose GPU-hour
// use in the budget period crossed 80 % or 100 % of their budget since the last check (at most
// once a second) raise an alert. State thread only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "controller/notification_router.h"
#include "controller/turn_outbox.h"
#include "controller/usage_book.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "service/service.h"
#include "store/store.h"

namespace gf {

class Notifier;  // notify/notifier.h

// The controller's parts the desk works with; each must outlive it.
struct NotificationDeskParts {
  JobBook& jobs;  // its journal records subscriptions and alerts
  const UsageBook& usage;
  TurnOutbox& out;
  const Clock& clock;
  // The jobs holding GPUs as the usage book reads them (with energy and GPU models).
  std::function<std::vector<RunningSpan>()> running_spans;
};

class NotificationDesk {
 public:
  // `notifier` null: notifications are only logged. Thread-safe; must outlive the desk.
  NotificationDesk(const PolicyConfig& policy, Notifier* notifier, NotificationDeskParts parts);

  // The stored subscriptions, at start; after the usage book's Load (the thresholds already
  // reached count as sent).
  Status Load(StoreReader& store);
  // The turn's notifications matched against the subscriptions, each handed to the notifier
  // once the turn is durable.
  void HandOver();
  // Each turn, after its starts and ends: budget alerts where a team crossed a threshold.
  void CheckBudgets();
  // The notifier's deliveries, for Stats.
  std::vector<NotificationCount> Counts() const;

  // A subscription checked on the caller's thread (NewSubscription) is added; the caller's own
  // are listed; one of them is removed.
  Result<Subscription> Add(const Caller& caller, Subscription sub);
  std::vector<Subscription> VisibleTo(const Caller& caller) const {
    return router_.VisibleTo(caller);
  }
  Result<Subscription> Remove(const Caller& caller, const std::string& id);
  // The job ended: its subscriptions (kJob), and its array's once no task of it is left, are
  // removed at the turn's HandOver, after its end notification has been routed to them.
  void JobEnded(const Job& job);

 private:
  // Each team's use in the budget period at `now`, with the budget it runs under.
  std::vector<TeamQuota> TeamBudgets(Time now) const;

  const PolicyConfig& policy_;
  Notifier* notifier_;
  NotificationDeskParts p_;
  NotificationRouter router_;
  std::vector<JobId> ended_with_subscriptions_;  // this turn's, for HandOver
};

}  // namespace gf
