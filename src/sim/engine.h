// The discrete-event engine of `gpufleet sim`: replays a trace on a simulated cluster through
// the production scheduler core, Decide() (scheduler/scheduler.h), unchanged, on a virtual
// clock.
//
// The engine is a shell over the controller's job book (lifecycle/job_book.h), as the
// controller is: each job is in the book from its arrival to its end, and every change of its
// state (started, running, stopped, timed out, requeued with its gang, lost with its node,
// cancelled for a broken dependency) is the book's, with the book's kill orders applied on the
// virtual clock and its listener freeing the virtual GPUs. The engine keeps only what a
// simulation alone knows: each job's work left and where its run is on the virtual cluster.
//
// Events: arrivals (from the trace), ends of runs' work, time limits reached, kill graces over,
// nodes repaired, and wake-ups. All events at one instant are applied first (as a controller
// turn's commands), then the gangs settled; then the instant is scheduled by the controller's
// pass rule (lifecycle/pass_planner.h, the same PassPlanner the controller's turn asks): the
// instant's ends (together) and arrivals (one by one) told to the controller's
// IncrementalScheduler (scheduler/incremental.h), kept for the whole run, or a full pass (a
// snapshot and a queue built the way the controller builds them, lifecycle/job_views.h, and
// Decide()'s decisions for them) where the rule asks for one: after a change the scheduler is
// not told event by event (a requeue, a node failing or coming back, a gang arriving), and
// full_pass_interval after incremental passes, on the virtual clock. A wake-up is that due full
// pass, or the moment a running job reaches the policy's minimum run time (or, las, its next
// queue) while jobs wait (lifecycle/wakeups.h NextPassAt), as the controller arms it. So a
// replay decides as the product does, staleness included: a job's end starts the head of the
// queue at once and leaves backfill onto the freed GPUs to the full pass a second later
// (decision 0004). Where the product's kept scheduler could not follow the state (the baseline
// orders read oracle figures of running jobs; checkpoints move running jobs at every instant;
// no_departures drops jobs), every instant where jobs wait is a full pass, as is every pass
// with SimOptions::full_passes_only (the reference run). Decisions are applied as the
// controller applies them (lifecycle/apply_decisions.h):
// - a start: the job holds its GPUs from now and runs from now + SimOptions::launch_lag; its
//   work ends after its remaining work (exit 0), unless its effective time limit (the class
//   default / cap, policy.h EffectiveTimeLimit) comes first: the book stops it then, as the
//   controller's EnforceTimeLimits, and it holds its GPUs until SIGKILL at the kill grace's end
//   (TIMEOUT);
// - a preemption: the book stops the victim to be requeued; it holds its GPUs as stopping until
//   SimOptions::kill_grace ends (at once by default), and is requeued with its submit time kept.
//   Restart penalty: it loses all work since its start — unless a checkpoint interval is set,
//   when it keeps its progress up to its last checkpoint (start + k x interval). The pass then
//   runs again at the same instant, as the controller's next pass would once the victim has
//   exited.
// A trace job of more GPUs than the largest node has runs as a multi-node (gang) job
// (SplitAcrossNodes): its members start together, each on a node of its own (Decide's gangs),
// end together, and when one is preempted or its node fails the others are stopped to be requeued
// with it (the book's SettleGangs, after their kill grace). It stays one job in the result. A job
// that no node could ever run (CheckFeasible fails: a type or label no node has, too few nodes for
// its gang) is rejected at arrival with the reason, as `gpufleet submit` rejects it.
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
#include "lifecycle/pass_planner.h"
#include "model/node.h"
#include "scheduler/policy.h"
#include "sim/fragmentation.h"
#include "sim/trace.h"

namespace gf::sim {

// A node's failure: from `at` the node is down, its running jobs are stopped and requeued (as the
// controller requeues a job whose node failed: NODE_FAIL), until `at + repair`, when it is up.
struct NodeFailure {
  std::size_t node = 0;  // index into Simulate's `nodes`
  Millis at{0};
  Millis repair{0};
};

struct SimOptions {
  PolicyConfig policy{};  // the stock policy by default
  // Team of a job whose trace gives none, by user (the config's [team.NAME] members).
  std::map<std::string, std::string> team_of_user{};
  // A preempted job keeps its progress up to its last checkpoint; nullopt: it restarts from 0;
  // 0: it keeps all of it (suspended and resumed, as the Tiresias simulator models it).
  std::optional<Millis> checkpoint_interval{};
  bool fair_share = true;  // false: Decide sees no usage, so no fair-share reordering
  // Not empty: teams confined to partitions. A job with a team asks for nodes with the label
  // `team_label` = its team (JobRequest::node_labels), as a job's constraint does; a team with
  // no such node has its jobs rejected. A job with no team may run anywhere.
  std::string team_label{};
  // Node failures, in any order (GenerateNodeFailures, sim/synthetic.h, draws them for
  // `--node-mtbf`). A failure of a node that is down changes nothing.
  std::vector<NodeFailure> node_failures{};
  // Which pass each instant runs: the controller's rule (lifecycle/pass_planner.h) with its
  // defaults, so that a replay schedules as the product does.
  PassRules passes{};
  // Every pass a call of Decide() on the whole state instead (at every instant where jobs wait):
  // the reference the product's incremental passes are measured against (the bench shows what
  // they save and what their staleness costs).
  bool full_passes_only = false;
  // Between a preemption's first signal and its SIGKILL (ControllerOptions::kill_grace; the
  // product's default is 10 s): the victim holds its GPUs, as stopping, until then, when it is
  // requeued (or it ends first). 0: it stops at once, as the Tiresias simulator suspends a job.
  Millis kill_grace{0};
  // Between a start decision and the job's processes running (the controller's STARTING state:
  // the launch reaching the node's agent, its supervisor, the job's first exec, until the agent
  // reports the start). Its GPUs are held from the decision; its run, its time limit and its
  // minimum run time before preemption count from the end of the lag. 0: it runs at once.
  Millis launch_lag{0};
  // Inflation, as the FGD paper replays its trace (`--no-departures`): jobs never end (no
  // duration, no time limit), and a job that no GPU takes at its arrival's pass is dropped
  // (fate never-started, with the reason): capacity only shrinks, so it would never start.
  // SimResult::inflation then follows the cluster as the arrived demand grows.
  bool no_departures = false;
};

enum class JobFate {
  kCompleted,     // ran its whole duration
  kTimeout,       // stopped by its time limit
  kRejected,      // no node could ever run it (the reason says why)
  kNeverStarted,  // still waiting when nothing else could happen (the reason says why)
  kCancelled,     // a dependency of it broke (TraceJob::after ID:ok on a job that timed out)
  kRunning,       // still running at the end (no_departures: nothing ends)
};
// "completed", "timeout", "rejected", "never-started", "cancelled", "running"
std::string_view ToString(JobFate fate);

struct JobOutcome {
  std::string id;  // the trace's
  std::string team;
  std::string user;
  std::string priority{};  // its class's name (TraceJob::priority, else the default class)
  int gpus = 0;            // a gang's: all its members' (SplitAcrossNodes)
  int gpu_milli =
      0;  // the share of one GPU it asked for (1000: a whole shared GPU); 0 = whole GPUs
  Millis submit{0};
  Millis duration{0};  // from the trace
  JobFate fate = JobFate::kNeverStarted;
  std::optional<Millis> first_start{};
  std::optional<Millis> end{};
  int preemptions = 0;
  int failures = 0;  // runs stopped by a failure of their node (requeued like a preemption)
  // At its arrival, how long it would run by what had ended before (never by its own run): the
  // run-time predictor's estimate (predict/runtime_predictor.h, learned online from the runs
  // that ended), and the baseline of backfilling schedulers, the mean of its user's last two
  // runs (Tsafrir et al. 2007). nullopt where there was nothing to go by (no run had ended; no
  // user, or none of the user's had).
  std::optional<Millis> predicted{};
  std::optional<Millis> last_two{};
  // What the first pass to decide it told it, when it had to wait: whether it waited, and its
  // estimated start (a reservation's start; nullopt: none known), as `gpufleet queue` shows.
  bool waited_at_arrival = false;
  std::optional<Millis> estimated_start{};
  double gpu_seconds = 0;  // GPU time held over all its runs (work lost to preemption included)
  std::vector<std::pair<Millis, Millis>> runs{};  // (start, end) of each run, in order
  std::string reason{};                           // rejected or never started: why
};

struct SimResult {
  std::vector<JobOutcome> jobs;  // in trace order (by submit time)
  int total_gpus = 0;
  // Scheduler passes: one per instant where jobs wait (more after preemptions), and of them
  // those that were full passes (engine.cpp: DecideFull).
  std::int64_t decide_calls = 0;
  std::int64_t full_passes = 0;
  std::int64_t max_queue = 0;  // the deepest queue a pass saw
  // no_departures: one point after each instant's arrivals, in milli-GPUs.
  struct InflationPoint {
    std::int64_t arrived_milli = 0;  // GPU demand arrived so far (rejected jobs' included)
    // Of it, jobs of a kind the cluster has no GPU for: whole GPUs on a cluster with no
    // exclusive GPU (2 or more: a 1-GPU job takes a share of 1.0 there), shares with no shared.
    std::int64_t arrived_unplaceable_milli = 0;
    std::int64_t allocated_milli = 0;  // held by running jobs
    std::int64_t free_milli = 0;
    double fragmented_milli = 0;  // free capacity the workload's task shapes cannot use
  };
  std::vector<InflationPoint> inflation{};
};

// How a trace job of `gpus` GPUs runs when the largest node has `largest_node`: on one node when
// it fits; else as a gang of the fewest members that fit, ceil(gpus / largest_node), each of
// ceil(gpus / members) GPUs (16 on 8-GPU nodes: 2 x 8; 12: 2 x 6; 20: 3 x 7, one GPU more than
// asked, as a member cannot hold a part of a GPU; fewer than `members` GPUs over in any case).
// Fewest members because a gang waits until that many nodes are free at once.
struct GangSplit {
  int members = 1;
  int gpus_per_member = 0;
};
GangSplit SplitAcrossNodes(int gpus, int largest_node);

// Errors: kInvalidArgument when the policy is not valid (ValidatePolicy) or the cluster is empty.
Result<SimResult> Simulate(const std::vector<Node>& nodes,
                           const std::vector<TraceJob>& trace,
                           const SimOptions& options);

}  // namespace gf::sim
