// Goals an administrator states for `gpufleet tune` (docs/tune.md): bounds a policy must meet
// ("high.p95_wait<30m": the 95th percentile of the high class's queueing under 30 minutes) and
// objectives to make as good as possible among the policies that meet every bound ("maximize
// utilisation"). A goal names one figure of `gpufleet sim`'s summary (sim/metrics.h), for every
// job or, for the per-job figures, for one priority class.
//
// Accepted forms (spaces around the operator and after the verb are allowed):
//   [CLASS.]METRIC<VALUE   also <=, >, >=     high.p95_wait<30m   utilisation>=0.8   fairness>90%
//   maximize [CLASS.]METRIC                   (maximise)  maximize utilisation
//   minimize [CLASS.]METRIC                   (minimise)  minimize high.avg_jct
// A time metric's VALUE is a duration as `gpufleet submit --time` takes it ("30m", "2h"); a
// ratio's (utilisation, fairness) a number from 0 to 1 or a percentage ("0.8", "80%"); a count's
// a number.
//
// Plain values and pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "scheduler/policy.h"
#include "sim/metrics.h"

namespace gf::tune {

enum class Metric {
  kAvgWait,  // queueing: first start - submit
  kMedianWait,
  kP95Wait,
  kP99Wait,
  kAvgJct,  // job completion time: end - submit
  kMedianJct,
  kP95Jct,
  kP99Jct,
  kAvgSlowdown,  // JCT / run time
  kP95Slowdown,
  kUtilisation,  // GPU time held / (GPUs x makespan), 0..1
  kFairness,     // Jain's index over the teams' mean slowdowns, 0..1
  kPreemptions,  // runs stopped to make room
};

enum class MetricUnit { kSeconds, kRatio, kCount };

// The metric's name as goals write it ("p95_wait"), its unit, and whether a class may be named.
std::string_view NameOf(Metric metric);
MetricUnit UnitOf(Metric metric);
bool PerClass(Metric metric);

enum class GoalKind { kBound, kMinimize, kMaximize };
enum class Comparison { kBelow, kAtMost, kAbove, kAtLeast };  // <, <=, >, >=

struct Goal {
  std::string text;  // as the admin wrote it, trimmed: names the goal in tables and errors
  GoalKind kind = GoalKind::kBound;
  std::string class_name{};  // "" = every job
  Metric metric = Metric::kAvgWait;
  Comparison comparison = Comparison::kBelow;  // kBound only
  double bound = 0;  // kBound only: seconds, a ratio 0..1, or a count (UnitOf)
};

// Errors (kInvalidArgument): "goal 'TEXT': WHAT; write ..." naming the accepted forms and the
// metrics (an unknown metric, a class on a metric of all jobs, a bad value, no operator).
Result<Goal> ParseGoal(std::string_view text);

// Every goal parsed, and each class a goal names checked against the policy's classes. Errors:
// ParseGoal's; "goal 'urgent.p95_wait<1h': no class 'urgent'; the classes are high, normal, low".
Result<std::vector<Goal>> ParseGoals(const std::vector<std::string>& texts,
                                     const PolicyConfig& policy);

// The goal's figure in `summary`: seconds, a ratio or a count. nullopt when it names a class
// that ran no job in the replay: nothing to measure (a bound on it counts as met).
std::optional<double> ValueOf(const Goal& goal, const sim::Summary& summary);

// Whether `value` satisfies a bound (kBound only).
bool Meets(const Goal& goal, double value);

// A figure for people: "12m30s" (seconds), "93.2 %" (ratio), "17" (count).
std::string FormatValue(Metric metric, double value);

}  // namespace gf::tune
