#include "store/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace gf {
namespace {

std::string Ms(Time t) {
  return std::to_string(ToUnixMillis(t)) + " ms";
}

// "is nan; it must be a finite number" when `value` is NaN or infinite, "" otherwise.
// SQLite would store a NaN as NULL and PostgreSQL accepts it, so neither can be left to the
// schema.
std::string NotFinite(std::string_view field, double value) {
  if (std::isfinite(value)) {
    return "";
  }
  return std::string(field) + " is " + std::to_string(value) + "; it must be a finite number";
}

// "samples is -1; ..." when `samples` is negative, "" otherwise.
std::string NegativeSamples(std::int64_t samples) {
  if (samples >= 0) {
    return "";
  }
  return "samples is " + std::to_string(samples) + "; it counts samples, so it must be >= 0";
}

// What is wrong with a job's usage, "" if nothing.
std::string UsageProblem(const JobUsage& usage) {
  std::string problem = NegativeSamples(usage.samples);
  return problem.empty() ? NotFinite("mean_util_pct", usage.mean_util_pct) : problem;
}

// How to fix a `ms` that is not the start of a minute: the start of its minute (also before
// 1970), unless that is below the smallest int64.
std::string RoundDownHint(std::int64_t ms) {
  const std::int64_t length = kGpuMinuteLength.count();
  const std::int64_t into_minute = ((ms % length) + length) % length;
  if (ms < std::numeric_limits<std::int64_t>::min() + into_minute) {
    return "round it to a whole minute";
  }
  return "round it down to " + std::to_string(ms - into_minute) + " ms";
}

// What is wrong with `row`, "" if nothing.
std::string GpuMinuteProblem(const GpuMinute& row) {
  if (row.uuid.value().empty()) {
    return "uuid is empty; set it to the GPU's UUID";
  }
  if (row.node.value().empty()) {
    return "node is empty; set it to the name of the GPU's node";
  }
  if (std::string problem = NegativeSamples(row.samples); !problem.empty()) {
    return problem;
  }
  if (row.allocated_ms < 0 || row.allocated_ms > kGpuMinuteLength.count()) {
    return "allocated_ms is " + std::to_string(row.allocated_ms) +
           "; it is the part of the minute a job held the GPU, so it must be between 0 and " +
           std::to_string(kGpuMinuteLength.count());
  }
  const std::int64_t ms = ToUnixMillis(row.minute);
  if (ms % kGpuMinuteLength.count() != 0) {
    return "minute " + Ms(row.minute) + " is not the start of a minute (a multiple of 60 s); " +
           RoundDownHint(ms);
  }
  std::string problem = NotFinite("util_mean_pct", row.util_mean_pct);
  return problem.empty() ? NotFinite("power_mean_w", row.power_mean_w) : problem;
}

// What is wrong with a usage record, "" if nothing. The schema checks the same bounds; checking
// here too gives every backend the same message, and catches a NaN (stored as NULL).
std::string UsageRecordProblem(const UsageRecord& r) {
  if (r.job.value() <= 0) {
    return "job is " + std::to_string(r.job.value()) + "; give the id of the job that ran";
  }
  if (r.end < r.start) {
    return "end (" + Ms(r.end) + ") is before start (" + Ms(r.start) +
           "); a run ends after it starts";
  }
  if (r.gpus < 0) {
    return "gpus is " + std::to_string(r.gpus) + "; it must be >= 0";
  }
  if (std::string problem = NotFinite("gpu_seconds", r.gpu_seconds); !problem.empty()) {
    return problem;
  }
  if (r.gpu_seconds < 0) {
    return "gpu_seconds is " + std::to_string(r.gpu_seconds) + "; it must be >= 0";
  }
  return "";
}

// True for a lowercase hex digit, the only form a stored hash takes (so one secret has one
// hash text, and a lookup by comparison cannot miss on case).
bool IsLowerHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}
bool IsIdChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
}

// What is wrong with a token, "" if nothing. The id travels in an HTTP header before the
// secret, so it is kept to a charset that needs no escaping anywhere.
std::string TokenProblem(const ApiToken& t) {
  if (t.id.empty() || t.id.size() > kMaxTokenIdLength ||
      !std::all_of(t.id.begin(), t.id.end(), IsIdChar)) {
    return "id must be 1 to " + std::to_string(kMaxTokenIdLength) + " characters of a-z and 0-9";
  }
  if (t.secret_hash.size() != kTokenHashLength ||
      !std::all_of(t.secret_hash.begin(), t.secret_hash.end(), IsLowerHex)) {
    return "secret_hash must be " + std::to_string(kTokenHashLength) +
           " lowercase hex digits (the SHA-256 of the secret), got " +
           std::to_string(t.secret_hash.size()) + " characters";
  }
  return "";
}

// A subscription the controller could not deliver or match: no id or no target, a team
// subscription without its team, or a job subscription without its job.
std::string SubscriptionProblem(const Subscription& sub) {
  if (sub.id.empty()) {
    return "id must not be empty";
  }
  if (sub.target.empty()) {
    return "target (the webhook URL or e-mail address) must not be empty";
  }
  if (sub.scope == SubscriptionScope::kTeam && sub.team.empty()) {
    return "a team subscription needs its team";
  }
  if (sub.scope == SubscriptionScope::kJob && (!sub.job || sub.job->value() <= 0)) {
    return "a job subscription needs its job";
  }
  return "";
}

}  // namespace

Status ValidateBatch(const StoreBatch& batch) {
  for (const Job& job : batch.jobs) {
    if (job.host_usage && (job.host_usage->cpu_ms < 0 || job.host_usage->peak_memory_kib < 0)) {
      return InvalidArgument("commit: job " + std::to_string(job.id.value()) +
                             " host usage: cpu_ms and peak_memory_kib must be 0 or more");
    }
    if (!job.usage.has_value()) {
      continue;
    }
    if (std::string problem = UsageProblem(*job.usage); !problem.empty()) {
      return InvalidArgument("commit: job " + std::to_string(job.id.value()) +
                             " usage: " + problem);
    }
  }
  for (std::size_t i = 0; i < batch.gpu_minutes.size(); ++i) {
    const GpuMinute& row = batch.gpu_minutes[i];
    if (std::string problem = GpuMinuteProblem(row); !problem.empty()) {
      return InvalidArgument("commit: gpu_minutes[" + std::to_string(i) + "] (GPU '" +
                             row.uuid.value() + "' on node '" + row.node.value() + "', minute " +
                             Ms(row.minute) + "): " + problem);
    }
  }
  for (std::size_t i = 0; i < batch.usage.size(); ++i) {
    if (std::string problem = UsageRecordProblem(batch.usage[i]); !problem.empty()) {
      return InvalidArgument("commit: usage[" + std::to_string(i) + "] (job " +
                             std::to_string(batch.usage[i].job.value()) + "): " + problem);
    }
  }
  for (std::size_t i = 0; i < batch.tokens.size(); ++i) {
    if (std::string problem = TokenProblem(batch.tokens[i]); !problem.empty()) {
      return InvalidArgument("commit: tokens[" + std::to_string(i) + "]: " + problem);
    }
  }
  for (std::size_t i = 0; i < batch.subscriptions.size(); ++i) {
    if (std::string problem = SubscriptionProblem(batch.subscriptions[i]); !problem.empty()) {
      return InvalidArgument("commit: subscriptions[" + std::to_string(i) + "] ('" +
                             batch.subscriptions[i].id + "'): " + problem);
    }
  }
  return OkStatus();
}

Status ValidateUsageRange(Time from, Time to) {
  if (to < from) {
    return InvalidArgument("sum usage: to (" + Ms(to) + ") is before from (" + Ms(from) +
                           "); pass from <= to");
  }
  return OkStatus();
}

Status ValidateGpuMinuteRange(Time from, Time to, int limit) {
  if (limit <= 0) {
    return InvalidArgument("list gpu minutes: limit must be positive, got " +
                           std::to_string(limit));
  }
  if (to < from) {
    return InvalidArgument("list gpu minutes: to (" + Ms(to) + ") is before from (" + Ms(from) +
                           "); pass from <= to");
  }
  return OkStatus();
}

LeaseAttempt DecideLease(const std::optional<LeaseHolder>& current,
                         const std::string& holder,
                         Time now,
                         std::chrono::milliseconds ttl) {
  // An empty holder is PostgreSQL's placeholder row (made before the first acquisition).
  if (current && !current->holder.empty() && current->holder != holder && current->expires > now) {
    return LeaseAttempt{.acquired = false, .lease = *current};
  }
  return LeaseAttempt{
      .acquired = true,
      .lease = LeaseHolder{
          .holder = holder, .epoch = (current ? current->epoch : 0) + 1, .expires = now + ttl}};
}

Status CheckFence(std::int64_t fence, const std::optional<LeaseHolder>& current) {
  if (!current || current->epoch != fence) {
    return FailedPrecondition(
        "this controller lost the lease (its epoch " + std::to_string(fence) + ", now " +
        (current ? std::to_string(current->epoch) + " held by " + current->holder : "none") +
        "): another controller leads; nothing was written");
  }
  return OkStatus();
}

}  // namespace gf
