// ClusterSnapshot and Queue: the read-only view the scheduler decides on.
// Built by the controller thread for each scheduling pass; plain values.
//
// Every field after the first ones of each struct has a default member initializer (which
// also keeps -Wmissing-field-initializers quiet), so a caller that fills only the older fields
// (nodes; id, priority, submit time, request, user) still compiles and gets the v1 behaviour: no
// running-job details means no preemption and no backfill estimates, and no usage figures means
// every team and user has used nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "model/job.h"
#include "model/node.h"

namespace gf {

// A GPU's recent load (from the agent's samples), for spreading work over equally good GPUs.
// A GPU that no job holds may still be loaded by processes gpufleet does not manage.
struct GpuLoad {
  int util_pct = 0;
  std::int64_t memory_used_mib = 0;
  bool operator==(const GpuLoad&) const = default;
};

struct NodeSnapshot {
  Node node;
  std::set<GpuUuid> allocated;        // GPUs held by STARTING/RUNNING jobs
  std::map<GpuUuid, GpuLoad> load{};  // recent load by GPU; absent = unknown (counted as idle)
};

// How long a job's run is expected to last, by the run-time predictor (src/predict), learned
// from the runs that ended before the job arrived: never from the job's own run. The shells
// fill it (the controller at submission, `gpufleet sim` at a job's arrival); the scheduler
// orders and backfills by it where the policy says so (PolicyConfig::prediction).
struct RunEstimate {
  Millis expected{0};  // the point estimate (the median of such runs)
  Millis high{0};      // about their 90th percentile: what reservations plan with
  bool operator==(const RunEstimate&) const = default;
};

// A job that holds GPUs now (STARTING or RUNNING), with what preemption and backfill need.
// Its GPUs are also in NodeSnapshot::allocated of its node.
struct RunningJob {
  JobId id;
  std::string team;
  std::string user;
  PriorityClass priority = PriorityClass::kNormal;
  Allocation allocation;
  Time start_time{};
  // The effective limit (the job's, defaulted and capped by its class); nullopt = none, so
  // its end cannot be foreseen: backfill then cannot reserve the GPUs it holds.
  std::optional<std::chrono::seconds> time_limit;
  bool preemptible = false;             // started on borrowed GPUs (beyond its team's guarantee)
  std::optional<Time> last_checkpoint;  // work since then is what a preemption loses
  bool stopping = false;  // already told to stop (preempted, cancelled): its GPUs free soon
  std::optional<RunEstimate> estimate{};  // this run's predicted length (QueuedJob::estimate)
  // Oracle figures that only the baseline orders read (PolicyConfig::ordering): `gpufleet sim`
  // fills them from the trace; the controller leaves them unset.
  std::optional<Millis> expected_duration{};  // how long this run lasts from start_time
  // GPU time held by its earlier runs (2D-LAS; the stock policy's predicted remaining work,
  // scheduler/estimates.h): not an oracle figure, the job book's count (lifecycle/job_views.h
  // AsRunning: JobBook::EarlierRunsGpuSeconds), in the controller and the simulator alike.
  double attained_gpu_seconds = 0;
  // When it was submitted: the stock policy preempts by size only for a job that would go
  // before it in the queue (scheduler/estimates.h), and never for one submitted more than
  // PredictionPolicy::max_delay after it.
  Time submit_time{};
  // false (`--no-requeue`): a preemption would end it for good; the stock policy never
  // preempts it for size, only by class or guarantee (docs/scheduling.md).
  bool requeue = true;
};

// What a team has used, as the accounting computed it for this pass.
struct TeamUsage {
  double decayed_gpu_seconds = 0;  // fair-share usage, decayed with the policy's half-life
  double period_gpu_hours = 0;     // GPU-hours used in the current budget period
};

struct ClusterSnapshot {
  std::vector<NodeSnapshot> nodes;
  std::vector<RunningJob> running{};                         // any order
  std::map<std::string, TeamUsage> team_usage{};             // by team name; absent = none used
  std::map<std::string, double> user_decayed_gpu_seconds{};  // by user name; absent = 0
};

// A job that is waiting, with what the scheduler needs to know of it.
struct QueuedJob {
  JobId id;
  PriorityClass priority = PriorityClass::kNormal;
  Time submit_time{};
  JobRequest request;
  std::string user;
  std::string team{};                                // "" = no team
  std::optional<std::chrono::seconds> time_limit{};  // as submitted; the class caps it
  bool budget_approved = false;  // an admin approved it past its team's GPU-hour budget
  // A member of a multi-node job (JobSpec::gang): the queued members with the same gang id
  // start together, each on a node of its own, or none starts. The caller queues a gang's
  // members only while none of them holds GPUs (a requeued gang waits for all to stop).
  std::optional<JobId> gang{};
  // Its predicted run time, when the predictor has seen runs (RunEstimate); nullopt: none.
  std::optional<RunEstimate> estimate{};
  // An oracle figure, as RunningJob's (unset in the controller): how long it runs once started
  // (its work left).
  std::optional<Millis> expected_duration{};
  // The GPU time its earlier runs held (RunningJob's, as the job book counts it).
  double attained_gpu_seconds = 0;
};

struct Queue {
  std::vector<QueuedJob> pending;  // any order; the scheduler sorts
};

}  // namespace gf
