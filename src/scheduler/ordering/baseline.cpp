#include "scheduler/ordering/baseline.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/duration.h"
#include "scheduler/estimates.h"

namespace gf {
namespace {

double Seconds(Millis d) {
  return std::chrono::duration<double>(d).count();
}

// SJF and SRTF: how long the job runs from `start`, as far as anyone knows.
std::optional<Millis> Length(std::optional<Millis> expected,
                             std::optional<std::chrono::seconds> limit) {
  if (expected.has_value()) {
    return expected;
  }
  if (limit.has_value()) {
    return Millis(*limit);
  }
  return std::nullopt;
}

}  // namespace

bool OrderPreempts(const PolicyConfig& policy) {
  return policy.ordering.order == QueueOrder::kSrtf || policy.ordering.order == QueueOrder::kLas ||
         PreemptsBySize(policy);
}

std::int64_t QueuedRank(const QueuedJob& job,
                        const PolicyConfig& policy,
                        std::optional<std::chrono::seconds> limit) {
  switch (policy.ordering.order) {
    case QueueOrder::kPriority:
      return PreemptsBySize(policy) ? RemainingGpuMs(job) : 0;
    case QueueOrder::kFifo:
      return 0;
    case QueueOrder::kSjf:
    case QueueOrder::kSrtf: {
      const std::optional<Millis> length = Length(job.expected_duration, limit);
      return length.has_value() ? length->count() : kLastRank;
    }
    case QueueOrder::kLas:
      return LasQueue(job.attained_gpu_seconds, policy.ordering.las_thresholds);
  }
  return 0;
}

std::int64_t RunningRank(const RunningJob& job, const PolicyConfig& policy, Time now) {
  switch (policy.ordering.order) {
    case QueueOrder::kPriority:
      return PreemptsBySize(policy) ? RemainingGpuMs(job, now) : 0;
    case QueueOrder::kFifo:
      return 0;
    case QueueOrder::kSjf:
    case QueueOrder::kSrtf: {
      const std::optional<Millis> length = Length(job.expected_duration, job.time_limit);
      if (!length.has_value()) {
        return kLastRank;
      }
      return std::max<std::int64_t>(0, (job.start_time + *length - now).count());
    }
    case QueueOrder::kLas:
      return LasQueue(AttainedGpuSeconds(job, now), policy.ordering.las_thresholds);
  }
  return 0;
}

int LasQueue(double attained_gpu_seconds, const std::vector<double>& thresholds) {
  // A job reaching a threshold moves down (Tiresias: executed >= queue_limit).
  return static_cast<int>(
      std::upper_bound(thresholds.begin(), thresholds.end(), attained_gpu_seconds) -
      thresholds.begin());
}

double AttainedGpuSeconds(const RunningJob& job, Time now) {
  const double gpus = HeldGpus(job.allocation);
  return job.attained_gpu_seconds + gpus * Seconds(std::max(Millis(0), now - job.start_time));
}

std::optional<Time> NextRankChange(const RunningJob& job, const PolicyConfig& policy, Time now) {
  const std::vector<double>& thresholds = policy.ordering.las_thresholds;
  const double gpus = HeldGpus(job.allocation);
  if (policy.ordering.order != QueueOrder::kLas || gpus == 0) {
    return std::nullopt;
  }
  const double attained = AttainedGpuSeconds(job, now);
  const auto queue = static_cast<std::size_t>(LasQueue(attained, thresholds));
  if (queue >= thresholds.size()) {
    return std::nullopt;
  }
  // Rounded up to the millisecond, so that at that moment the job has reached the threshold.
  const double ms = std::ceil((thresholds[queue] - attained) / gpus * 1000);
  return now + Millis(std::max<std::int64_t>(1, static_cast<std::int64_t>(ms)));
}

std::string DescribeRank(std::int64_t rank, const PolicyConfig& policy) {
  if (policy.ordering.order == QueueOrder::kLas) {
    return "queue " + std::to_string(rank);
  }
  if (policy.ordering.order == QueueOrder::kPriority) {
    return FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(Millis(rank))) +
           " GPU-time left (predicted)";
  }
  if (rank == kLastRank) {
    return "no known length";
  }
  return FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(Millis(rank))) + " left";
}

Ordering BaselineOrdering(const Queue& queue,
                          const PolicyConfig& policy,
                          const ClassTable& classes) {
  struct Key {
    std::size_t tier = 0;
    std::int64_t rank = 0;
    std::int64_t submit_ms = 0;
    std::int64_t id = 0;
    std::size_t position = 0;
    auto Tuple() const { return std::tie(tier, rank, submit_ms, id, position); }
  };
  Ordering ordering;
  ordering.job_class.reserve(queue.pending.size());
  std::vector<Key> keys;
  keys.reserve(queue.pending.size());
  for (std::size_t i = 0; i < queue.pending.size(); ++i) {
    const QueuedJob& job = queue.pending[i];
    const ClassIndex c = classes.IndexOf(job.priority);
    ordering.job_class.push_back(c);
    keys.push_back(
        Key{.tier = classes.Tier(c),
            .rank = QueuedRank(job, policy, EffectiveTimeLimit(classes.Policy(c), job.time_limit)),
            .submit_ms = ToUnixMillis(job.submit_time),
            .id = job.id.value(),
            .position = i});
  }
  const auto before = [](const Key& a, const Key& b) {
    return a.Tuple() < b.Tuple();
  };
  // A queue kept in submit order (FIFO's, as callers hold it) is sorted already: checked in
  // one sweep, where a sort of a deep queue at every pass costs a replay a third of its time.
  if (!std::is_sorted(keys.begin(), keys.end(), before)) {
    std::sort(keys.begin(), keys.end(), before);
  }
  ordering.order.reserve(keys.size());
  for (const Key& key : keys) {
    ordering.order.push_back(&queue.pending[key.position]);
  }
  return ordering;
}

}  // namespace gf
