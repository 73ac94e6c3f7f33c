#include "scheduler/policy.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/check.h"

namespace gf {

std::vector<PriorityClassPolicy> DefaultPriorityClasses() {
  std::vector<PriorityClassPolicy> classes;
  for (const PriorityClass p :
       {PriorityClass::kHigh, PriorityClass::kNormal, PriorityClass::kLow}) {
    PriorityClassPolicy cls;
    cls.name = std::string(ToString(p));
    cls.rank = Rank(p);
    // Each class may preempt every class below it: the field case of issue #4 (preemption
    // for high priority), and normal work ahead of low.
    for (const PriorityClass lower : {PriorityClass::kNormal, PriorityClass::kLow}) {
      if (Rank(lower) > Rank(p)) {
        cls.preempts.emplace_back(ToString(lower));
      }
    }
    classes.push_back(std::move(cls));
  }
  return classes;
}

PriorityClassPolicy ClassPolicyFor(const PolicyConfig& policy, PriorityClass priority) {
  const std::string_view name = ToString(priority);
  for (const PriorityClassPolicy& cls : policy.classes) {
    if (cls.name == name) {
      return cls;
    }
  }
  PriorityClassPolicy fallback;
  fallback.name = std::string(name);
  fallback.rank = Rank(priority);
  return fallback;
}

std::optional<std::chrono::seconds> EffectiveTimeLimit(
    const PriorityClassPolicy& cls, std::optional<std::chrono::seconds> requested) {
  std::optional<std::chrono::seconds> limit =
      requested.has_value() ? requested : cls.default_time_limit;
  if (cls.max_time_limit.has_value() && (!limit.has_value() || *limit > *cls.max_time_limit)) {
    limit = cls.max_time_limit;
  }
  return limit;
}

double DecayedUsage(double gpu_seconds, Millis elapsed, std::chrono::seconds half_life) {
  GF_CHECK(half_life.count() > 0);
  const double half_lives =
      static_cast<double>(elapsed.count()) / static_cast<double>(Millis(half_life).count());
  return gpu_seconds * std::exp2(-half_lives);
}

namespace {

Status ValidateClasses(const std::vector<PriorityClassPolicy>& classes) {
  std::set<std::string> names;
  for (const PriorityClassPolicy& cls : classes) {
    if (!ParsePriorityClass(cls.name).ok()) {
      return InvalidArgument("classes[" + cls.name +
                             "].name: jobs can name only high, normal or low; rename the class");
    }
    if (!names.insert(cls.name).second) {
      return InvalidArgument("classes[" + cls.name + "]: listed twice; keep one");
    }
    if (cls.max_gpus_per_user.has_value() && *cls.max_gpus_per_user < 0) {
      return InvalidArgument("classes[" + cls.name + "].max_gpus_per_user: must be 0 or more");
    }
    if (cls.default_time_limit.has_value() && cls.max_time_limit.has_value() &&
        *cls.default_time_limit > *cls.max_time_limit) {
      return InvalidArgument("classes[" + cls.name +
                             "].default_time_limit: above max_time_limit; lower it");
    }
  }
  for (const PriorityClassPolicy& cls : classes) {
    for (const std::string& victim : cls.preempts) {
      if (!names.contains(victim)) {
        return InvalidArgument("classes[" + cls.name + "].preempts: no class '" + victim +
                               "'; name a listed class");
      }
    }
  }
  return OkStatus();
}

Status ValidateTeam(const TeamPolicy& team, const std::string& where) {
  if (team.guaranteed_gpus < 0) {
    return InvalidArgument(where + ".guaranteed_gpus: must be 0 or more");
  }
  if (team.max_gpus.has_value() && *team.max_gpus < team.guaranteed_gpus) {
    return InvalidArgument(where + ".max_gpus: " + std::to_string(*team.max_gpus) +
                           " is below guaranteed_gpus " + std::to_string(team.guaranteed_gpus) +
                           "; raise max_gpus or lower the guarantee");
  }
  if (team.gpu_hour_budget.has_value() && *team.gpu_hour_budget < 0) {
    return InvalidArgument(where + ".gpu_hour_budget: must be 0 or more");
  }
  if (!(team.fair_share_weight > 0)) {
    return InvalidArgument(where + ".fair_share_weight: must be above 0");
  }
  return OkStatus();
}

}  // namespace

Status ValidatePolicy(const PolicyConfig& policy) {
  GF_TRY(ValidateClasses(policy.classes));
  std::set<std::string> names;
  for (const TeamPolicy& team : policy.teams) {
    GF_TRY(ValidateTeam(team, "teams[" + team.name + "]"));
    if (!names.insert(team.name).second) {
      return InvalidArgument("teams[" + team.name + "]: listed twice; keep one");
    }
  }
  GF_TRY(ValidateTeam(policy.other_teams, "other_teams"));
  if (policy.fair_share.half_life.count() <= 0) {
    return InvalidArgument("fair_share.half_life: must be above 0s");
  }
  for (const auto& [user, weight] : policy.fair_share.user_weights) {
    if (!(weight > 0)) {
      return InvalidArgument("fair_share.user_weights[" + user + "]: must be above 0");
    }
  }
  if (policy.preemption.min_run_time.count() < 0) {
    return InvalidArgument("preemption.min_run_time: must be 0s or more");
  }
  if (policy.preemption.max_preemptors_per_pass < 0) {
    return InvalidArgument("preemption.max_preemptors_per_pass: must be 0 or more");
  }
  if (policy.backfill.depth < 0) {
    return InvalidArgument("backfill.depth: must be 0 or more");
  }
  return OkStatus();
}

}  // namespace gf
