// UsageBook: what the cluster's GPUs were used for, as fair share, budgets and `gpufleet
// quota` read it. It owns the two decayed fair-share ledgers (per team, per user: UsageLedger),
// the budget period's sums (Accounting, accounting.h) and the teams' budget verdicts as the last
// full pass saw them.
//
// Why a component of its own, beside Accounting rather than inside it: Accounting is the
// period's arithmetic (sums, clipping, the seed), tested on its own; the book is the state the
// controller used to keep in five fields and a dozen member functions, with the policy that
// turns usage into verdicts and reports. Jobs stay the controller's: every call takes the
// running jobs as values (RunningSpan: team, user, GPUs held, start, GPU models, energy), and
// answers with values (the usage record for the store batch, the usage a scheduling pass's
// ClusterSnapshot carries, the quota report for a caller, whether a budget was crossed since
// the last full pass). It reads the store once, at Load, through the read-only StoreReader.
//
// Owned by the Controller. Not thread-safe: the controller's state thread only, like the jobs
// whose spans it is given. The free functions are pure.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/accounting.h"
#include "core/clock.h"
#include "core/result.h"
#include "model/energy.h"
#include "model/job.h"
#include "model/node.h"
#include "model/snapshot.h"
#include "model/usage_record.h"
#include "scheduler/ordering/usage_ledger.h"
#include "scheduler/policy.h"
#include "service/service.h"
#include "store/store.h"

namespace gf {

// The rules `team.team` runs under (its [team.NAME] section, else other_teams), as the
// scheduler's quota ledger applies them, filled into `team`; with no team listed, quotas and
// budgets are off. Reads team.used_gpu_hours for what is left of a budget.
void FillTeamPolicy(const PolicyConfig& policy, TeamQuota& team);

// The teams at or over their GPU-hour budget, given each team's GPU-hours this period (the
// quota ledger's rule, scheduler/quota/ledger.cpp).
std::set<std::string> TeamsOverBudget(const PolicyConfig& policy,
                                      const std::map<std::string, double>& hours);

// A restart: the GPU-seconds each active job's ended runs held (its usage records), for
// JobBook::RestoreEarlierRuns. Reads the records that ended since the oldest active job was
// submitted, in pages; jobs with no ended run are absent.
Result<std::map<JobId, double>> EarlierRunsOf(StoreReader& store,
                                              const std::map<JobId, Job>& active);

// What a scheduling pass is shown of usage: ClusterSnapshot::team_usage and
// ClusterSnapshot::user_decayed_gpu_seconds.
struct PassUsage {
  std::map<std::string, TeamUsage> teams{};
  std::map<std::string, double> users{};
};

struct UsageBookOptions {
  PolicyConfig policy{};  // fair_share (half-life, model weights) and the teams' budgets
  // A user's default team ([team.NAME] members): a team `quota` shows them without any use.
  std::map<std::string, std::string> team_of_user{};
  EnergyPrice energy_price{};  // what quota charges for a GPU's energy
};

class UsageBook {
 public:
  explicit UsageBook(UsageBookOptions options);

  // At start: the period holding `now` from the store's sums over it, and the fair-share
  // ledgers seeded from the stored runs of the last ten half-lives plus `running`'s time so far
  // (accounting.h SeedFairShare), so that a restart keeps both. Errors: the store's.
  Status Load(StoreReader& store, Time now, const std::vector<RunningSpan>& running);

  // Each turn, before its commands: the ledgers brought to `now`, credited with what `running`
  // held since the last call (each span at its GPU models' weight), and the period rolled over
  // when a month began. `running` needs no energy, nor GPU models when WeighsModels() is false.
  void Advance(Time now, const std::vector<RunningSpan>& running);
  // Whether the fair share weighs GPU models ([scheduler.model_weights]): only then does
  // Advance read RunningSpan::gpu_models.
  bool WeighsModels() const { return !options_.policy.fair_share.model_weights.empty(); }

  // A run of `job` ended at `now` (it gave up its GPUs): its record (accounting.h RunRecord:
  // `energy_mj` its GPUs' energy in the run, `gpu_models` GpuModelsOn its node) is added to the
  // period's sums and returned, for the turn's store batch. REQUIRES: job.allocation and
  // job.start_time.
  UsageRecord RunEnded(const Job& job,
                       std::int64_t energy_mj,
                       std::vector<std::string> gpu_models,
                       Time now);

  // The fair-share and budget usage a pass at `now` is shown.
  PassUsage ForPass(const std::vector<RunningSpan>& running, Time now) const;

  // Budgets are a hard threshold on a usage that grows with time, unlike the fair-share order:
  // a team that crossed one since the last full pass must not have a job started on the usage
  // of then. BudgetsCrossed: whether any team's verdict at `now` differs from the one
  // NoteFullPass recorded (false, and `running` unread, when no budget is configured: check
  // HasBudgets before building the spans on a hot path). NoteFullPass: a full pass decides on
  // the verdicts of `now`.
  bool HasBudgets() const;
  bool BudgetsCrossed(const std::vector<RunningSpan>& running, Time now) const;
  void NoteFullPass(const std::vector<RunningSpan>& running, Time now);

  // `gpufleet quota` for `caller` (already allowed to read its own teams): per team the policy,
  // the GPUs held and borrowed now, GPU-hours used and left and the energy this period; per
  // user GPU-hours and energy. Operators see every team; anyone else the teams in TeamsOf.
  // `job_teams`: the teams of the caller's active jobs.
  QuotaReport Quota(const Caller& caller,
                    const std::set<std::string>& job_teams,
                    const std::vector<RunningSpan>& running,
                    Time now) const;

  // The budget period's figures, for budget alerts.
  const Period& CurrentPeriod() const { return accounting_.CurrentPeriod(); }
  std::map<std::string, double> TeamHours(const std::vector<RunningSpan>& running, Time now) const {
    return accounting_.TeamHours(running, now);
  }

 private:
  // The teams a non-operator caller may see in `quota`: the team they submit to by default,
  // those of their jobs (`job_teams`) and those they used GPUs in this period (`used`).
  std::set<std::string> TeamsOf(const Caller& caller,
                                const std::set<std::string>& job_teams,
                                const std::map<TeamUser, double>& used) const;
  std::set<std::string> OverBudgetNow(const std::vector<RunningSpan>& running, Time now) const;

  UsageBookOptions options_;
  UsageLedger team_usage_;             // decayed GPU-seconds by team name ("" = no team)
  UsageLedger user_usage_;             // decayed GPU-seconds by user name
  Accounting accounting_;              // GPU-seconds per (team, user) in the budget period
  std::set<std::string> over_budget_;  // teams over their GPU-hour budget at the last full pass
};

}  // namespace gf
