// Scheduler scenarios: a small text format that states a cluster, a queue, scheduling passes
// and what each pass must decide, and a runner that plays one through Decide(). Test support
// only (library gf_scheduler_scenario): the scheduler core does not depend on it.
//
// Format: one step a line; '#' starts a comment (outside quotes); blank lines are ignored.
// Times and durations are integers with units: 0s, 90s, 5m, 1h30m, 250ms.
//
//   node <name> <gpus> [state=up|draining|drained|down] [label=<key>=<value>]...
//          [nvlink=<i>,<i>,.../<i>,...] [numa=<n>,<n>,...] [switch=<n>,<n>,...]
//          [mem=<MiB>] [shared=<i>,...] [mps=<i>,...]
//       <gpus> is 0 (no GPU) or <count>x<model> joined by '+': 8xH100-80GB, 2xA100-40GB+2xL4.
//       GPUs are numbered from 0 in the order written; GPU <i> of node n has UUID GPU-n-<i>.
//       Topology: nvlink= groups (each all-to-all, '/' between groups); numa= and switch=
//       give one NUMA node / PCIe switch id per GPU, in index order. mem= is each GPU's memory
//       (default 0: unknown); shared= and mps= put those GPUs in that sharing mode.
//   state <node> up|draining|drained|down
//   health <node> <index> ok|degraded|failed
//   allocate <node> <index>[,<index>...]      held by work outside the scenario
//   job <id> [gpus=<n>] [type=<model>] [priority=<class>] [submit=<time>] [user=<u>]
//          [team=<t>] [limit=<duration>] [approved] [constraint=<key>=<value>]... [nodes=<n>]
//          [expected=<duration>] [attained=<gpu-seconds>] [share=<0.25>] [mem=<size>]
//       defaults: gpus=1, any type, normal, submitted now, no team, no limit, one node.
//       nodes=<n> (n > 1) submits a multi-node job as the controller does: n members with
//       ids <id> to <id>+n-1, each of gpus=<n> GPUs, the gang id being <id>.
//       share= and mem= (20G, 512M) make it fractional (--gpu-share, --gpu-mem).
//   run <id> on <node> gpus <i>,... [priority=<p>] [team=<t>] [user=<u>] [start=<time>]
//          [limit=<duration>] [checkpoint=<time>] [borrowed] [stopping]
//          [expected=<duration>] [attained=<gpu-seconds>] [share=<0.25> mem=<MiB>]
//       a job already running (started outside the scenario), with what preemption and
//       backfill need to know of it; `finish <id>` ends it like a started job.
//       expected= and attained= are the oracle figures the baseline orders read (a job's
//       expected run length, GPU-seconds of earlier runs); a started job keeps its queued
//       ones, a preempted one is requeued with the service it attained added.
//   advance <duration>                          moves the scenario clock (starts at 0s)
//   decide [at <time>]                          one Decide() pass; its starts are applied
//                                               (the jobs leave the queue, their GPUs are
//                                               held), and so are its preemptions: a victim
//                                               stops at once (as if its grace period were
//                                               over) and is requeued with its submit time
//   finish <id>                                 a started job ends; its GPUs are free again
// Policy (the stock PolicyConfig until changed; each line changes only what it names):
//   class <name> [rank=<n>] [preempts=<c>,...|none] [users=<u>,...|any]
//          [max_gpus_per_user=<n>] [default_limit=<duration>] [max_limit=<duration>]
//       changes a class, or adds one (ranked after the others unless rank= says otherwise)
//   class <name> remove                         the class leaves the config (its jobs stay)
//   team <name> [guarantee=<n>] [max=<n>] [budget=<gpu-hours>] [over_budget=borrow_only|hold]
//          [weight=<w>]
//   preemption on|off [min_run=<duration>]
//   backfill on|off [depth=<n>]
//   order priority|fifo|sjf|srtf|las [thresholds=<gpu-seconds>,...]   PolicyConfig::ordering
//   share_placement fullest|first-fit           PolicyConfig::share_placement
//   usage team <name> [decayed=<gpu-seconds>] [period_hours=<h>]
//   usage user <name> decayed=<gpu-seconds>
// Expectations, about the last decide:
//   expect start <id> on <node> [gpus <i>,<i>...] [share=<0.25>] [mem=<MiB>]
//   expect pending <id> ["<text>"]              pending, and its reason contains <text>
//   expect reason <id> "<text>"                 pending with exactly this reason
//   expect code <id> <stage>/<code> ever|never  pending with a reason of this stage and code
//                                               (model/pending_reason.h) that can ever fit
//                                               (ever) or not (never)
//   expect starts <count>                       how many jobs it started
//   expect borrowed <id> yes|no                 whether a start was preemptible (borrowed)
//   expect preempt <victim> for <id> ["<text>"] it preempts <victim> to make room for <id>
//   expect preemptions <count>
//   expect estimate <id> <time>|none            a pending job's estimated start
//
// Plain values and pure functions: safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/snapshot.h"
#include "scheduler/policy.h"

namespace gf {

struct AddNodeStep {
  Node node;
};
struct SetStateStep {
  NodeId node;
  NodeState state = NodeState::kUp;
};
struct SetHealthStep {
  NodeId node;
  int index = 0;
  GpuHealth health = GpuHealth::kOk;
};
struct AllocateStep {
  NodeId node;
  std::vector<int> indexes;
};
struct SubmitStep {
  QueuedJob job;
  std::optional<Millis> submit;  // nullopt: the scenario clock when the step runs
};
struct AdvanceStep {
  Millis by{0};
};
struct DecideStep {
  std::optional<Millis> at;  // nullopt: the scenario clock
};
struct FinishStep {
  JobId job;
};
struct ExpectStartStep {
  JobId job;
  NodeId node;
  std::optional<std::vector<int>> gpus;      // GPU indexes, in allocation order
  std::optional<int> milli{};                // share=: what it holds of its GPU
  std::optional<std::int64_t> memory_mib{};  // mem=: its memory limit there
};
struct ExpectPendingStep {
  JobId job;
  std::optional<std::string> text;
  bool exact = false;                 // the reason equals text, rather than contains it
  std::optional<std::string> code{};  // "<stage>/<code>": the structured reason's
  std::optional<bool> can_ever_fit{};
};
struct ExpectStartCountStep {
  int count = 0;
};
struct RunStep {
  RunningJob job;  // allocation.gpus empty: filled from `indexes` when the step runs
  std::vector<int> indexes;
  std::optional<Millis> start;  // nullopt: the scenario clock
  std::optional<Millis> checkpoint;
};
struct ClassStep {
  std::string name;
  bool remove = false;
  std::optional<int> rank;
  std::optional<std::vector<std::string>> preempts;
  std::optional<std::vector<std::string>> users;
  std::optional<int> max_gpus_per_user;
  std::optional<std::chrono::seconds> default_limit;
  std::optional<std::chrono::seconds> max_limit;
};
struct TeamStep {
  TeamPolicy team;
};
struct PreemptionStep {
  PreemptionPolicy preemption;
};
struct BackfillStep {
  BackfillPolicy backfill;
};
struct OrderStep {
  OrderingPolicy ordering;
};
struct SharePlacementStep {
  SharePlacement placement = SharePlacement::kFullest;
};
struct UsageStep {
  bool team = true;  // else a user
  std::string name;
  std::optional<double> decayed_gpu_seconds;
  std::optional<double> period_gpu_hours;
};
struct ExpectBorrowedStep {
  JobId job;
  bool borrowed = false;
};
struct ExpectPreemptStep {
  JobId victim;
  JobId for_job;
  std::optional<std::string> text;  // the cause contains it
};
struct ExpectPreemptCountStep {
  int count = 0;
};
struct ExpectEstimateStep {
  JobId job;
  std::optional<Millis> at;  // nullopt: no estimate
};

using ScenarioAction = std::variant<AddNodeStep,
                                    SetStateStep,
                                    SetHealthStep,
                                    AllocateStep,
                                    SubmitStep,
                                    AdvanceStep,
                                    DecideStep,
                                    FinishStep,
                                    ExpectStartStep,
                                    ExpectPendingStep,
                                    ExpectStartCountStep,
                                    RunStep,
                                    ClassStep,
                                    TeamStep,
                                    PreemptionStep,
                                    BackfillStep,
                                    OrderStep,
                                    SharePlacementStep,
                                    UsageStep,
                                    ExpectBorrowedStep,
                                    ExpectPreemptStep,
                                    ExpectPreemptCountStep,
                                    ExpectEstimateStep>;

struct ScenarioStep {
  int line = 0;  // 1-based line in the file, for messages
  ScenarioAction action;
};

struct Scenario {
  std::vector<ScenarioStep> steps;
};

// Parses scenario text. Errors: kInvalidArgument "line 3: <what is wrong>; <the right form>".
Result<Scenario> ParseScenario(std::string_view text);

// Plays a scenario through Decide(). Returns one message per expectation that did not hold
// ("line 7: expected job 2 to start on gpu01; it is pending: ..."), empty when all held; a
// decide that hands out a GPU twice, an allocated or a failed one is reported the same way.
// Errors: kInvalidArgument "line N: ..." when a step cannot run (unknown node or GPU, a
// duplicate node or job, finishing a job that is not running, an expect before any decide).
Result<std::vector<std::string>> RunScenario(const Scenario& scenario);

}  // namespace gf
