// Replays of the candidate policies (`gpufleet tune`, docs/tune.md): the same history through
// the simulator once per candidate, side by side on `threads` threads (issue #22: a history
// the size of philly_pollux takes minutes per candidate on one core, and the candidates share
// nothing). Each replay is a call of sim::Simulate on its own inputs (the simulator keeps no
// state between calls and has no global), and its figures go to the candidate's slot, so the
// result does not depend on the number of threads or on which replay ends first: it is the
// serial run's, value for value.
//
// Called from one thread; `progress` is called under a lock, one call at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/node.h"
#include "sim/trace.h"

#include "tune/candidates.h"
#include "tune/choose.h"
#include "tune/goal.h"

namespace gf::tune {

// What the replays see of the cluster and its history.
struct ReplayInput {
  const std::vector<Node>& nodes;
  const std::vector<sim::TraceJob>& jobs;
  const std::map<std::string, std::string>& team_of_user;  // the settings file's team members
};

// Called as each replay ends: how many have ended so far, and the candidate that just did.
using ReplayProgress = std::function<void(std::size_t done, const std::string& name)>;

// The figures of `goals` (Measure) for each candidate, in the candidates' order, replayed on
// min(threads, candidates) threads. REQUIRES: threads >= 1. Errors: the first failing
// candidate's (in the candidates' order), naming it.
Result<std::vector<Measured>> ReplayCandidates(const ReplayInput& input,
                                               const std::vector<Candidate>& candidates,
                                               const std::vector<Goal>& goals,
                                               int threads,
                                               const ReplayProgress& progress = {});

}  // namespace gf::tune
