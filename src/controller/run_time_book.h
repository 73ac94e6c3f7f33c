// RunTimeBook: the run-time predictor (src/predict) as the controller keeps it (issue #22).
// It learns from every run that ends (and, at start, from the store's newest finished jobs),
// and estimates a job's run when the controller first knows the job (submitted, or loaded at
// start). The controller keeps that estimate on the job (Job::prediction) while it is active,
// a requeue included: its place in the order (scheduler/estimates.h) must not move as the
// predictor learns from other jobs, or the incremental scheduler's kept order would drift from
// a full pass's.
//
// Owned by the controller; state thread only.
#pragma once

#include <optional>

#include "core/result.h"
#include "model/job.h"
#include "model/snapshot.h"
#include "predict/runtime_predictor.h"
#include "store/store.h"

namespace gf {

class RunTimeBook {
 public:
  explicit RunTimeBook(PredictorConfig config = {});

  // What the predictor knows a job by: its owner, team, command family (CommandFamily of its
  // name and argv) and GPU count (a share counts one).
  static RunKey KeyOf(const Job& job);

  // Learns from the newest `max_jobs` jobs in the store that ended, oldest first (the
  // weighted means give the newest runs the most weight, as they would have had live).
  Status Load(StoreReader& store, int max_jobs);

  // The estimate of `job`'s run from the runs that ended so far; nullopt before any did.
  std::optional<JobPrediction> Estimate(const Job& job) const;

  // `job` left a run in `job.state`: a completed, failed or timed-out run (with its start and
  // end) is learned; a preempted, requeued or cancelled one says nothing of a whole run.
  void RunEnded(const Job& job);

 private:
  RuntimePredictor predictor_;
};

}  // namespace gf
