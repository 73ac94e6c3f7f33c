// Notifications (issue #8): the subscriptions (who wants to hear of what), the routing of each
// Notification the controller raises to the subscriptions that match, and the notifications
// raised here: job ends, preemptions, and GPU-hour budgets at 80 % and 100 %. Delivery is the
// Notifier's (notify/notifier.h), after the turn that raised them is durable.
//
// State thread only, except where a method says it checks its arguments first.
#include <algorithm>
#include <random>

#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "model/team.h"
#include "notify/notifier.h"

namespace gf {
namespace {

// Budget thresholds, in percent of the budget, each notified once per team and period.
constexpr int kBudgetThresholds[] = {80, 100};
// How often the budget thresholds are checked: use grows with running time, so a check per
// second is as good as one per turn at a fraction of the work.
constexpr Millis kBudgetCheckInterval{1000};

// "sub-" and 16 hex digits: unguessable enough that an id says nothing about others'.
std::string NewSubscriptionId() {
  std::random_device random;
  std::uniform_int_distribution<std::uint64_t> bits;
  constexpr char kHex[] = "0123456789abcdef";
  std::uint64_t value = bits(random);
  std::string id = "sub-";
  for (int i = 0; i < 16; ++i) {
    id += kHex[value & 0xf];
    value >>= 4;
  }
  return id;
}

bool Matches(const Subscription& sub, const Notification& n) {
  if (!sub.kinds.empty() &&
      std::find(sub.kinds.begin(), sub.kinds.end(), n.kind) == sub.kinds.end()) {
    return false;
  }
  switch (sub.scope) {
    case SubscriptionScope::kUser:
      return !n.user.empty() && sub.owner == n.user;
    case SubscriptionScope::kTeam:
      return sub.team == n.team;
    case SubscriptionScope::kCluster:
      return true;
  }
  return false;
}

std::string JobName(const Job& job) {
  return "job " + std::to_string(job.id.value()) +
         (job.spec.name.empty() ? "" : " (" + job.spec.name + ")");
}

// "ana's webhook https://... for team vision (job_end, job_failed)": for events and logs.
std::string Describe(const Subscription& sub) {
  std::string scope = sub.scope == SubscriptionScope::kUser   ? "their own jobs"
                      : sub.scope == SubscriptionScope::kTeam ? "team " + sub.team
                                                              : "the whole cluster";
  return sub.id + ": " + std::string(ToString(sub.channel)) + " " + sub.target + " for " + scope +
         " (" + (sub.kinds.empty() ? "every event" : JoinNotifyKinds(sub.kinds)) + ")";
}

// A stored subscription is the caller's own when the caller made it.
Ownership WhoseSubscription(const Caller& caller, const Subscription& sub) {
  return caller.authenticated && sub.owner == caller.user ? Ownership::kOwn : Ownership::kOther;
}

}  // namespace

void Controller::Notify(Notification notification) {
  std::vector<Subscription> matches;
  for (const auto& [id, sub] : subscriptions_) {
    if (Matches(sub, notification)) {
      matches.push_back(sub);
    }
  }
  after_commit_.emplace_back(
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

Status Controller::LoadSubscriptions() {
  GF_ASSIGN_OR_RETURN(std::vector<Subscription> subs, store_->ListSubscriptions());
  for (Subscription& sub : subs) {
    std::string id = sub.id;
    subscriptions_.emplace(std::move(id), std::move(sub));
  }
  // The thresholds already reached in this period were notified before the restart (use only
  // grows while a controller runs), so they are not sent again. Requires usage_.Load.
  const Time now = clock_.Now();
  budget_alert_period_ = usage_.CurrentPeriod().start;
  for (const auto& [team, hours] : usage_.TeamHours(RunningSpans(), now)) {
    for (const int percent : BudgetThresholds(team, hours)) {
      budget_alerts_.emplace(team, percent);
    }
  }
  return OkStatus();
}

void Controller::NotifyEnded(const Job& job, JobState state, const std::string& cause) {
  const bool ok = state == JobState::kCompleted || state == JobState::kCancelled;
  std::string what = state == JobState::kCompleted   ? "completed"
                     : state == JobState::kCancelled ? "was cancelled"
                     : state == JobState::kTimeout   ? "reached its time limit"
                                                     : "failed";
  NotifyJob(job,
            ok ? NotifyKind::kJobEnd : NotifyKind::kJobFailed,
            JobName(job) + " " + what + ": " + cause,
            cause);
}

void Controller::NotifyPreempted(const Job& job, const std::string& cause) {
  NotifyJob(job,
            NotifyKind::kPreempted,
            JobName(job) + " is preempted: " + cause,
            cause + (job.spec.requeue ? "; it goes back to the queue at its place"
                                      : "; it ends CANCELLED (--no-requeue)"));
}

void Controller::NotifyJob(const Job& job,
                           NotifyKind kind,
                           std::string subject,
                           std::string message) {
  Notify(Notification{.kind = kind,
                      .time = clock_.Now(),
                      .job = job.id,
                      .user = job.owner.user,
                      .team = job.spec.team,
                      .node = job.allocation ? job.allocation->node.value() : "",
                      .subject = std::move(subject),
                      .message = std::move(message)});
}

std::vector<int> Controller::BudgetThresholds(const std::string& team, double used_hours) const {
  TeamQuota quota{.team = team, .used_gpu_hours = used_hours};
  // The budget `team` runs under, as `gpufleet quota` shows it.
  FillTeamPolicy(options_.policy, quota);
  std::vector<int> reached;
  if (!quota.budget_gpu_hours || *quota.budget_gpu_hours <= 0) {
    return reached;  // no budget; a zero budget is "nothing may run", not a use to warn of
  }
  for (const int percent : kBudgetThresholds) {
    if (used_hours >= *quota.budget_gpu_hours * percent / 100.0) {
      reached.push_back(percent);
    }
  }
  return reached;
}

void Controller::CheckBudgetAlerts() {
  const Time now = clock_.Now();
  if (options_.policy.teams.empty() ||
      (budget_checked_at_ && now - *budget_checked_at_ < kBudgetCheckInterval)) {
    return;  // no teams: no budgets (FillTeamPolicy)
  }
  budget_checked_at_ = now;
  const Period& period = usage_.CurrentPeriod();
  if (period.start != budget_alert_period_) {  // a new month: every team starts afresh
    budget_alerts_.clear();
    budget_alert_period_ = period.start;
  }
  for (const auto& [team, hours] : usage_.TeamHours(RunningSpans(), now)) {
    for (const int percent : BudgetThresholds(team, hours)) {
      if (!budget_alerts_.emplace(team, percent).second) {
        continue;
      }
      TeamQuota quota{.team = team, .used_gpu_hours = hours};
      FillTeamPolicy(options_.policy, quota);
      const std::string name = team.empty() ? "jobs of no team" : "team " + team;
      const std::string text = fmt::format(
          "{} used {:.1f} of its {:.1f} GPU-hour budget this period ({} %){}",
          name,
          hours,
          quota.budget_gpu_hours.value_or(0),
          percent,
          percent >= 100 ? (quota.over_budget == "hold"
                                ? ": its new jobs wait for an admin's approval"
                                : ": its new jobs run only as preemptible borrowed work")
                         : "");
      Record(std::nullopt, "quota", "scheduler", text);
      Notify(Notification{.kind = percent >= 100 ? NotifyKind::kQuota100 : NotifyKind::kQuota80,
                          .time = now,
                          .team = team,
                          .subject = text,
                          .message = text});
    }
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

// Any thread (reads only options_). A new subscription is the caller's own for its own jobs
// or a team it is a member of; another team's, or the whole cluster's, is not (authorization.h).
Status Controller::CheckMaySubscribe(const Caller& caller, const Subscription& request) const {
  switch (request.scope) {
    case SubscriptionScope::kUser:
      return Authorize(
          caller, Resource::kSubscription, Action::kCreate, Ownership::kOwn, "notify add");
    case SubscriptionScope::kTeam: {
      auto member = options_.team_of_user.find(caller.user);
      const bool in_team = member != options_.team_of_user.end() && member->second == request.team;
      if (Allows(caller,
                 Resource::kSubscription,
                 Action::kCreate,
                 in_team ? Ownership::kOwn : Ownership::kOther)) {
        return OkStatus();
      }
      return PermissionDenied("notify add --team " + request.team + ": " + caller.user +
                              " is not a member of team " + request.team + " ([team." +
                              request.team +
                              "] members in the server's settings); "
                              "only its members and admins may subscribe to a team");
    }
    case SubscriptionScope::kCluster:
      if (Status s = Authorize(caller,
                               Resource::kSubscription,
                               Action::kCreate,
                               Ownership::kOther,
                               "notify add --all");
          !s.ok()) {
        return PermissionDenied(s.error().message +
                                "; subscribe to your own jobs, or to your team with --team");
      }
      return OkStatus();
  }
  return InvalidArgument("unknown subscription scope");
}

Result<Subscription> Controller::CreateSubscription(const Caller& caller, Subscription request) {
  GF_TRY(
      Authorize(caller, Resource::kSubscription, Action::kCreate, Ownership::kOwn, "notify add"));
  if (Status target = CheckSubscriptionTarget(request.channel, request.target); !target.ok()) {
    return InvalidArgument("target: " + target.error().message);
  }
  if (request.channel == NotifyChannel::kWebhook) {
    if (Status allowed = options_.webhook_allow.CheckUrl(request.target); !allowed.ok()) {
      return InvalidArgument("target: " + allowed.error().message);
    }
  }
  if (request.scope == SubscriptionScope::kTeam) {
    if (Status team = ValidateTeamName(request.team); !team.ok()) {
      return InvalidArgument("team: " + team.error().message);
    }
  } else {
    request.team.clear();  // only a team subscription has one
  }
  GF_TRY(CheckMaySubscribe(caller, request));
  request.id = NewSubscriptionId();
  request.owner = caller.user;
  request.created = clock_.Now();
  return Call<Subscription>([this, caller, sub = std::move(request)]() -> Result<Subscription> {
    batch_.subscriptions.push_back(sub);
    subscriptions_[sub.id] = sub;
    Record(std::nullopt, "subscription", caller.user, "created " + Describe(sub));
    return sub;
  });
}

Result<std::vector<Subscription>> Controller::ListSubscriptions(const Caller& caller) {
  GF_TRY(Authorize(caller, Resource::kSubscription, Action::kRead, Ownership::kOwn, "notify list"));
  return Call<std::vector<Subscription>>([this, caller]() -> Result<std::vector<Subscription>> {
    std::vector<Subscription> out;
    for (const auto& [id, sub] : subscriptions_) {
      if (Allows(caller, Resource::kSubscription, Action::kRead, WhoseSubscription(caller, sub))) {
        out.push_back(sub);
      }
    }
    return out;
  });
}

Result<Subscription> Controller::DeleteSubscription(const Caller& caller, const std::string& id) {
  GF_TRY(Authorize(
      caller, Resource::kSubscription, Action::kDelete, Ownership::kOwn, "notify remove"));
  return Call<Subscription>([this, caller, id]() -> Result<Subscription> {
    auto it = subscriptions_.find(id);
    // Another user's subscription is "not found": its existence is not the caller's business.
    if (it == subscriptions_.end() || !Allows(caller,
                                              Resource::kSubscription,
                                              Action::kDelete,
                                              WhoseSubscription(caller, it->second))) {
      return NotFound("subscription " + id + " not found (gpufleet notify list shows yours)");
    }
    Subscription removed = std::move(it->second);
    subscriptions_.erase(it);
    batch_.removed_subscriptions.push_back(id);
    Record(std::nullopt, "subscription", caller.user, "removed " + Describe(removed));
    return removed;
  });
}

}  // namespace gf
