// How the stock order and backfill use run-time predictions (PolicyConfig::prediction, issue
// #22). Users mostly give no time limit, or a huge one; without a prediction every waiting job
// is as long as any other, so the stock order was FIFO within a fair-share group and backfill
// had no end to plan with.
//
// The rule (docs/scheduling.md, "Predicted run times"):
// - Order. Within its class tier and fair-share group (same team standing and user share), a
//   job's place is its submit time plus its predicted GPU-time (predicted run time x GPUs held,
//   read as a delay: 1 GPU-hour = 1 hour), at most `max_delay`. Shorter work goes first, as in
//   shortest-job-first (Helios' QSSF orders by predicted GPU-time), but the key never changes
//   while a job waits, and it bounds starvation: a job is passed only by jobs whose place comes
//   earlier, so never by a job submitted more than `max_delay` after it; once that long has
//   passed, every new arrival goes behind it. A job without an estimate keeps its submit time.
// - Backfill. A run is planned to end at its high estimate (about the 90th percentile of such
//   runs) where it has no time limit or a longer one; the kill time stays the limit. A run that
//   outlives its high estimate has it doubled, as often as it takes to lie ahead again (run
//   times are heavy-tailed: the longer a job has run, the longer it is likely to go on), so the
//   reservations behind it move later instead of counting on GPUs that are not coming. The
//   plan changes only at those doublings, so reservations do not slide at every pass.
//
// - Preemption by size (PredictionPolicy::size_preemption). A job's predicted remaining
//   run time, after it has run for `a` (over all its runs), is max(expected - a, a): what its
//   estimate leaves, but at least as long again as it has run (heavy-tailed run times: the
//   expected remaining life of a job grows with its age, as with a Pareto law of index 2), so
//   that the remaining work falls to half the estimate and then grows with the job's age.
//   Without an estimate it is `a`: least attained service first. Its predicted remaining
//   GPU-time (x GPUs held, as for the place) is its size rank. A waiting job may preempt a
//   running job of its class tier, of its team or of a team that does not go before its own in
//   fair share (preemption/victims.cpp), whose rank is at least `size_preemption_ratio`
//   times its own, that has run the minimum run time, may be requeued, and whose place, had it
//   been waiting with its service so far, would come after the waiting job's. A requeued
//   job's place counts its remaining work the same way, from its earlier runs' service.
//   Anti-starvation: a place is at most `max_delay` after the submit time, so no job is
//   preempted for size, nor passed in the queue, by a job submitted more than `max_delay`
//   after it; after that long it has only finitely many jobs ahead of it.
//
// Pure functions over values: safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

#include "model/snapshot.h"
#include "scheduler/policy.h"

namespace gf {

// Whether `policy` orders and backfills by estimates (prediction on, the priority order).
bool UsesEstimates(const PolicyConfig& policy);

// The job's place in its group (unix ms): its submit time, moved back by its predicted
// remaining GPU-time (RemainingGpuMs, from its earlier runs' service) up to max_delay when
// UsesEstimates(policy) and it has an estimate or earlier service.
// `size_weight`: what its user's fair share makes a GPU-millisecond of it count
// (UserStanding::size_weight, ordering/fair_share.h; 1 for preemption by size).
std::int64_t PlaceMs(const QueuedJob& job, const PolicyConfig& policy, double size_weight = 1);

// Whether the policy preempts by size (UsesEstimates and PredictionPolicy::size_preemption).
bool PreemptsBySize(const PolicyConfig& policy);

// The predicted remaining run time of a job with `expected` (0: no estimate) after it has
// run for `attained`: max(expected - attained, attained) (the rule above).
Millis PredictedRemaining(Millis expected, Millis attained);

// A waiting job's and a running job's (at `now`) predicted remaining GPU-milliseconds: the
// size rank of preemption by size (a share or a CPU-only job counts one GPU).
std::int64_t RemainingGpuMs(const QueuedJob& job);
std::int64_t RemainingGpuMs(const RunningJob& job, Time now);

// A running job's place at `now`, as PlaceMs would give it were it waiting with its service
// so far: what a waiting job must come before to preempt it for size.
std::int64_t RunningPlaceMs(const RunningJob& job, const PolicyConfig& policy, Time now);

// The length a pass plans a start of `job` with: its effective limit (`limit`), or, when
// UsesEstimates(policy), its high estimate where that is shorter or there is no limit.
// nullopt: no end is known.
std::optional<std::chrono::seconds> PlannedLength(const QueuedJob& job,
                                                  std::optional<std::chrono::seconds> limit,
                                                  const PolicyConfig& policy);

// The length a start is expected to last at the earliest plausible end (for the range of an
// estimated start, model/start_estimate.h): PlannedLength with the median estimate in place of
// the high one. nullopt where PlannedLength is.
std::optional<std::chrono::seconds> ExpectedLength(const QueuedJob& job,
                                                   std::optional<std::chrono::seconds> limit,
                                                   const PolicyConfig& policy);

// When GPUs are expected back (unix ms): `at` as reservations plan it, `early` as soon as the
// median estimates say (`at` where no estimate shortened the plan), and whether a predicted run
// time set `at` rather than a time limit. What an estimated start's range and basis come from.
struct PlannedEnd {
  std::int64_t at = std::numeric_limits<std::int64_t>::max();
  std::int64_t early = std::numeric_limits<std::int64_t>::max();
  bool predicted = false;
};

// When a running job's GPUs are expected back (unix ms, at least `now_ms`): at once when it is
// stopping; else the earlier of its limit's end and, with `use_estimates`, its planned end by
// the rule above; kNever when neither is known. Its `early`: the start plus the median
// estimate, at least now, where the estimate set `at`.
PlannedEnd PlanEnd(const RunningJob& job, std::int64_t now_ms, bool use_estimates);
inline std::int64_t PlannedEndMs(const RunningJob& job, std::int64_t now_ms, bool use_estimates) {
  return PlanEnd(job, now_ms, use_estimates).at;
}

}  // namespace gf
