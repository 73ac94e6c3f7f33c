#include "controller/usage_book.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

#include "controller/authorization.h"

namespace gf {
namespace {

// Stored runs read per page when the fair share is seeded at start.
constexpr int kUsagePage = 10'000;

// The quota ledger's rule (scheduler/quota/ledger.cpp): a budget is spent once used reaches it.
bool BudgetSpent(const std::optional<double>& budget_gpu_hours, double used_gpu_hours) {
  return budget_gpu_hours.has_value() && used_gpu_hours >= *budget_gpu_hours;
}

}  // namespace

void FillTeamPolicy(const PolicyConfig& policy, TeamQuota& team) {
  const TeamPolicy* rules = &policy.other_teams;
  for (const TeamPolicy& listed : policy.teams) {
    if (listed.name == team.team) {
      rules = &listed;
    }
  }
  team.over_budget = rules->over_budget == OverBudget::kHold ? "hold" : "borrow_only";
  if (policy.teams.empty()) {
    return;
  }
  team.guaranteed_gpus = rules->guaranteed_gpus;
  team.max_gpus = rules->max_gpus;
  team.budget_gpu_hours = rules->gpu_hour_budget;
  if (rules->gpu_hour_budget) {
    team.left_gpu_hours = std::max(0.0, *rules->gpu_hour_budget - team.used_gpu_hours);
  }
  team.out_of_budget = BudgetSpent(rules->gpu_hour_budget, team.used_gpu_hours);
}

std::set<std::string> TeamsOverBudget(const PolicyConfig& policy,
                                      const std::map<std::string, double>& hours) {
  std::set<std::string> over;
  for (const auto& entry : hours) {
    // Not a structured binding: clang 14 (clang-tidy, the fuzz build) cannot capture one.
    const std::string& team = entry.first;
    const double used = entry.second;
    const auto listed = std::find_if(policy.teams.begin(),
                                     policy.teams.end(),
                                     [&](const TeamPolicy& t) { return t.name == team; });
    const TeamPolicy& rules = listed == policy.teams.end() ? policy.other_teams : *listed;
    if (BudgetSpent(rules.gpu_hour_budget, used)) {
      over.insert(team);
    }
  }
  return over;
}

Result<std::map<JobId, double>> EarlierRunsOf(StoreReader& store,
                                              const std::map<JobId, Job>& active) {
  std::map<JobId, double> earlier;
  if (active.empty()) {
    return earlier;
  }
  Time oldest = active.begin()->second.submit_time;
  for (const auto& [id, job] : active) {
    oldest = std::min(oldest, job.submit_time);
  }
  std::int64_t after_seq = 0;
  while (true) {
    // A run ends after its job was submitted: a millisecond earlier keeps a run of no length.
    GF_ASSIGN_OR_RETURN(std::vector<UsageRecord> page,
                        store.ListUsage(oldest - Millis(1), after_seq, kUsagePage));
    if (page.empty()) {
      return earlier;
    }
    after_seq = page.back().seq;
    for (const UsageRecord& run : page) {
      if (active.contains(run.job)) {
        earlier[run.job] += run.gpu_seconds;
      }
    }
  }
}

UsageBook::UsageBook(UsageBookOptions options)
    : options_(std::move(options)),
      team_usage_(options_.policy.fair_share.half_life),
      user_usage_(options_.policy.fair_share.half_life) {}

Status UsageBook::Load(StoreReader& store, Time now, const std::vector<RunningSpan>& running) {
  const Period period = MonthOf(now);
  GF_ASSIGN_OR_RETURN(std::vector<UsageSum> stored, store.SumUsage(period.start, period.end));
  accounting_.Reset(now, stored);
  const FairSharePolicy& fair_share = options_.policy.fair_share;
  const std::chrono::seconds half_life = fair_share.half_life;
  if (half_life.count() <= 0) {
    return OkStatus();  // no decay: the ledgers count plain GPU-seconds from this start
  }
  FairShareSeed seed = SeedFairShare({}, running, now, fair_share);
  std::int64_t after_seq = 0;
  std::size_t runs = 0;
  while (true) {
    GF_ASSIGN_OR_RETURN(std::vector<UsageRecord> page,
                        store.ListUsage(SeedHorizon(now, half_life), after_seq, kUsagePage));
    if (page.empty()) {
      break;
    }
    after_seq = page.back().seq;
    runs += page.size();
    const FairShareSeed part = SeedFairShare(page, {}, now, fair_share);
    for (const auto& [team, value] : part.teams) {
      seed.teams[team] += value;
    }
    for (const auto& [user, value] : part.users) {
      seed.users[user] += value;
    }
  }
  team_usage_.Seed(now, std::move(seed.teams));
  user_usage_.Seed(now, std::move(seed.users));
  spdlog::info("controller: fair share seeded from {} stored runs", runs);
  return OkStatus();
}

void UsageBook::Advance(Time now, const std::vector<RunningSpan>& running) {
  // GPUs held, each counted at its models' fair-share weight.
  std::map<std::string, double> by_team;
  std::map<std::string, double> by_user;
  const FairSharePolicy& fair_share = options_.policy.fair_share;
  for (const RunningSpan& span : running) {
    const double gpus = span.gpus * (WeighsModels() ? ModelWeight(fair_share, span.gpu_models) : 1);
    by_team[span.team] += gpus;
    by_user[span.user] += gpus;
  }
  team_usage_.Advance(now, by_team);
  user_usage_.Advance(now, by_user);
  accounting_.Roll(now);
}

UsageRecord UsageBook::RunEnded(const Job& job,
                                std::int64_t energy_mj,
                                std::vector<std::string> gpu_models,
                                Time now) {
  UsageRecord record = RunRecord(job, now, energy_mj, std::move(gpu_models));
  accounting_.AddRun(record, now);
  return record;
}

PassUsage UsageBook::ForPass(const std::vector<RunningSpan>& running, Time now) const {
  PassUsage usage;
  for (const auto& [team, sum] : team_usage_.Sums()) {
    usage.teams[team].decayed_gpu_seconds = sum;
  }
  usage.users = user_usage_.Sums();
  for (const auto& [team, hours] : accounting_.TeamHours(running, now)) {
    usage.teams[team].period_gpu_hours = hours;
  }
  return usage;
}

bool UsageBook::HasBudgets() const {
  const PolicyConfig& policy = options_.policy;
  return policy.other_teams.gpu_hour_budget.has_value() ||
         std::any_of(policy.teams.begin(), policy.teams.end(), [](const TeamPolicy& t) {
           return t.gpu_hour_budget.has_value();
         });
}

std::set<std::string> UsageBook::OverBudgetNow(const std::vector<RunningSpan>& running,
                                               Time now) const {
  if (!HasBudgets()) {
    return {};
  }
  return TeamsOverBudget(options_.policy, accounting_.TeamHours(running, now));
}

// Costs a walk over the running jobs, and only where budgets are configured.
bool UsageBook::BudgetsCrossed(const std::vector<RunningSpan>& running, Time now) const {
  return OverBudgetNow(running, now) != over_budget_;
}

void UsageBook::NoteFullPass(const std::vector<RunningSpan>& running, Time now) {
  over_budget_ = OverBudgetNow(running, now);
}

// Root and operators every team; another user the team they submit to by default and the
// teams of their jobs and of their usage this period.
std::set<std::string> UsageBook::TeamsOf(const Caller& caller,
                                         const std::set<std::string>& job_teams,
                                         const std::map<TeamUser, double>& used) const {
  std::set<std::string> teams = job_teams;
  if (auto team = options_.team_of_user.find(caller.user); team != options_.team_of_user.end()) {
    teams.insert(team->second);
  }
  for (const auto& [key, hours] : used) {
    if (key.second == caller.user) {
      teams.insert(key.first);
    }
  }
  return teams;
}

QuotaReport UsageBook::Quota(const Caller& caller,
                             const std::set<std::string>& job_teams,
                             const std::vector<RunningSpan>& running,
                             Time now) const {
  const PolicyConfig& policy = options_.policy;
  const std::map<TeamUser, double> used = accounting_.UserHours(running, now);
  const std::map<TeamUser, std::int64_t> energy = accounting_.UserEnergyMj(running, now);
  std::map<std::string, std::int64_t> team_energy;
  for (const auto& [key, mj] : energy) {
    team_energy[key.first] += mj;
  }
  QuotaReport report{.period_start = accounting_.CurrentPeriod().start,
                     .period_end = accounting_.CurrentPeriod().end,
                     .quotas_on = !policy.teams.empty()};
  // Every listed team, and every team that used or holds GPUs.
  std::map<std::string, TeamQuota> teams;
  for (const TeamPolicy& team : policy.teams) {
    teams[team.name].listed = true;
  }
  for (const auto& [key, hours] : used) {
    teams[key.first].used_gpu_hours += hours;
  }
  for (const RunningSpan& span : running) {
    TeamQuota& team = teams[span.team];
    team.held_milli += span.held_milli;
    team.borrowed_milli += span.borrowed ? span.held_milli : 0;
  }
  const bool every_team = Allows(caller, Resource::kTeam, Action::kRead, Ownership::kOther);
  const std::set<std::string> mine =
      every_team ? std::set<std::string>{} : TeamsOf(caller, job_teams, used);
  for (auto& [name, team] : teams) {
    if (!every_team && !mine.contains(name)) {
      continue;
    }
    team.team = name;
    FillTeamPolicy(policy, team);
    const auto mj = team_energy.find(name);
    team.energy = ChargeFor(mj == team_energy.end() ? 0 : mj->second, options_.energy_price);
    report.teams.push_back(std::move(team));
  }
  for (const auto& [key, hours] : used) {
    if (every_team || key.second == caller.user) {
      const auto mj = energy.find(key);
      report.users.push_back(UserQuota{
          .team = key.first,
          .user = key.second,
          .used_gpu_hours = hours,
          .energy = ChargeFor(mj == energy.end() ? 0 : mj->second, options_.energy_price)});
    }
  }
  return report;
}

}  // namespace gf
