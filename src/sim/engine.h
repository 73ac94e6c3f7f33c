// The discrete-event engine of `gpufleet sim`: replays a trace on a simulated cluster through
// the production scheduler core, Decide() (scheduler/scheduler.h), unchanged, on a virtual
// clock.
//
// Events: arrivals (from the trace), ends of runs (completion after the job's remaining work,
// or its time limit, whichever is first) and wake-ups (the moment a running job reaches the
// policy's minimum run time, when a waiting job may be planning to preempt it: the controller
// schedules the same pass, Controller::NextPreemptable). All events at one instant are applied
// first; then, if something changed and jobs wait, one scheduling pass runs: a snapshot and a
// queue built the way the controller builds them (Controller::Snapshot / PendingQueue), then
// Decide, then its decisions applied:
// - a start: the job holds its GPUs from now; its run ends at now + its remaining work, or at
//   its effective time limit (the class default / cap, policy.h EffectiveTimeLimit) when that is
//   shorter, as TIMEOUT;
// - a preemption: the victim stops at once (the controller's grace period is not modelled) and
//   is requeued with its submit time kept. Restart penalty: it loses all work since its start —
//   unless a checkpoint interval is set, when it keeps its progress up to its last checkpoint
//   (start + k x interval). The pass then runs again at the same instant, as the controller's
//   next pass would once the victim has exited.
// A job that no node could ever run (CheckFeasible fails: more GPUs than any node has) is
// rejected at arrival with the reason, as `gpufleet submit` rejects it.
//
// Fair share: like the controller, each team's and user's GPU-seconds are kept decayed with the
// policy's half-life and given to Decide — unless `fair_share` is off, when everybody stays at
// zero (the order is then class, submit time, id). Budgets (GPU-hours per period) are not
// modelled yet: every team is within its budget.
//
// Deterministic: the same trace, cluster and options give the same result (no clock, no
// randomness, ordered containers where order matters). Single-threaded; plain values out.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/node.h"
#include "scheduler/policy.h"
#include "sim/trace.h"

namespace gf::sim {

struct SimOptions {
  PolicyConfig policy{};  // the stock policy by default
  // Team of a job whose trace gives none, by user (the config's [team.NAME] members).
  std::map<std::string, std::string> team_of_user{};
  // A preempted job keeps its progress up to its last checkpoint; nullopt: it restarts from 0;
  // 0: it keeps all of it (suspended and resumed, as the Tiresias simulator models it).
  std::optional<Millis> checkpoint_interval{};
  bool fair_share = true;  // false: Decide sees no usage, so no fair-share reordering
};

enum class JobFate {
  kCompleted,     // ran its whole duration
  kTimeout,       // stopped by its time limit
  kRejected,      // no node could ever run it (the reason says why)
  kNeverStarted,  // still waiting when nothing else could happen (the reason says why)
};
std::string_view ToString(JobFate fate);  // "completed", "timeout", "rejected", "never-started"

struct JobOutcome {
  std::string id;  // the trace's
  std::string team;
  std::string user;
  int gpus = 0;
  Millis submit{0};
  Millis duration{0};  // from the trace
  JobFate fate = JobFate::kNeverStarted;
  std::optional<Millis> first_start{};
  std::optional<Millis> end{};
  int preemptions = 0;
  double gpu_seconds = 0;  // GPU time held over all its runs (work lost to preemption included)
  std::vector<std::pair<Millis, Millis>> runs{};  // (start, end) of each run, in order
  std::string reason{};    // rejected or never started: why
};

struct SimResult {
  std::vector<JobOutcome> jobs;  // in trace order (by submit time)
  int total_gpus = 0;
  std::int64_t decide_calls = 0;
  std::int64_t max_queue = 0;  // the deepest queue a pass saw
};

// Errors: kInvalidArgument when the policy is not valid (ValidatePolicy) or the cluster is empty.
Result<SimResult> Simulate(const std::vector<Node>& nodes,
                           const std::vector<TraceJob>& trace,
                           const SimOptions& options);

}  // namespace gf::sim
