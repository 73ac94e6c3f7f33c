// Explanation: why the scheduler does what it does with one job (`gpufleet explain JOB`,
// GET /api/v1/jobs/{id}/explain): its place in the order, its priority factor by factor, the
// quota verdict, its time limit and, node by node, why it does or does not fit. For a running
// job: where, since when, and who could preempt it.
//
// Built by the pure scheduler (scheduler/explain.h) from the same pass Decide() runs, so that
// an explanation never disagrees with a decision. Plain values, as the rest of the model; lives
// here because the API and the CLI (which must not depend on the scheduler) carry it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "model/job.h"
#include "model/pending_reason.h"

namespace gf {

// A job ahead in the order that matters to this one: it set aside or took GPUs this job
// could use, or the pending reason names it.
struct JobAhead {
  // nullopt: another user's job, and the caller may not see other users' jobs (decision 0001;
  // the controller leaves the id out, HideOtherUsersJobs).
  std::optional<JobId> id;
  int position = 0;      // 1-based place in the order
  std::string priority;  // its class name
  std::string team;
  int gpus = 0;
  // What it does with GPUs this job could use: "starts" (takes them now), "claimed" (set
  // aside with no foreseeable start, or for a job that preempts), "reserved" (backfill, from
  // `from`).
  std::string action;
  std::vector<NodeId> nodes;  // where (the first few)
  int more_nodes = 0;         // how many more
  std::optional<Time> from;   // reserved: when its reservation begins
};

// The factors of the order, in the order they are compared (scheduler README: Algorithm 1).
struct PriorityFactors {
  std::string priority;    // class name
  int class_rank = 0;      // lower goes first
  std::string team;        // "" = no team
  bool quotas_on = false;  // teams are configured: the guarantee factor applies
  bool team_below_guarantee = false;
  double team_usage_gpu_seconds = 0;  // decayed
  double team_weight = 1;
  double team_share = 0;  // usage / weight: lower goes first
  int team_rank = 0;      // 1-based among the teams with waiting jobs (standing, share)
  int teams_waiting = 0;
  std::string user;
  double user_usage_gpu_seconds = 0;  // decayed
  double user_weight = 1;
  double user_share = 0;
  int user_rank = 0;      // 1-based among the users of its team with waiting jobs
  int users_waiting = 0;  // in its team
  Time submit_time{};
  Millis waited{0};  // now - submit time
  // What the order compares last: the submit time moved back by the job's predicted GPU-time
  // (scheduler/estimates.h PlaceMs); nullopt when that is the submit time itself (no estimate,
  // or the policy does not order by estimates).
  std::optional<Time> place{};
};

// The class and team rules for this job as the pass checks them when its turn comes.
struct QuotaExplanation {
  bool may_start = true;
  bool borrowed = false;                         // it would run preemptible
  bool guarantee_right = false;                  // may preempt other teams' borrowed work
  std::string reason;                            // why it may not start ("" when it may)
  std::vector<std::string> class_allowed_users;  // empty = everyone
  std::optional<int> class_max_gpus_per_user;
  bool quotas_on = false;
  int team_held_milli = 0;  // milli-GPUs held by its team when its turn comes
  int team_guaranteed_gpus = 0;
  std::optional<int> team_max_gpus;
  std::optional<double> team_budget_gpu_hours;  // per period
  double team_period_gpu_hours = 0;             // used this period
  std::string over_budget;                      // "borrow_only" or "hold"
  bool budget_approved = false;
};

// One GPU this job cannot have now, and why.
struct GpuHold {
  int index = 0;              // NVML index on its node
  std::string kind;           // "running", "started", "claimed", "reserved", "allocated"
  std::optional<JobId> job;   // the job holding it or that set it aside
  std::optional<Time> until;  // when it is expected free (running) / set aside from (reserved)
  // A busy GPU a job ahead has already set aside for when it frees up (claimed or reserved).
  std::optional<JobId> then_for{};
  std::optional<Time> then_from{};  // the reservation's start; nullopt for a claim
  // The job is another user's, which the caller may not see: `job` is left out, and so is
  // `until` when it is that job's end (running, started); a reservation's start stays.
  bool other_user = false;
  bool then_for_other_user = false;  // the same for `then_for`
};

// A running job on a node and whether this job may preempt it.
struct VictimCandidate {
  std::optional<JobId> job;  // nullopt: another user's job (as JobAhead::id)
  std::string priority;
  bool borrowed = false;
  bool may_preempt = false;
  bool chosen = false;  // the pass preempts it for this job
  std::string why;      // "high priority beats low" / "ran 3m of the minimum 10m"
};

struct NodeExplanation {
  NodeId node;
  std::string state;  // "up", "draining", "drained", "down"
  // "fits", "chosen", "set_aside", "reserved", "busy", "too_small", "no_model", "not_up",
  // "preempt"
  std::string verdict;
  std::string detail;  // one line for a person
  int gpus = 0;        // every GPU of the node
  int failed = 0;      // GPUs failed, and degraded: neither takes new work
  int degraded = 0;
  int matching = 0;                      // usable (healthy) GPUs of the requested model
  int free = 0;                          // of those, free now
  int givable = 0;                       // of those, this job may take now
  std::vector<std::string> models;       // the node's GPU models, sorted
  std::vector<GpuHold> held;             // matching GPUs it cannot take, by index
  std::vector<VictimCandidate> victims;  // when it may preempt
};

struct RunningExplanation {
  Allocation allocation;
  std::vector<int> gpu_indexes;
  Time since{};
  std::optional<Time> expected_end;  // start + time limit
  bool preemptible = false;          // borrowed
  bool stopping = false;
  std::optional<Time> protected_until;    // start + minimum run time, when still ahead
  std::vector<std::string> preempted_by;  // "classes high", "teams within their guarantee"
};

struct Explanation {
  JobId job;
  std::string state;            // "pending" or "running"
  int position = 0;             // 1-based in the order (pending)
  int waiting = 0;              // jobs in the queue
  std::vector<JobAhead> ahead;  // at most kMaxJobsAhead
  int ahead_omitted = 0;
  std::string outcome;  // "starts", "preempts", "reserved", "waits", "held"
  std::string reason;   // Decide's pending reason ("" when it starts)
  // The same reason as a value (its stage and code); nullopt when it starts.
  std::optional<PendingReason> pending_reason{};
  std::optional<Time> estimated_start;
  std::optional<StartEstimate> start_estimate;  // its range and basis (model/start_estimate.h)
  std::optional<Allocation> placement;          // the start, reservation or preemption target
  std::vector<JobId> preempts;              // victims the pass stops for it (the caller may see)
  int preempts_other_users = 0;             // and those of other users, the caller may not see
  std::optional<PriorityFactors> priority;  // pending only
  std::optional<QuotaExplanation> quota;    // pending only
  std::optional<std::chrono::seconds> time_limit;  // effective
  std::string time_limit_source;  // "requested", "class default", "class maximum", "none"
  // The run-time predictor's estimate of its run (Job::prediction), which orders and plans it
  // under the stock policy; set by the controller; nullopt when it has none.
  std::optional<JobPrediction> prediction{};
  std::vector<NodeExplanation> nodes;  // the most relevant first, at most kMaxExplainedNodes
  int nodes_omitted = 0;
  std::map<std::string, int> nodes_by_verdict;  // over every node, the omitted ones too
  std::optional<RunningExplanation> running;
};

inline constexpr int kMaxExplainedNodes = 20;
inline constexpr int kMaxJobsAhead = 10;

}  // namespace gf
