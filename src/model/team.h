// Team and User: who submits work and how it is accounted (DESIGN.md §5).
// Quotas and fair share (#4) read these; v1 records the team named at submit time.
// Plain value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gf {

struct Team {
  std::string name;
  std::vector<std::string> members;             // Unix user names
  int guaranteed_gpus = 0;                      // always available to the team
  std::optional<int> borrow_limit_gpus;         // above the guarantee, when others' GPUs are idle
  std::optional<std::int64_t> gpu_hour_budget;  // per accounting period
  int fairshare_weight = 1;
};

enum class Role { kUser, kOperator, kAdmin };
std::string_view ToString(Role r);  // "user", "operator", "admin"
Result<Role> ParseRole(std::string_view s);

struct User {
  std::uint32_t uid = 0;
  std::string name;
  std::vector<std::string> teams;
  Role role = Role::kUser;
};

// Team names as people type them in --team and config files: 1-64 characters of letters,
// digits, '-', '_' and '.', starting with a letter or digit. Errors name the field.
Status ValidateTeamName(std::string_view name);

// How every text a person reads (CLI, reasons, events, reports) names jobs of no team: one
// spelling, "(none)", which no team can take (ValidateTeamName refuses parentheses). /metrics
// keeps the label value "default" for them (prometheus.cpp), which dashboards already select.
inline constexpr std::string_view kNoTeam = "(none)";

// `team` as a person reads it: the name, or kNoTeam for "" (a job of no team).
std::string TeamLabel(std::string_view team);

}  // namespace gf
