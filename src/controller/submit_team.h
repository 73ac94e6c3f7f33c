// The team a submission may name (issue #20): a job is charged to its team, runs under that
// team's guarantee, max_gpus and GPU-hour budget, and is labelled with it in /metrics, so
// naming a team is spending it. With teams configured ([team.NAME] in the settings file), a
// job names a configured team, and a user names only their own ([team.NAME] members); an admin
// (root on the socket, or an admin token) may charge any configured team. Operators see and
// cancel every job and drain nodes, but budgets are an admin's (model/team.h): they name their
// own team like any user. With no team configured there is no team to name: `--team` is
// refused (a free label would let anyone add series to /metrics and rows to the report).
//
// A job that names no team is charged to its user's team (ControllerOptions::team_of_user) or,
// for a user in no team, to none ([other_teams]); that is AddJob's, not a check.
//
// Pure function; thread-safe.
#pragma once

#include <map>
#include <string>

#include "core/result.h"
#include "scheduler/policy.h"
#include "service/service.h"

namespace gf {

// Whether `caller` may submit a job naming `team` ("" = none named: always OK) under `policy`,
// with `team_of_user` the [team.NAME] members (user → team).
// Errors: kInvalidArgument "team: unknown team 'nosuch'; known teams: cv, ml" (the configured
// teams, sorted), or "team: no teams are configured on this server, ..." when there are none;
// kPermissionDenied naming the caller's team and the admin's way to change it.
Status CheckSubmitTeam(const Caller& caller,
                       const std::string& team,
                       const PolicyConfig& policy,
                       const std::map<std::string, std::string>& team_of_user);

}  // namespace gf
