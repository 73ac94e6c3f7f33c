#include "model/team.h"

#include <algorithm>
#include <cctype>

namespace gf {

std::string_view ToString(Role r) {
  switch (r) {
    case Role::kUser:
      return "user";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
  }
  return "user";
}

Result<Role> ParseRole(std::string_view s) {
  for (Role r : {Role::kUser, Role::kOperator, Role::kAdmin}) {
    if (ToString(r) == s) {
      return r;
    }
  }
  return InvalidArgument("role: '" + std::string(s) +
                         "' is not a role; use user, operator or admin");
}

std::string TeamLabel(std::string_view team) {
  return std::string(team.empty() ? kNoTeam : team);
}

Status ValidateTeamName(std::string_view name) {
  constexpr std::size_t kMaxTeamName = 64;
  auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  };
  if (name.empty() || name.size() > kMaxTeamName ||
      std::isalnum(static_cast<unsigned char>(name[0])) == 0 ||
      !std::all_of(name.begin(), name.end(), allowed)) {
    return InvalidArgument("team: '" + std::string(name) +
                           "' is not a team name; use 1-64 letters, digits, '-', '_' or '.', "
                           "starting with a letter or digit");
  }
  return OkStatus();
}

}  // namespace gf
