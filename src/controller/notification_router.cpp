// The notification router's matching, subscriptions and budget thresholds
// (notification_router.h).
#include "controller/notification_router.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "controller/authorization.h"
#include "core/gpu_hours.h"
#include "core/hex.h"
#include "model/team.h"

namespace gf {
namespace {

// Budget thresholds, in percent of the budget, each notified once per team and period.
constexpr int kBudgetThresholds[] = {80, 100};

// "sub-" and 16 hex digits: unguessable enough that an id says nothing about others'.
std::string NewSubscriptionId() {
  std::random_device random;
  std::uniform_int_distribution<int> byte(0, 255);
  std::string bytes(8, '\0');
  for (char& b : bytes) {
    b = static_cast<char>(byte(random));
  }
  return "sub-" + HexEncode(bytes);
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
    case SubscriptionScope::kJob:
      return sub.job && (n.job == sub.job || n.array_job == sub.job);
  }
  return false;
}

std::string JobName(const Job& job) {
  return "job " + std::to_string(job.id.value()) +
         (job.spec.name.empty() ? "" : " (" + job.spec.name + ")");
}

// A stored subscription is the caller's own when the caller made it.
Ownership WhoseSubscription(const Caller& caller, const Subscription& sub) {
  return caller.authenticated && sub.owner == caller.user ? Ownership::kOwn : Ownership::kOther;
}

// A new subscription is the caller's own for its own jobs or a team it is a member of;
// another team's, or the whole cluster's, is not (authorization.h).
Status CheckMaySubscribe(const Caller& caller,
                         const Subscription& request,
                         const std::map<std::string, std::string>& team_of_user) {
  switch (request.scope) {
    case SubscriptionScope::kUser:
      return Authorize(
          caller, Resource::kSubscription, Action::kCreate, Ownership::kOwn, "notify add");
    case SubscriptionScope::kTeam: {
      auto member = team_of_user.find(caller.user);
      const bool in_team = member != team_of_user.end() && member->second == request.team;
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
    case SubscriptionScope::kJob:
      // Whose job it is, the desk checks against the job book (NotificationDesk::Add).
      return Authorize(
          caller, Resource::kSubscription, Action::kCreate, Ownership::kOwn, "notify add --job");
  }
  return InvalidArgument("unknown subscription scope");
}

}  // namespace

void NotificationRouter::Load(std::vector<Subscription> subscriptions,
                              Time period_start,
                              const std::vector<TeamQuota>& teams) {
  for (Subscription& sub : subscriptions) {
    std::string id = sub.id;
    subscriptions_.emplace(std::move(id), std::move(sub));
  }
  alert_period_ = period_start;
  for (const TeamQuota& team : teams) {
    for (const int percent : ReachedBudgetThresholds(team)) {
      budget_alerts_.emplace(team.team, percent);
    }
  }
}

std::vector<Subscription> NotificationRouter::Route(const Notification& notification) const {
  std::vector<Subscription> matches;
  for (const auto& [id, sub] : subscriptions_) {
    if (Matches(sub, notification)) {
      matches.push_back(sub);
    }
  }
  return matches;
}

void NotificationRouter::Add(Subscription subscription) {
  std::string id = subscription.id;
  subscriptions_[std::move(id)] = std::move(subscription);
}

std::vector<Subscription> NotificationRouter::VisibleTo(const Caller& caller) const {
  std::vector<Subscription> out;
  for (const auto& [id, sub] : subscriptions_) {
    if (Allows(caller, Resource::kSubscription, Action::kRead, WhoseSubscription(caller, sub))) {
      out.push_back(sub);
    }
  }
  return out;
}

Result<Subscription> NotificationRouter::Remove(const Caller& caller, const std::string& id) {
  auto it = subscriptions_.find(id);
  if (it == subscriptions_.end() || !Allows(caller,
                                            Resource::kSubscription,
                                            Action::kDelete,
                                            WhoseSubscription(caller, it->second))) {
    return NotFound("subscription " + id + " not found (gpufleet notify list shows yours)");
  }
  Subscription removed = std::move(it->second);
  subscriptions_.erase(it);
  return removed;
}

bool NotificationRouter::HasJobSubscriptions(JobId job) const {
  return std::any_of(subscriptions_.begin(), subscriptions_.end(), [job](const auto& entry) {
    return entry.second.scope == SubscriptionScope::kJob && entry.second.job == job;
  });
}

std::vector<Subscription> NotificationRouter::RemoveJobSubscriptions(JobId job) {
  std::vector<Subscription> removed;
  for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
    if (it->second.scope == SubscriptionScope::kJob && it->second.job == job) {
      removed.push_back(std::move(it->second));
      it = subscriptions_.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

bool NotificationRouter::BudgetCheckDue(Time now) const {
  return !budget_checked_at_ || now - *budget_checked_at_ >= kBudgetCheckInterval;
}

std::vector<BudgetAlert> NotificationRouter::CheckBudgets(Time now,
                                                          Time period_start,
                                                          const std::vector<TeamQuota>& teams) {
  budget_checked_at_ = now;
  if (period_start != alert_period_) {  // a new month: every team starts afresh
    budget_alerts_.clear();
    alert_period_ = period_start;
  }
  std::vector<BudgetAlert> alerts;
  for (const TeamQuota& team : teams) {
    for (const int percent : ReachedBudgetThresholds(team)) {
      if (!budget_alerts_.emplace(team.team, percent).second) {
        continue;
      }
      const std::string name = team.team.empty() ? "jobs of no team" : "team " + team.team;
      std::string text = fmt::format(
          "{} used {} of its {} GPU-hour budget this period ({} %){}",
          name,
          FormatGpuHours(team.used_gpu_hours),
          FormatGpuHours(team.budget_gpu_hours.value_or(0)),
          percent,
          percent >= 100 ? (team.over_budget == "hold"
                                ? ": its new jobs wait for an admin's approval"
                                : ": its new jobs run only as preemptible borrowed work")
                         : "");
      alerts.push_back(BudgetAlert{
          .event = text,
          .notification =
              Notification{.kind = percent >= 100 ? NotifyKind::kQuota100 : NotifyKind::kQuota80,
                           .time = now,
                           .team = team.team,
                           .subject = text,
                           .message = text}});
    }
  }
  return alerts;
}

std::vector<int> ReachedBudgetThresholds(const TeamQuota& team) {
  std::vector<int> reached;
  if (!team.budget_gpu_hours || *team.budget_gpu_hours <= 0) {
    return reached;  // no budget; a zero budget is "nothing may run", not a use to warn of
  }
  for (const int percent : kBudgetThresholds) {
    if (team.used_gpu_hours >= *team.budget_gpu_hours * percent / 100.0) {
      reached.push_back(percent);
    }
  }
  return reached;
}

std::string DescribeSubscription(const Subscription& sub) {
  std::string scope = sub.scope == SubscriptionScope::kUser   ? "their own jobs"
                      : sub.scope == SubscriptionScope::kTeam ? "team " + sub.team
                      : sub.scope == SubscriptionScope::kJob
                          ? "job " + std::to_string(sub.job ? sub.job->value() : 0)
                          : "the whole cluster";
  return sub.id + ": " + std::string(ToString(sub.channel)) + " " + sub.target + " for " + scope +
         " (" + (sub.kinds.empty() ? "every event" : JoinNotifyKinds(sub.kinds)) + ")";
}

Result<Subscription> NewSubscription(const Caller& caller,
                                     Subscription request,
                                     const SubscriptionRules& rules,
                                     Time now) {
  GF_TRY(
      Authorize(caller, Resource::kSubscription, Action::kCreate, Ownership::kOwn, "notify add"));
  if (Status target = CheckSubscriptionTarget(request.channel, request.target); !target.ok()) {
    return InvalidArgument("target: " + target.error().message);
  }
  if (request.channel == NotifyChannel::kWebhook) {
    if (Status allowed = rules.webhook_allow->CheckUrl(request.target); !allowed.ok()) {
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
  if (request.scope == SubscriptionScope::kJob && (!request.job || request.job->value() <= 0)) {
    return InvalidArgument("job: a job subscription (scope \"job\") must name its job");
  }
  if (request.scope != SubscriptionScope::kJob) {
    request.job.reset();  // only a job subscription has one
  }
  GF_TRY(CheckMaySubscribe(caller, request, *rules.team_of_user));
  request.id = NewSubscriptionId();
  request.owner = caller.user;
  request.created = now;
  return request;
}

Notification JobNotification(
    const Job& job, NotifyKind kind, std::string subject, std::string message, Time now) {
  return Notification{
      .kind = kind,
      .time = now,
      .job = job.id,
      .array_job = job.spec.array ? std::optional(job.spec.array->array_job) : std::nullopt,
      .user = job.owner.user,
      .team = job.spec.team,
      .node = job.allocation ? job.allocation->node.value() : "",
      .subject = std::move(subject),
      .message = std::move(message)};
}

Notification EndedNotification(const Job& job, JobState state, const std::string& cause, Time now) {
  const bool ok = state == JobState::kCompleted || state == JobState::kCancelled;
  std::string what = state == JobState::kCompleted   ? "completed"
                     : state == JobState::kCancelled ? "was cancelled"
                     : state == JobState::kTimeout   ? "reached its time limit"
                                                     : "failed";
  return JobNotification(job,
                         ok ? NotifyKind::kJobEnd : NotifyKind::kJobFailed,
                         JobName(job) + " " + what + ": " + cause,
                         cause,
                         now);
}

Notification PreemptedNotification(const Job& job, const std::string& cause, Time now) {
  return JobNotification(job,
                         NotifyKind::kPreempted,
                         JobName(job) + " is preempted: " + cause,
                         cause + (job.spec.requeue ? "; it goes back to the queue at its place"
                                                   : "; it ends CANCELLED (--no-requeue)"),
                         now);
}

}  // namespace gf
