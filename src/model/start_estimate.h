// StartEstimate: when a waiting job is expected to start, as a range with what it rests on
// (issue #22). An estimated start is only as good as the run ends it was planned from: a user's
// time limit is an upper bound (the job may end sooner, never later), a predicted run time a
// guess learned from history. People should see which, and how wide the guess is.
//
// Built by the scheduler's pass (a reservation, or a preemption) and carried on the Job beside
// Job::estimated_start (which is `latest`), like the pending reason: recomputed each pass, never
// stored. In `model` because the Job, the API and the CLI carry it.
//
// Plain value type; thread-compatible.
#pragma once

#include <string_view>

#include "core/clock.h"

namespace gf {

enum class StartBasis {
  // Every run end the start waits for is a time limit's (the user's, or the class's default):
  // the start is the latest it can be, as the limits stand.
  kTimeLimits,
  // At least one of those ends is predicted (scheduler/estimates.h): `latest` from the high
  // estimates reservations plan with, `earliest` from the median ones.
  kPredictions,
  // Its victims are stopping, or become preemptible at a known time (the minimum run time).
  kPreemption,
};
// "time_limits", "predictions", "preemption": the API's names, stable once released.
std::string_view ToString(StartBasis basis);

struct StartEstimate {
  Time earliest{};  // <= latest
  Time latest{};    // Job::estimated_start: what reservations plan with
  StartBasis basis = StartBasis::kTimeLimits;
  bool operator==(const StartEstimate&) const = default;
};

}  // namespace gf
