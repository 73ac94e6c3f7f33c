// Explain(): why the scheduler does what it does with one job (issue #4, scope 9), for
// `gpufleet explain JOB`.
//
// Assumptions:
// - An explanation must never disagree with a decision. For a queued job it is read from the
//   pass Decide() runs (DecideUpTo, pass_probe.h), at the moment the pass reaches the job: the
//   same pool (what the jobs ahead took, claimed and reserved), the same ledger (what their
//   teams hold) and the same order. The outcome and the reason are Decide()'s own.
// - The priority factors are those the order compares (ordering/fair_share.h), computed by
//   the same functions, before the pass changes anything (the order is fixed for the pass).
// - Per node, the most relevant nodes first (where it goes, then nodes that could take it,
//   then those that are too small, have another model, or are not up), at most
//   kMaxExplainedNodes, with counts per verdict over every node: clusters have 1,000 nodes.
// - A running job's preemption rules are evaluated (RightToPreempt) as they will apply once
//   its minimum run time has passed.
//
// Pure, like Decide(): safe from any thread. Cost: one pass up to the job, plus O(GPUs).
#pragma once

#include "core/clock.h"
#include "core/result.h"
#include "model/explanation.h"
#include "model/snapshot.h"
#include "scheduler/policy.h"

namespace gf {

// The explanation for `job`, queued in `queue` or running in `cluster`. Errors: kNotFound when
// it is neither ("job 12 is neither queued nor running").
Result<Explanation> Explain(const ClusterSnapshot& cluster,
                            const Queue& queue,
                            const PolicyConfig& policy,
                            Time now,
                            JobId job);

}  // namespace gf
