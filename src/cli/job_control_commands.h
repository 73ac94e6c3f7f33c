// The job control subcommands (issue #24), as Slurm's scontrol and scancel: `hold` and
// `release` of pending jobs (or of an array's pending tasks with --array), `requeue` of a running
// job, `update` of a pending job, `cancel` by filter (--user, --state, --name, --team), and
// `cancel --signal` of running jobs. Each is one or a few API calls (POST
// /api/v1/jobs/{id}/hold, ..., /api/v1/jobs/cancel, /api/v1/jobs/signal); the server checks who
// may. Single-threaded, like the process that runs them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/client_commands.h"

namespace gf {

// `gpufleet cancel --user U --state S --name N --team T` (scancel -u -t -n -A).
struct CancelFilter {
  std::string user;
  std::string state;  // a state name, or Slurm's short PD / R
  std::string name;
  std::optional<std::string> team;  // "" names the jobs of no team
  bool Empty() const { return user.empty() && state.empty() && name.empty() && !team; }
};

// The filter's options on `cancel`.
void AddCancelFilterOptions(CLI::App& cancel, CancelFilter& filter);

// Cancels the jobs the filter matches among those the caller may cancel, and says how many
// ("Cancelled 3 jobs: 12, 13, 17"). The exit code.
int RunCancelMatching(const ClientContext& ctx, const CancelFilter& filter);

// `gpufleet cancel --signal SIG` (scancel --signal): SIG ("USR1", "SIGUSR1", "10") to the
// processes of each running job named, or of every running job the filter matches (the others
// it matches are named as skipped), without ending them. The exit code.
int RunSignal(const ClientContext& ctx,
              const std::vector<std::string>& ids,
              bool arrays,
              const CancelFilter& filter,
              const std::string& signal);

// Registers hold, release, requeue and update on `app`.
void AddJobControlCommands(CLI::App& app, ClientContext& ctx);

}  // namespace gf
