// Scheduler scenarios: a small text format that states a cluster, a queue, scheduling passes
// and what each pass must decide, and a runner that plays one through Decide(). Test support
// only (library gf_scheduler_scenario): the scheduler core does not depend on it.
//
// Format: one step a line; '#' starts a comment (outside quotes); blank lines are ignored.
// Times and durations are integers with units: 0s, 90s, 5m, 1h30m, 250ms.
//
//   node <name> <gpus> [state=up|draining|drained|down]
//       <gpus> is 0 (no GPU) or <count>x<model> joined by '+': 8xH100-80GB, 2xA100-40GB+2xL4.
//       GPUs are numbered from 0 in the order written; GPU <i> of node n has UUID GPU-n-<i>.
//   state <node> up|draining|drained|down
//   health <node> <index> ok|degraded|failed
//   allocate <node> <index>[,<index>...]      held by work outside the scenario
//   job <id> [gpus=<n>] [type=<model>] [priority=high|normal|low] [submit=<time>] [user=<u>]
//       defaults: gpus=1, any type, normal, submitted now.
//   advance <duration>                          moves the scenario clock (starts at 0s)
//   decide [at <time>]                          one Decide() pass; its starts are applied:
//                                               the jobs leave the queue, their GPUs are held
//   finish <id>                                 a started job ends; its GPUs are free again
//   expect start <id> on <node> [gpus <i>,<i>...]   about the last decide
//   expect pending <id> ["<text>"]              pending, and its reason contains <text>
//   expect reason <id> "<text>"                 pending with exactly this reason
//   expect starts <count>                       how many jobs the last decide started
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
  std::optional<std::vector<int>> gpus;  // GPU indexes, in allocation order
};
struct ExpectPendingStep {
  JobId job;
  std::optional<std::string> text;
  bool exact = false;  // the reason equals text, rather than contains it
};
struct ExpectStartCountStep {
  int count = 0;
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
                                    ExpectStartCountStep>;

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
