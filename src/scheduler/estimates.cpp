#include "scheduler/estimates.h"

#include <algorithm>

#include "scheduler/placement/gpu_pool.h"

namespace gf {

bool UsesEstimates(const PolicyConfig& policy) {
  return policy.prediction.enabled && policy.ordering.order == QueueOrder::kPriority;
}

std::int64_t PlaceMs(const QueuedJob& job, const PolicyConfig& policy) {
  const std::int64_t submit_ms = ToUnixMillis(job.submit_time);
  if (!job.estimate || !UsesEstimates(policy)) {
    return submit_ms;
  }
  // A CPU-only job holds no GPU: it is placed as a job of one GPU's length, not as no work.
  const std::int64_t milli = std::max<std::int64_t>(RequestedMilli(job.request), kWholeGpuMilli);
  const std::int64_t cap_ms = Millis(policy.prediction.max_delay).count();
  const double gpu_ms = static_cast<double>(job.estimate->expected.count()) *
                        static_cast<double>(milli) / kWholeGpuMilli;
  return submit_ms + static_cast<std::int64_t>(std::min(gpu_ms, static_cast<double>(cap_ms)));
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

std::int64_t PlannedEndMs(const RunningJob& job, std::int64_t now_ms, bool use_estimates) {
  if (job.stopping) {
    return now_ms;  // told to stop: its GPUs come back within its grace period
  }
  const std::int64_t start_ms = ToUnixMillis(job.start_time);
  std::int64_t end_ms = job.time_limit ? start_ms + Millis(*job.time_limit).count() : kNever;
  if (use_estimates && job.estimate) {
    // Outlived its high estimate: the estimate doubles until it lies ahead.
    std::int64_t length_ms = std::max<std::int64_t>(job.estimate->high.count(), 1000);
    while (start_ms + length_ms <= now_ms && length_ms < kNever / 4) {
      length_ms *= 2;
    }
    end_ms = std::min(end_ms, start_ms + length_ms);
  }
  return std::max(now_ms, end_ms);
}

}  // namespace gf
