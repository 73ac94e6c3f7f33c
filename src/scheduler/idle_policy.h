// The idle reaper's rule for one job (issue #8): which thresholds, grace and action apply,
// from its class's `IdleRule` (policy.h) overridden key by key by its team's.
//
// A job is reaped only when its rule has a positive threshold (`idle_after`, or
// `idle_interactive_after` for an --interactive job) and it did not opt out (--no-reap). The
// controller (src/controller/idle_stage.cpp) applies the rule; Telemetry says since when a job's
// GPUs have been idle. Plain values and pure functions: safe from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "model/job.h"
#include "scheduler/policy.h"

namespace gf {

// The values a key left unset everywhere takes.
inline constexpr int kDefaultIdleUtilBelowPct = 5;
inline constexpr std::chrono::seconds kDefaultIdleGrace = std::chrono::minutes(10);

// "requeue", "cancel", "delete_pod", "scale_owner".
std::string_view ToString(IdleAction action);
// The names above. Errors: kInvalidArgument naming the choices.
Result<IdleAction> ParseIdleAction(std::string_view text);

// The rule one job runs under, every value decided.
struct IdleReaping {
  std::chrono::seconds after{};  // idle this long: a warning (positive)
  std::chrono::seconds grace{};  // warning → action (0: at once)
  int util_below_pct = kDefaultIdleUtilBelowPct;
  IdleAction action = IdleAction::kRequeue;
  bool operator==(const IdleReaping&) const = default;
};

// The rule from a class's and (when not null) a team's tables. For an interactive job the
// threshold is the first set of: team interactive_after, class interactive_after, team after,
// class after; for the others: team after, class after. Returns nullopt when the job is never
// reaped: `idle_reap` false (--no-reap), or no threshold, or a threshold of 0.
std::optional<IdleReaping> ResolveIdleRule(const IdleRule& of_class,
                                           const IdleRule* of_team,
                                           bool interactive,
                                           bool idle_reap);

// The rule for `spec` under `policy`: its class's (ClassPolicyFor) and its team's
// (`teams` by name, else `other_teams`) tables, as ResolveIdleRule.
std::optional<IdleReaping> IdleReapingFor(const PolicyConfig& policy, const JobSpec& spec);

// Whether any class or team sets an idle threshold: when none does, the controller skips the
// reaper altogether.
bool AnyIdleReaping(const PolicyConfig& policy);

// Whether `action` stops a Kubernetes pod (delete_pod, scale_owner).
bool IsPodAction(IdleAction action);
// Whether any class or team's idle_action stops pods: the server then needs the API server.
bool AnyPodAction(const PolicyConfig& policy);
// A server that follows no pods (`kubernetes` false) refuses settings whose idle_action stops
// pods. Errors: kInvalidArgument naming the table ("teams[dev].idle_action: ...") and the fix.
Status CheckPodActions(const PolicyConfig& policy, bool kubernetes);

// Whether a job of class `priority` may be submitted with --no-reap (`idle_opt_out`).
// Errors: kInvalidArgument naming --no-reap, the class and the fix.
Status CheckIdleOptOut(const PolicyConfig& policy, const PriorityClass& priority);

// ValidatePolicy's checks of one table's rule; `where` prefixes the messages
// ("classes[gpu]" → "classes[gpu].idle_util_below: 120 is not a percentage; ...").
Status ValidateIdleRule(const IdleRule& rule, const std::string& where);

}  // namespace gf
