// What a scheduling pass sees of a job of the book (decision 0007): a pending job as the queue
// holds it, a job that holds GPUs as the cluster's running list holds it. The controller and
// the simulator build their passes' inputs with these, so that a replay's scheduler is told
// what the product's is (the same time limits, estimates, stops).
#pragma once

#include <optional>

#include "lifecycle/job_book.h"
#include "model/job.h"
#include "model/snapshot.h"

namespace gf {

// The run-time predictor's estimate as the scheduler takes it (QueuedJob/RunningJob::estimate);
// nullopt for a job never estimated.
std::optional<RunEstimate> EstimateOf(const Job& job);

// A pending job as the queue holds it, with the service its earlier runs attained.
QueuedJob AsQueued(const JobBook& book, const Job& job);

// A job that holds GPUs (JobBook::Holding) as the running list holds it: its effective time
// limit, whether it is being stopped, its earlier runs' service; a STARTING job counts as
// started at `now`.
RunningJob AsRunning(const JobBook& book, const Job& job, Time now);

}  // namespace gf
