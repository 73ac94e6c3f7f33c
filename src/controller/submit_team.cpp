#include "controller/submit_team.h"

#include <algorithm>

#include "controller/authorization.h"

namespace gf {

Status CheckSubmitTeam(const Caller& caller,
                       const std::string& team,
                       const PolicyConfig& policy,
                       const std::map<std::string, std::string>& team_of_user) {
  if (team.empty() || policy.teams.empty()) {
    return OkStatus();
  }
  const bool known = std::any_of(policy.teams.begin(),
                                 policy.teams.end(),
                                 [&](const TeamPolicy& t) { return t.name == team; });
  if (!known) {
    // Also what keeps /metrics bounded: every team name a job carries becomes label values.
    std::string names;
    for (const TeamPolicy& t : policy.teams) {
      names += (names.empty() ? "" : ", ") + t.name;
    }
    return InvalidArgument("team: unknown team '" + team + "'; known teams: " + names);
  }
  // Who may charge which team is the authorization table's (team charge own/other's): a
  // member its own team, an admin any team, like approving past a budget.
  const auto own = team_of_user.find(caller.user);
  const Ownership whose =
      own != team_of_user.end() && own->second == team ? Ownership::kOwn : Ownership::kOther;
  if (Allows(caller, Resource::kTeam, Action::kCharge, whose)) {
    return OkStatus();
  }
  const std::string mine = own == team_of_user.end()
                               ? caller.user +
                                     " is in no team: leave --team out (jobs of no team follow "
                                     "[other_teams])"
                               : caller.user + " is in team " + own->second +
                                     ": leave --team out or name " + own->second;
  return PermissionDenied("team: only members of team " + team +
                          " and admins may charge jobs "
                          "to it; " +
                          mine + ", or ask an admin to make " + caller.user + " a member ([team." +
                          team + "] members in the server's settings)");
}

}  // namespace gf
