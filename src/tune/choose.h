// Judging candidates against goals: each candidate's replay (a sim::Summary) measured on every
// goal, and one recommended.
//
// The rule (docs/tune.md, "How one is chosen"):
//   1. Bounds first: a candidate that meets every bound beats one that does not. When none
//      meets them all, the one that misses the fewest, then the one that misses them by the
//      least (the sum of each missed bound's shortfall relative to the bound), is shown as
//      the closest, and flagged: nothing is recommended as meeting the goals.
//   2. Then the objectives, in the order given: the candidates within kTieTolerance of the
//      best value of the first objective stay, then of the second, ...
//   3. Then the fewest changes from the current policy (the current one has none), then the
//      order of CandidatesFrom: a change has to earn its place by more than noise.
//
// Plain values and pure functions: thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "sim/metrics.h"

#include "tune/candidates.h"
#include "tune/goal.h"

namespace gf::tune {

// Objective values this close (relative to the larger magnitude) count as equal: a replay's
// figures move by that much with the order of equal events, and a change of policy should buy
// more than that.
constexpr double kTieTolerance = 0.01;

struct Measured {
  std::vector<std::optional<double>> values;  // per goal: ValueOf (nullopt: no job to measure)
  std::vector<bool> met;                      // per goal: a bound met (objectives: true)
  int missed = 0;                             // bounds not met
  double shortfall = 0;                       // sum over missed bounds of |value - bound| / bound
};

// Each goal's figure in `summary` and whether its bound is met. A bound on a class that ran no
// job is met (nothing waited).
Measured Measure(const std::vector<Goal>& goals, const sim::Summary& summary);

struct Choice {
  std::size_t index = 0;   // into the candidates
  bool meets_all = false;  // it meets every bound (else: the closest, see above)
};

// Requires: candidates.size() == measured.size() > 0, each Measured made with `goals`.
Choice Choose(const std::vector<Goal>& goals,
              const std::vector<Candidate>& candidates,
              const std::vector<Measured>& measured);

}  // namespace gf::tune
