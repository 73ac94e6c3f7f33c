#include "scheduler/idle_policy.h"

#include <algorithm>

namespace gf {
namespace {

// The first of `values` that is set.
template <typename T>
std::optional<T> FirstSet(std::initializer_list<const std::optional<T>*> values) {
  for (const std::optional<T>* value : values) {
    if (value->has_value()) {
      return *value;
    }
  }
  return std::nullopt;
}

const TeamPolicy& TeamPolicyFor(const PolicyConfig& policy, const std::string& team) {
  const auto it = std::find_if(policy.teams.begin(), policy.teams.end(), [&](const TeamPolicy& t) {
    return t.name == team;
  });
  return it == policy.teams.end() ? policy.other_teams : *it;
}

bool HasThreshold(const IdleRule& rule) {
  const auto positive = [](const std::optional<std::chrono::seconds>& d) {
    return d.has_value() && d->count() > 0;
  };
  return positive(rule.after) || positive(rule.interactive_after);
}

}  // namespace

std::string_view ToString(IdleAction action) {
  switch (action) {
    case IdleAction::kRequeue:
      return "requeue";
    case IdleAction::kCancel:
      return "cancel";
    case IdleAction::kDeletePod:
      return "delete_pod";
    case IdleAction::kScaleOwner:
      return "scale_owner";
  }
  return "requeue";
}

Result<IdleAction> ParseIdleAction(std::string_view text) {
  for (const IdleAction action : {IdleAction::kRequeue,
                                  IdleAction::kCancel,
                                  IdleAction::kDeletePod,
                                  IdleAction::kScaleOwner}) {
    if (text == ToString(action)) {
      return action;
    }
  }
  return InvalidArgument("'" + std::string(text) +
                         "' is not an idle action; use \"requeue\" (back to the queue) or "
                         "\"cancel\" (on a Kubernetes server also \"delete_pod\" or "
                         "\"scale_owner\")");
}

bool IsPodAction(IdleAction action) {
  return action == IdleAction::kDeletePod || action == IdleAction::kScaleOwner;
}

std::optional<IdleReaping> ResolveIdleRule(const IdleRule& of_class,
                                           const IdleRule* of_team,
                                           bool interactive,
                                           bool idle_reap) {
  if (!idle_reap) {
    return std::nullopt;
  }
  static const IdleRule no_rule{};
  const IdleRule& team = of_team != nullptr ? *of_team : no_rule;
  const std::optional<std::chrono::seconds> after = interactive
                                                        ? FirstSet({&team.interactive_after,
                                                                    &of_class.interactive_after,
                                                                    &team.after,
                                                                    &of_class.after})
                                                        : FirstSet({&team.after, &of_class.after});
  if (!after || after->count() <= 0) {
    return std::nullopt;
  }
  return IdleReaping{
      .after = *after,
      .grace = FirstSet({&team.grace, &of_class.grace}).value_or(kDefaultIdleGrace),
      .util_below_pct = FirstSet({&team.util_below_pct, &of_class.util_below_pct})
                            .value_or(kDefaultIdleUtilBelowPct),
      .action = FirstSet({&team.action, &of_class.action}).value_or(IdleAction::kRequeue)};
}

std::optional<IdleReaping> IdleReapingFor(const PolicyConfig& policy, const JobSpec& spec) {
  if (!spec.idle_reap) {
    return std::nullopt;  // without the lookups: most jobs of a cluster with opt-outs
  }
  return ResolveIdleRule(ClassPolicyFor(policy, spec.priority).idle,
                         &TeamPolicyFor(policy, spec.team).idle,
                         spec.interactive,
                         spec.idle_reap);
}

bool AnyIdleReaping(const PolicyConfig& policy) {
  return std::any_of(policy.classes.begin(),
                     policy.classes.end(),
                     [](const PriorityClassPolicy& c) { return HasThreshold(c.idle); }) ||
         std::any_of(policy.teams.begin(),
                     policy.teams.end(),
                     [](const TeamPolicy& t) { return HasThreshold(t.idle); }) ||
         HasThreshold(policy.other_teams.idle);
}

Status CheckIdleOptOut(const PolicyConfig& policy, const PriorityClass& priority) {
  if (ClassPolicyFor(policy, priority).idle_opt_out) {
    return OkStatus();
  }
  return InvalidArgument("--no-reap: class '" + priority.name +
                         "' does not let its jobs opt out of idle reaping; submit without "
                         "--no-reap (keep the GPUs busy, or use --interactive for a session), "
                         "or use a class whose config sets idle_opt_out = true");
}

bool AnyPodAction(const PolicyConfig& policy) {
  const auto pods = [](const IdleRule& rule) {
    return rule.action && IsPodAction(*rule.action);
  };
  return std::any_of(policy.classes.begin(),
                     policy.classes.end(),
                     [&](const PriorityClassPolicy& c) { return pods(c.idle); }) ||
         std::any_of(policy.teams.begin(),
                     policy.teams.end(),
                     [&](const TeamPolicy& t) { return pods(t.idle); }) ||
         pods(policy.other_teams.idle);
}

Status CheckPodActions(const PolicyConfig& policy, bool kubernetes) {
  if (kubernetes) {
    return OkStatus();
  }
  const auto check = [](const IdleRule& rule, const std::string& where) -> Status {
    if (rule.action && IsPodAction(*rule.action)) {
      return InvalidArgument(where + ".idle_action: \"" + std::string(ToString(*rule.action)) +
                             "\" stops Kubernetes pods, and only `gpufleet server --kubernetes` "
                             "follows pods; use \"requeue\" or \"cancel\" here");
    }
    return OkStatus();
  };
  for (const PriorityClassPolicy& c : policy.classes) {
    GF_TRY(check(c.idle, "classes[" + c.name + "]"));
  }
  for (const TeamPolicy& t : policy.teams) {
    GF_TRY(check(t.idle, "teams[" + t.name + "]"));
  }
  return check(policy.other_teams.idle, "other_teams");
}

Status ValidateIdleRule(const IdleRule& rule, const std::string& where) {
  for (const auto& [key, value] : {std::pair{"idle_after", rule.after},
                                   std::pair{"idle_interactive_after", rule.interactive_after},
                                   std::pair{"idle_grace", rule.grace}}) {
    if (value && value->count() < 0) {
      return InvalidArgument(where + "." + key + ": must be 0s or more");
    }
  }
  if (rule.util_below_pct && (*rule.util_below_pct < 0 || *rule.util_below_pct > 100)) {
    return InvalidArgument(where + ".idle_util_below: " + std::to_string(*rule.util_below_pct) +
                           " is not a percentage; use 0 to 100 (0: only a GPU without "
                           "processes counts as idle)");
  }
  return OkStatus();
}

}  // namespace gf
