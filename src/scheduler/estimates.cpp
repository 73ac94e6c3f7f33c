#include "scheduler/estimates.h"

#include <algorithm>

#include "scheduler/placement/gpu_pool.h"

namespace gf {
namespace {

// A place: `submit_ms` moved back by `gpu_ms` x `size_weight`, at most max_delay.
std::int64_t Delayed(std::int64_t submit_ms,
                     std::int64_t gpu_ms,
                     double size_weight,
                     const PolicyConfig& policy) {
  const double cap_ms = static_cast<double>(Millis(policy.prediction.max_delay).count());
  return submit_ms +
         static_cast<std::int64_t>(std::min(static_cast<double>(gpu_ms) * size_weight, cap_ms));
}

// GPUs a job counts for in its size: a CPU-only job holds no GPU, but is placed as a job of
// one GPU's length, not as no work; a share counts one GPU too.
double SizeGpus(const JobRequest& request) {
  return static_cast<double>(std::max<std::int64_t>(RequestedMilli(request), kWholeGpuMilli)) /
         kWholeGpuMilli;
}

std::int64_t GpuMs(Millis run, double gpus) {
  return static_cast<std::int64_t>(static_cast<double>(run.count()) * gpus);
}

}  // namespace

bool UsesEstimates(const PolicyConfig& policy) {
  return policy.prediction.enabled && policy.ordering.order == QueueOrder::kPriority;
}

bool PreemptsBySize(const PolicyConfig& policy) {
  return UsesEstimates(policy) && policy.prediction.size_preemption;
}

Millis PredictedRemaining(Millis expected, Millis attained) {
  return std::max(expected - attained, attained);
}

std::int64_t RemainingGpuMs(const QueuedJob& job) {
  const double gpus = SizeGpus(job.request);
  const auto attained = Millis(static_cast<std::int64_t>(job.attained_gpu_seconds / gpus * 1000));
  const Millis expected = job.estimate ? job.estimate->expected : Millis(0);
  return GpuMs(PredictedRemaining(expected, attained), gpus);
}

std::int64_t RemainingGpuMs(const RunningJob& job, Time now) {
  const double gpus = std::max(HeldGpus(job.allocation), 1.0);
  const auto earlier = Millis(static_cast<std::int64_t>(job.attained_gpu_seconds / gpus * 1000));
  const Millis attained = earlier + std::max(Millis(0), now - job.start_time);
  const Millis expected = job.estimate ? job.estimate->expected : Millis(0);
  return GpuMs(PredictedRemaining(expected, attained), gpus);
}

std::int64_t PlaceMs(const QueuedJob& job, const PolicyConfig& policy, double size_weight) {
  const std::int64_t submit_ms = ToUnixMillis(job.submit_time);
  if ((!job.estimate && job.attained_gpu_seconds <= 0) || !UsesEstimates(policy)) {
    return submit_ms;
  }
  return Delayed(submit_ms, RemainingGpuMs(job), size_weight, policy);
}

std::int64_t RunningPlaceMs(const RunningJob& job, const PolicyConfig& policy, Time now) {
  return Delayed(ToUnixMillis(job.submit_time), RemainingGpuMs(job, now), 1, policy);
}

std::optional<std::chrono::seconds> PlannedLength(const QueuedJob& job,
                                                  std::optional<std::chrono::seconds> limit,
                                                  const PolicyConfig& policy) {
  if (!job.estimate || !UsesEstimates(policy)) {
    return limit;
  }
  // Whole seconds, rounded up: a plan a little long delays nobody's reservation.
  const auto high = std::chrono::ceil<std::chrono::seconds>(job.estimate->high);
  return limit ? std::min(*limit, high) : high;
}

std::optional<std::chrono::seconds> ExpectedLength(const QueuedJob& job,
                                                   std::optional<std::chrono::seconds> limit,
                                                   const PolicyConfig& policy) {
  if (!job.estimate || !UsesEstimates(policy)) {
    return limit;
  }
  const auto expected = std::chrono::ceil<std::chrono::seconds>(job.estimate->expected);
  return limit ? std::min(*limit, expected) : expected;
}

PlannedEnd PlanEnd(const RunningJob& job, std::int64_t now_ms, bool use_estimates) {
  if (job.stopping) {
    return PlannedEnd{.at = now_ms, .early = now_ms};  // its GPUs come back within its grace
  }
  const std::int64_t start_ms = ToUnixMillis(job.start_time);
  const std::int64_t limit_end_ms =
      job.time_limit ? start_ms + Millis(*job.time_limit).count() : kNever;
  PlannedEnd end{.at = limit_end_ms, .early = limit_end_ms};
  if (use_estimates && job.estimate) {
    // Outlived its high estimate: the estimate doubles until it lies ahead.
    std::int64_t length_ms = std::max<std::int64_t>(job.estimate->high.count(), 1000);
    while (start_ms + length_ms <= now_ms && length_ms < kNever / 4) {
      length_ms *= 2;
    }
    if (start_ms + length_ms < limit_end_ms) {
      end = PlannedEnd{
          .at = start_ms + length_ms,
          .early = std::min(start_ms + length_ms,
                            start_ms + std::max<std::int64_t>(job.estimate->expected.count(), 0)),
          .predicted = true};
    }
  }
  end.at = std::max(now_ms, end.at);
  end.early = std::max(now_ms, end.early);
  return end;
}

}  // namespace gf
