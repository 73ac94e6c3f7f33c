// The baseline orders (PolicyConfig::ordering: fifo, sjf, srtf, las; policy.h QueueOrder): a
// job's rank within its class tier, lower first. One key for the order of waiting jobs, for
// which running jobs an order lets them preempt, and for which victims go first, so that the
// three agree.
//
// Assumptions:
// - The oracle figures (QueuedJob / RunningJob expected_duration) are what `gpufleet sim`
//   knows from the trace; the controller leaves them unset. A job with no expected duration
//   ranks as if its effective time limit were its length, or last when it has none. Attained
//   service (attained_gpu_seconds) is the job book's count of what the job's own earlier runs
//   held, a gang member's its own GPUs' (Tiresias counts a gang's whole).
// - Ranks compare only within a class tier: the tier comes first in the order, and an order
//   never lets a job preempt one of another tier (classes keep their own `preempts` rules).
//
// Pure functions: safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "model/snapshot.h"
#include "scheduler/classes.h"
#include "scheduler/ordering/fair_share.h"
#include "scheduler/policy.h"

namespace gf {

// The rank of a job whose length nothing tells (SJF, SRTF): after every other.
inline constexpr std::int64_t kLastRank = std::numeric_limits<std::int64_t>::max();

// Whether the order lets a waiting job preempt a running one of its tier that ranks after it
// (srtf, las; priority with preemption by size, scheduler/estimates.h, which adds its own
// conditions: preemption/victims.h).
bool OrderPreempts(const PolicyConfig& policy);

// A waiting job's rank, `limit` its effective time limit. fifo: 0. priority: its predicted
// remaining GPU-milliseconds under preemption by size (RemainingGpuMs), else 0. sjf, srtf: its
// expected milliseconds (expected_duration, else the limit, else kLastRank). las: its queue.
std::int64_t QueuedRank(const QueuedJob& job,
                        const PolicyConfig& policy,
                        std::optional<std::chrono::seconds> limit);
// A running job's rank at `now`: srtf (and sjf) its milliseconds left, las its queue,
// priority its predicted remaining GPU-milliseconds (preemption by size; else 0).
std::int64_t RunningRank(const RunningJob& job, const PolicyConfig& policy, Time now);

// 2D-LAS: the queue of `attained` GPU-seconds (how many thresholds it reached), and a running
// job's attained service at `now` (earlier runs, plus GPUs x time in this one).
int LasQueue(double attained_gpu_seconds, const std::vector<double>& thresholds);
double AttainedGpuSeconds(const RunningJob& job, Time now);

// las: the first moment after `now` when running `job` moves to a later queue (a waiting job
// may then preempt it; the caller schedules a pass then, as for the minimum run time).
// nullopt under other orders, in the last queue, or holding no GPU.
std::optional<Time> NextRankChange(const RunningJob& job, const PolicyConfig& policy, Time now);

// A rank for people: "2h left", "queue 1" (las), "no known length".
std::string DescribeRank(std::int64_t rank, const PolicyConfig& policy);

// The order of `queue` under a baseline order: class tier, rank, submit time, id, position.
// FairShareOrdering hands the baselines to it.
Ordering BaselineOrdering(const Queue& queue,
                          const PolicyConfig& policy,
                          const ClassTable& classes);

}  // namespace gf
