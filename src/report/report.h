// Report: the monthly audit of where the GPU time went (issue #9, `gpufleet report`,
// docs/reports.md): utilisation allocated vs actually used per cluster, node, GPU and day; idle
// and overloaded GPUs; GPU-hours per team and user; quota and budget consumption; waste
// (allocated-but-idle GPU-hours) and the jobs behind it; queueing delay by class; preemptions,
// failures, idle reaping; energy, cost and CO2; and recommendations with the numbers behind them.
//
// Computed on the server from what the store keeps (per-minute GPU rollups, usage records of
// runs, events, jobs, nodes), so that every client gets the same figures. The arithmetic is
// pure: `ReportBuilder` takes the inputs in pages (a month of minutes of a large cluster does
// not fit in memory at once) and `Finish` computes the figures; `ComputeReport` does both over
// an input held whole (tests). No I/O, clock or globals; a builder is a plain object, used by
// one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"
#include "model/audit_report.h"
#include "model/energy.h"
#include "model/event.h"
#include "model/gpu_minute.h"
#include "model/job.h"
#include "model/node.h"
#include "model/usage_record.h"
#include "predict/load_forecast.h"

namespace gf {

// ---- thresholds (docs/reports.md explains each) ---------------------------------------------

// A minute whose mean utilisation is under this is idle: a job that holds the GPU then is
// wasting it. 5 % rather than 0: a loaded framework that waits for input still ticks a little.
inline constexpr double kIdleUtilPct = 5.0;
// A GPU is idle over the period when it was allocated less than this share of its observed
// minutes (nobody asked for it) ...
inline constexpr double kIdleGpuAllocatedPct = 10.0;
// ... or when its holders used it less than this on average (it was asked for and not used).
inline constexpr double kIdleGpuUsedPct = kIdleUtilPct;
// A GPU is overloaded when it was allocated at least this share of its minutes and its holders
// kept it at least kOverloadedUsedPct busy: work queues for it, a bigger pool would help.
inline constexpr double kOverloadedAllocatedPct = 80.0;
inline constexpr double kOverloadedUsedPct = 90.0;
// A GPU degraded or failed (heat, XID, ECC) for at least this share of its minutes is flagged
// unhealthy: a card that throttles a few minutes a day is worth a look.
inline constexpr double kUnhealthyPct = 1.0;
// A team that used less than this share of the GPU time it held gets a recommendation.
inline constexpr double kLowTeamUsePct = 50.0;
// A user whose jobs all peaked under this share of their GPUs' memory could share GPUs; only
// counted from kMinJobsForSharing jobs, so that one small test job does not make a pattern.
inline constexpr double kSmallMemoryPct = 25.0;
inline constexpr int kMinJobsForSharing = 3;
// Recommendations about teams and users need at least this much GPU time behind them, so that
// a few minutes of testing do not produce advice.
inline constexpr double kMinRecommendGpuHours = 0.05;
// The waste section lists at most this many jobs, most idle GPU-hours first.
inline constexpr std::size_t kWasteJobs = 10;
// The capacity advice (CapacityAdvice, recommend.h) reads the load forecast this many hours past
// the period, once the period has at least kForecastMinHours of demand to learn from ...
inline constexpr int kForecastHours = 7 * 24;
inline constexpr int kForecastMinHours = 24;
// ... and calls capacity spare when the forecast's busiest hour wants less than this share of
// the cluster's GPUs.
inline constexpr double kSpareCapacityPct = 50.0;

// ---- input --------------------------------------------------------------------------------

// One run of a job (a UsageRecord, or a running job's run so far) with its part inside the
// period, clipped by the caller with the accounting rules (controller/accounting.h
// ClippedGpuSeconds / ClippedEnergyMj), so the report and `gpufleet quota` agree.
struct ReportRun {
  UsageRecord run{};
  double gpu_seconds = 0;      // inside the period
  std::int64_t energy_mj = 0;  // inside the period
};

// A team's rules, from the settings file (PolicyConfig), for quota and budget consumption.
struct TeamAllowance {
  std::string team{};
  int guaranteed_gpus = 0;
  std::optional<int> max_gpus{};
  std::optional<double> budget_gpu_hours{};  // per month
};

// What the figures cover and who reads them.
struct ReportContext {
  std::string period{};  // "2026-11"
  Time start{};          // [start, end): the calendar month, UTC
  Time end{};
  Time now{};                          // figures run to min(now, end)
  std::vector<Node> nodes{};           // the GPU inventory (index, model, memory)
  std::vector<TeamAllowance> teams{};  // configured teams; empty = quotas off
  EnergyPrice price{};
};

// Who may see what: nullopt = everything. A user sees the figures of their own teams
// (`teams`) and only their own user rows and jobs (`user`); `--team` narrows `teams` to one.
// Cluster, node, GPU and day figures are the cluster's and visible to all (as `gpufleet gpus`).
struct ReportScope {
  std::optional<std::set<std::string>> teams{};
  std::optional<std::string> user{};
  std::optional<std::string> team_filter{};  // the --team asked for, echoed in the report
};

// Everything at once (tests, small stores).
struct ReportInput {
  ReportContext context{};
  ReportScope scope{};
  std::vector<GpuMinute> minutes{};  // inside [start, end)
  std::vector<ReportRun> runs{};     // overlapping [start, end)
  std::vector<Event> events{};       // inside [start, end)
  std::vector<Job> jobs{};           // the jobs of those runs, minutes and events
};

// ---- output: Report and its rows (model/audit_report.h) ------------------------------------

// ---- computing ----------------------------------------------------------------------------

// "2026-11" → 2026-11-01T00:00:00Z. Errors: kInvalidArgument "period: '2026-13' is not a month;
// use YYYY-MM, e.g. 2026-11".
Result<Time> ParseMonth(std::string_view text);
// 2026-11-05T10:00Z → "2026-11".
std::string MonthLabel(Time t);

// The running sums behind MinuteFigures.
struct MinuteSums {
  std::int64_t observed = 0;
  // GPU-minutes held: a minute counts for the part of it a job held the GPU
  // (GpuMinute::allocated_ms), so a run that starts or ends within a minute counts for its
  // part, as its run record does.
  double allocated = 0;
  double idle_allocated = 0;
  std::int64_t unhealthy = 0;
  double util_sum = 0;            // of util_mean_pct, every observed minute
  double util_sum_allocated = 0;  // of util_mean_pct, the allocated minutes
  std::int64_t energy_mj = 0;
  void Add(const GpuMinute& minute);
  void Add(const MinuteSums& other);
  MinuteFigures Figures(const EnergyPrice& price) const;
};

class ReportBuilder {
 public:
  explicit ReportBuilder(ReportContext context);

  // Pages of input, in any order and any number of calls. Minutes outside the period are
  // ignored; so are events.
  void AddMinutes(const std::vector<GpuMinute>& minutes);
  void AddRuns(const std::vector<ReportRun>& runs);
  void AddEvents(const std::vector<Event>& events);
  // The jobs named by the runs, minutes and events added so far: their names and submit times.
  std::set<JobId> JobsWanted() const;
  void AddJobs(const std::vector<Job>& jobs);

  // The figures as `scope` may see them.
  Report Finish(const ReportScope& scope) const;

 private:
  struct JobMinutes {
    MinuteSums sums{};
    std::string team{};
    std::string user{};
    std::int64_t peak_memory_mib = 0;  // highest use on one of its GPUs
    std::int64_t gpu_memory_mib = 0;   // the largest of its GPUs
  };
  using TeamUser = std::pair<std::string, std::string>;
  using GpuKey = std::pair<std::string, std::string>;  // node, uuid

  std::int64_t GpuMemoryMib(const std::string& uuid) const;
  std::vector<GpuFigures> GpuRows() const;
  std::vector<UserFigures> UserRows() const;
  std::vector<WorkloadFigures> WorkloadRows(
      const std::function<bool(const std::string&, const std::string&)>& shown) const;
  // Usage figures of some jobs: their runs' clipped GPU time and energy, their held minutes.
  UsageFigures Usage(std::size_t jobs,
                     double gpu_seconds,
                     std::int64_t energy_mj,
                     const MinuteSums& held) const;
  std::vector<TeamFigures> TeamRows(const std::vector<UserFigures>& users) const;
  std::pair<std::string, std::string> OwnerOf(JobId job) const;
  EventCounts CountEvents(const std::function<bool(const std::string&)>& team_shown,
                          std::map<std::string, EventCounts>* by_team) const;
  std::vector<QueueFigures> QueueRows(
      const std::function<bool(const std::string&)>& team_shown) const;
  std::vector<WasteJob> WasteJobs(
      const std::function<bool(const std::string&, const std::string&)>& shown) const;
  std::vector<DayFigures> DayRows() const;
  // The runs by job, each job's in start order.
  std::map<JobId, std::vector<const UsageRecord*>> RunsByJob() const;
  // GPUs wanted over time: each run's GPUs while it ran, and while it waited before (from the
  // job's submission, or its last run's end).
  std::vector<DemandSpan> Demand() const;

  ReportContext context_;
  std::map<std::string, std::int64_t> gpu_memory_mib_;  // by uuid, from the inventory
  std::map<GpuKey, MinuteSums> gpus_;
  std::map<std::string, MinuteSums> days_;  // by "YYYY-MM-DD"
  std::map<JobId, JobMinutes> jobs_minutes_;
  std::map<TeamUser, MinuteSums> users_minutes_;
  std::vector<ReportRun> runs_;
  std::vector<Event> events_;  // only the kinds the report counts
  std::map<JobId, Job> jobs_;
};

// A builder fed `input` whole, finished with its scope.
Report ComputeReport(const ReportInput& input);

}  // namespace gf
