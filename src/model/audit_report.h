// The monthly audit report's figures (issue #9, `gpufleet report`, docs/reports.md) as plain
// values: `Report` and its rows, what `ClusterService::MonthlyReport` returns for a
// `ReportRequest`. The arithmetic that fills them, and the thresholds (kIdleUtilPct, ...) the
// comments name, are in report/report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "model/energy.h"

namespace gf {

// `gpufleet report --period 2026-11 [--team T]` (issue #9): the monthly audit report.
struct ReportRequest {
  std::string period{};               // "YYYY-MM", a calendar month in UTC
  std::optional<std::string> team{};  // only this team's figures
};

// Figures from the per-minute rollups of a set of GPU-minutes (a GPU, node, day or the cluster).
struct MinuteFigures {
  std::int64_t minutes_observed = 0;  // GPU-minutes with samples
  // Of those, held by a job, a minute held part of the time counting for that part (its
  // share of samples); and of the held time, the part in minutes under kIdleUtilPct.
  double minutes_allocated = 0;
  double minutes_idle_allocated = 0;
  std::int64_t minutes_unhealthy = 0;  // degraded or failed during the minute
  double allocated_pct = 0;            // allocated / observed
  double used_pct = 0;                 // mean utilisation over the allocated minutes
  double util_pct = 0;                 // mean utilisation over every observed minute
  double idle_pct = 0;                 // (observed - allocated + idle allocated) / observed
  double gpu_hours_allocated = 0;      // minutes_allocated / 60
  double gpu_hours_used = 0;           // gpu_hours_allocated x used_pct / 100
  double gpu_hours_idle = 0;           // minutes_idle_allocated / 60: the waste
  EnergyCharge energy{};               // the GPUs' counter deltas over the minutes
};

struct ClusterFigures {
  int nodes = 0;
  int gpus = 0;  // in the inventory now
  MinuteFigures figures{};
};
struct NodeFigures {
  std::string node{};
  int gpus = 0;
  MinuteFigures figures{};
};
struct GpuFigures {
  std::string node{};
  int index = -1;  // -1 when the GPU is no longer in the inventory
  std::string uuid{};
  std::string model{};
  std::int64_t memory_mib = 0;
  MinuteFigures figures{};
  bool idle = false;        // kIdleGpu* thresholds
  bool overloaded = false;  // kOverloaded* thresholds
  bool unhealthy = false;   // kUnhealthyPct
};
struct DayFigures {
  std::string day{};  // "2026-11-03"
  MinuteFigures figures{};
};

// Counts of events in the period (for a team, or the whole report).
struct EventCounts {
  int preemptions = 0;    // "preempt" events
  int failed = 0;         // jobs that went to FAILED
  int timeouts = 0;       // ... to TIMEOUT
  int node_failures = 0;  // ... to NODE_FAIL (their node or GPU failed under them)
  int gpu_failovers = 0;  // "gpu_failover" events: a job moved off a failing GPU
  int idle_reaps = 0;     // "idle_reap" events
  int gpu_faults = 0;     // GPUs going degraded or failed ("gpu_health"); report-wide only
};

// GPU time of a team or user. Allocated comes from the runs (as `gpufleet quota` counts it);
// used = allocated x the mean utilisation of the minutes they held; idle from the minutes.
struct UsageFigures {
  int jobs = 0;  // distinct jobs with a run in the period
  double gpu_hours_allocated = 0;
  double minutes_allocated = 0;  // the sampled GPU-minutes they held (MinuteFigures)
  double mean_util_pct = 0;      // over those minutes; 0 when there is none
  double gpu_hours_used = 0;
  double gpu_hours_idle = 0;
  EnergyCharge energy{};  // their runs' GPU energy in the period
};

struct TeamFigures {
  std::string team{};  // "" = jobs of no team
  UsageFigures usage{};
  int guaranteed_gpus = 0;
  std::optional<int> max_gpus{};
  double guaranteed_gpu_hours = 0;             // guaranteed_gpus x the period's hours so far
  std::optional<double> guarantee_used_pct{};  // allocated / guaranteed; none without one
  std::optional<double> budget_gpu_hours{};
  std::optional<double> budget_used_pct{};  // allocated / budget
  EventCounts events{};
};

struct UserFigures {
  std::string team{};
  std::string user{};
  UsageFigures usage{};
  std::int64_t peak_memory_mib = 0;  // the highest of their jobs' peak GPU memory
  std::int64_t gpu_memory_mib = 0;   // the largest GPU they held
};

// GPU time of one Kubernetes workload (Kubernetes mode, docs/kubernetes.md): the pods'
// jobs whose owner the API server named ("Deployment/train"), by namespace. "" = pods whose
// owner is not known (no API-server watch, or not yet heard of).
struct WorkloadFigures {
  std::string team{};      // the namespace
  std::string workload{};  // kind/name
  UsageFigures usage{};    // usage.jobs: its pods that ran in the period
};

struct WasteJob {
  std::int64_t job = 0;
  std::string name{};
  std::string team{};
  std::string user{};
  double gpu_hours_allocated = 0;  // from its minutes in the period
  double gpu_hours_idle = 0;
  double idle_pct = 0;
};

struct QueueFigures {
  std::string priority{};  // the class
  int runs = 0;            // runs that started in the period
  double mean_s = 0;       // start - submit (or - the previous run's end, for a requeued job)
  double p50_s = 0;
  double p95_s = 0;
  double max_s = 0;
};

struct Recommendation {
  std::string kind{};     // "idle_gpu", "overloaded_gpu", "unhealthy_gpu", "low_team_use",
                          // "share_gpus", "over_budget", "waste"
  std::string subject{};  // "n3/5", "team cv", "user alice"
  std::string message{};  // a sentence with the numbers and what to do
  std::vector<std::pair<std::string, double>> figures{};  // the numbers behind it
};

struct Report {
  std::string period{};
  Time start{};
  Time end{};
  Time covered_until{};  // min(now, end): figures stop there
  std::optional<std::string> team_filter{};
  bool all_teams = true;  // false: only the caller's teams and own user rows are in
  ClusterFigures cluster{};
  std::vector<NodeFigures> nodes{};
  std::vector<GpuFigures> gpus{};  // by node, then index
  std::vector<DayFigures> days{};
  std::vector<TeamFigures> teams{};          // by name
  std::vector<UserFigures> users{};          // by team, then user
  std::vector<WorkloadFigures> workloads{};  // by team, then workload; pods' jobs only
  double waste_gpu_hours = 0;                // allocated-but-idle GPU-hours of the teams shown
  std::vector<WasteJob> waste_jobs{};        // the caller's own only unless all may be seen
  std::vector<QueueFigures> queue{};         // by class name
  EventCounts events{};                      // the teams shown (gpu_faults: the cluster)
  std::vector<Recommendation> recommendations{};
};

}  // namespace gf
