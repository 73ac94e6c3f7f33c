#include "controller/submit_team.h"

#include <set>

#include "controller/authorization.h"

namespace gf {

Status CheckSubmitTeam(const Caller& caller,
                       const std::string& team,
                       const PolicyConfig& policy,
                       const std::map<std::string, std::string>& team_of_user) {
  if (team.empty()) {
    return OkStatus();
  }
  // The known teams: those with a policy ([team.NAME]) and those that only list members. A team
  // name is never a free label, with teams configured or not: every name a job carries becomes
  // label values of /metrics and rows of the report, so an invented one is refused here.
  std::set<std::string> known;
  for (const TeamPolicy& t : policy.teams) {
    known.insert(t.name);
  }
  for (const auto& [user, name] : team_of_user) {
    known.insert(name);
  }
  if (known.empty()) {
    return InvalidArgument("team: no teams are configured on this server, so '" + team +
                           "' is unknown; leave --team out (an admin defines teams as "
                           "[team.NAME] in the server's settings, docs/config.md)");
  }
  if (known.count(team) == 0) {
    std::string names;
    for (const std::string& name : known) {
      names += (names.empty() ? "" : ", ") + name;
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
