#include "controller/run_time_book.h"

#include <algorithm>

namespace gf {
namespace {

// A whole run's end: its length says how long such a job runs.
std::optional<RunEnd> EndOf(JobState state) {
  switch (state) {
    case JobState::kCompleted:
      return RunEnd::kCompleted;
    case JobState::kFailed:
      return RunEnd::kFailed;
    case JobState::kTimeout:
      return RunEnd::kTimeout;
    default:
      return std::nullopt;
  }
}

}  // namespace

RunTimeBook::RunTimeBook(PredictorConfig config) : predictor_(config) {}

RunKey RunTimeBook::KeyOf(const Job& job) {
  return RunKey{.user = job.owner.user,
                .team = job.spec.team,
                .family = CommandFamily(job.spec.name, job.spec.argv),
                .gpus = std::max(job.spec.request.gpus, job.spec.request.gpu_milli > 0 ? 1 : 0)};
}

Status RunTimeBook::Load(StoreReader& store, int max_jobs) {
  JobQuery query;
  query.limit = max_jobs;
  GF_ASSIGN_OR_RETURN(std::vector<Job> jobs, store.ListJobs(query));  // newest first
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    RunEnded(*it);
  }
  return OkStatus();
}

std::optional<JobPrediction> RunTimeBook::Estimate(const Job& job) const {
  const std::optional<Prediction> p = predictor_.Predict(KeyOf(job));
  if (!p) {
    return std::nullopt;
  }
  return JobPrediction{.expected = p->expected,
                       .high = p->high,
                       .basis = std::string(ToString(p->basis)),
                       .explanation = p->explanation};
}

void RunTimeBook::RunEnded(const Job& job) {
  const std::optional<RunEnd> end = EndOf(job.state);
  if (!end || !job.start_time || !job.end_time || *job.end_time < *job.start_time) {
    return;
  }
  predictor_.Learn(
      KeyOf(job), std::chrono::duration_cast<Millis>(*job.end_time - *job.start_time), *end);
}

}  // namespace gf
