// When the job lifecycle must look again although nothing happens: the next moment a
// scheduling pass may decide something new on unchanged state. A waiting job may be planning
// to preempt a running job that has not run the policy's minimum run time yet; and under the
// las (2D-LAS) order a running job moves to a later queue as its attained service grows, and a
// waiting job may then preempt it. The controller arms its next pass, and the simulator a
// wake-up event on its virtual clock, with this one rule. Pure; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "core/clock.h"
#include "model/snapshot.h"
#include "scheduler/policy.h"

namespace gf {

// The earliest moment after `now` when one of `running` (jobs holding GPUs, as the snapshot
// gives them; those being stopped are left out) reaches the minimum run time, or (las) its next
// queue; nullopt when preemption is off or no such moment comes.
std::optional<Time> NextPassAt(const std::vector<RunningJob>& running,
                               const PolicyConfig& policy,
                               Time now);

}  // namespace gf
