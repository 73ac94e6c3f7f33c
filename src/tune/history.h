// The cluster's recorded history as a trace `gpufleet tune` replays: the jobs of the store that
// were submitted in a window and ran to an end, and the cluster's nodes. Reads only (through a
// StoreReader); the caller owns the reader and its thread.
#pragma once

#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/node.h"
#include "sim/trace.h"
#include "store/store.h"

namespace gf::tune {

struct History {
  std::vector<sim::TraceJob> jobs;  // by submit time, from the window's first submit (0)
  Time first_submit{};              // of the jobs replayed; the epoch when there are none
  int unfinished = 0;               // left out: still pending or running
  int never_ran = 0;                // left out: ended without a run (cancelled while pending)
};

// The jobs submitted at or after `since` that ran and ended (COMPLETED, FAILED, TIMEOUT, or
// CANCELLED after a start), each as the trace job of its submission: submit time, GPUs (a
// gang's members together, as one job; a share as its fraction), user, team, class, its own
// time limit, its command family (what the run-time predictor knows it by), and how long its
// last run lasted (end - start: a requeued job's last run did its whole work). Dependencies
// are not replayed: each job arrives at its submit time. Pages through ListJobs newest first
// and stops at the first page that reaches back before `since`. Errors: the store's.
Result<History> ReadHistory(StoreReader& store, Time since);

// The cluster to replay on: the store's nodes with GPUs, each up and every GPU healthy and in
// its current sharing mode (a tune is about the policy, not about a day's outages).
std::vector<Node> ReplayCluster(std::vector<Node> nodes);

}  // namespace gf::tune
