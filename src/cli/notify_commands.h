// `gpufleet notify add|list|remove` (issue #8): notification subscriptions, over the API
// (/api/v1/subscriptions). Same rules as client_commands.h: a table, or JSON with --json.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/client_commands.h"
#include "core/result.h"

namespace gf {

// The flags of `gpufleet notify add`.
struct NotifyAddFlags {
  std::string webhook{};  // --webhook URL
  std::string email{};    // --email ADDRESS
  std::string team{};     // --team T: the team's jobs and budget
  bool all = false;       // --all: everything (admins)
  std::int64_t job = 0;   // --job ID: one job, or every task of an array (0: not set)
  std::string events{};   // --events job_end,job_failed,... ("" = every event)
};

// The POST /api/v1/subscriptions body for these flags. Errors: kInvalidArgument naming the
// flag and the fix (neither or both of --webhook and --email, two of --team, --all and --job,
// a URL that is
// not http(s), an address without @, an unknown event).
Result<nlohmann::json> SubscriptionBody(const NotifyAddFlags& flags);

void AddNotifyCommands(CLI::App& app, ClientContext& context);

}  // namespace gf
