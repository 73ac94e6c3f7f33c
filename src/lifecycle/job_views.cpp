#include "lifecycle/job_views.h"

namespace gf {

std::optional<RunEstimate> EstimateOf(const Job& job) {
  if (!job.prediction) {
    return std::nullopt;
  }
  return RunEstimate{.expected = job.prediction->expected, .high = job.prediction->high};
}

QueuedJob AsQueued(const JobBook& book, const Job& job) {
  return QueuedJob{.id = job.id,
                   .priority = job.spec.priority,
                   .submit_time = job.submit_time,
                   .request = job.spec.request,
                   .user = job.owner.user,
                   .team = job.spec.team,
                   .time_limit = job.spec.time_limit,
                   .budget_approved = job.budget_approved,
                   .gang = job.spec.gang ? std::optional(job.spec.gang->gang_job) : std::nullopt,
                   .estimate = EstimateOf(job),
                   .attained_gpu_seconds = book.EarlierRunsGpuSeconds(job.id)};
}

RunningJob AsRunning(const JobBook& book, const Job& job, Time now) {
  return RunningJob{
      .id = job.id,
      .team = job.spec.team,
      .user = job.owner.user,
      .priority = job.spec.priority,
      .allocation = *job.allocation,
      // A STARTING job has run for no time yet: it is as young as a job can be.
      .start_time = job.start_time.value_or(now),
      .time_limit = book.EffectiveLimit(job),
      .preemptible = job.preemptible,
      .last_checkpoint = job.last_checkpoint,  // gpufleet checkpoint, since this start
      .stopping = book.Stops().Stopping(job.id),
      .estimate = EstimateOf(job),
      .attained_gpu_seconds = book.EarlierRunsGpuSeconds(job.id),
      .submit_time = job.submit_time,
      .requeue = job.spec.requeue,
  };
}

}  // namespace gf
