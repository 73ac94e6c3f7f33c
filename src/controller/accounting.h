// Accounting: GPU-time per team and user for GPU-hour budgets (per calendar month, UTC) and the
// fair-share usage a restarted controller starts from.
//
// The store keeps one UsageRecord per ended run (store.h); the controller writes it when the
// run ends. `Accounting` keeps the current period's sums in memory: loaded once from the store
// at start (Store::SumUsage over the period), then added to as runs end; running jobs are added
// at read time for their time so far. A budget therefore counts every GPU-second, ended or not,
// and a restart loses nothing. The pure functions below are the arithmetic, shared by tests.
//
// State thread only (like the controller that owns it); the free functions are pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "model/job.h"
#include "model/node.h"
#include "model/usage_record.h"
#include "scheduler/policy.h"

namespace gf {

// A budget period: [start, end).
struct Period {
  Time start{};
  Time end{};
  bool operator==(const Period&) const = default;
};

// The calendar month (UTC) that holds `t`: 2026-03-31T23:59:59Z → [2026-03-01, 2026-04-01).
Period MonthOf(Time t);

// Seconds of [start, end) that fall in [from, to), times `gpus` (a fractional job's share, e.g.
// 0.25, charges that part of its GPU: issue #7); 0 when they do not overlap.
double OverlapGpuSeconds(Time start, Time end, double gpus, Time from, Time to);

// The part of a run's gpu_seconds inside [from, to): its share of the time (the store's
// SumUsage rule). A zero-length run counts whole when it lies in the range.
double ClippedGpuSeconds(const UsageRecord& run, Time from, Time to);
// The same for its energy: the part of run.energy_mj inside [from, to), rounded to a mJ.
std::int64_t ClippedEnergyMj(const UsageRecord& run, Time from, Time to);

// What a run's gpu_seconds, spread evenly over [start, end], is worth at `now` with usage
// halving every `half_life` (each instant decayed by its own age, as UsageLedger does), so a
// restart seeds the same sums the ledger would have kept. Requires half_life > 0, end <= now.
double DecayedRunGpuSeconds(const UsageRecord& run, Time now, std::chrono::seconds half_life);

// Runs that ended before this are worth less than 0.1 % of their GPU-seconds (ten half-lives):
// the fair-share seed skips them.
Time SeedHorizon(Time now, std::chrono::seconds half_life);

// A job holding GPUs now, as accounting sees it.
struct RunningSpan {
  std::string team{};
  std::string user{};
  double gpus = 0;                        // GPUs it holds; a fractional job its share (0.25)
  Time start{};                           // the run's start (now for a job still starting)
  std::vector<std::string> gpu_models{};  // distinct models of its GPUs (fair-share weights)
  std::int64_t energy_mj = 0;             // its GPUs' energy in this run so far (telemetry)
  int held_milli = 0;                     // what it holds in milli-GPUs (`gpus` x 1000)
  bool borrowed = false;                  // started on borrowed GPUs: preemptible
};

// Decayed GPU-seconds per team and per user at `now`, from ended runs and the running jobs'
// time so far, each weighted by its GPU models (ModelWeight): what UsageLedger::Seed takes at
// start-up. Requires fair_share.half_life > 0.
struct FairShareSeed {
  std::map<std::string, double> teams{};
  std::map<std::string, double> users{};
};
FairShareSeed SeedFairShare(const std::vector<UsageRecord>& runs,
                            const std::vector<RunningSpan>& running,
                            Time now,
                            const FairSharePolicy& fair_share);

// The usage record of `job`'s run from its start to its end (`now` while it runs), charged by
// what it held (a fractional job its share of its GPU: issue #7). The controller stores it when
// the run ends; a report adds the runs still going. REQUIRES: job.allocation and
// job.start_time. `gpu_models`: GpuModelsOn(its node, job).
UsageRecord RunRecord(const Job& job,
                      Time now,
                      std::int64_t energy_mj,
                      std::vector<std::string> gpu_models);
// The distinct models of the GPUs of `node` that `job` holds, sorted (none when node is null).
// REQUIRES: job.allocation.
std::vector<std::string> GpuModelsOn(const Node* node, const Job& job);

using TeamUser = std::pair<std::string, std::string>;

class Accounting {
 public:
  // Starts the period holding `now` with `stored`, the store's sums over that period.
  void Reset(Time now, const std::vector<UsageSum>& stored);
  // Moves to the period holding `now` when it changed; the new one starts from zero: runs that
  // end later are added by AddRun, runs that ended earlier have no part in it.
  void Roll(Time now);
  // A run ended (its record is on its way to the store): adds its part in the period of `now`.
  void AddRun(const UsageRecord& run, Time now);

  const Period& CurrentPeriod() const { return period_; }
  // GPU-hours per (team, user) in the period up to `now`: ended runs plus `running`.
  std::map<TeamUser, double> UserHours(const std::vector<RunningSpan>& running, Time now) const;
  // The same summed per team.
  std::map<std::string, double> TeamHours(const std::vector<RunningSpan>& running, Time now) const;
  // GPU energy per (team, user) in the period up to `now`, millijoules: ended runs plus the
  // running ones' energy so far (the part of it inside the period, pro rata to time).
  std::map<TeamUser, std::int64_t> UserEnergyMj(const std::vector<RunningSpan>& running,
                                                Time now) const;

 private:
  Period period_;
  std::map<TeamUser, double> ended_gpu_seconds_;
  std::map<TeamUser, std::int64_t> ended_energy_mj_;
};

}  // namespace gf
