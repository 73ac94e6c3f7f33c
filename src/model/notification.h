// Notifications (issue #8): what gpufleet tells people about, and who asked to be told.
//
// The controller raises a Notification where the thing happens (a job ends, is preempted, is
// idle; a team's budget passes 80 % or 100 %; a GPU fails); the notifier (src/notify) sends it
// to every subscription that matches, by webhook (a JSON POST, retried) or e-mail (the local
// sendmail). Plain value types.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"

namespace gf {

enum class NotifyKind {
  kJobEnd,        // a job completed, or was cancelled
  kJobFailed,     // a job failed, timed out, or was lost with its node or GPU and not requeued
  kPreempted,     // a running job was stopped for another (preemption) or reaped while idle
  kIdleWarning,   // a job's GPUs have been idle past its reaper threshold: reaped after the grace
  kQuota80,       // a team used 80 % of its GPU-hour budget for the period
  kQuota100,      // ... 100 %: its new jobs wait for an admin's approval
  kGpuFailed,     // a GPU failed (XID, ECC, lost): its jobs are requeued, admins should look
  kMemoryBreach,  // a fractional job used more GPU memory than its limit (issue #7)
};

// "job_end", "job_failed", "preempted", "idle_warning", "quota_80", "quota_100", "gpu_failed",
// "memory_breach".
std::string_view ToString(NotifyKind kind);
// The names above. Errors: kInvalidArgument listing them.
Result<NotifyKind> ParseNotifyKind(std::string_view text);
inline constexpr NotifyKind kAllNotifyKinds[] = {NotifyKind::kJobEnd,
                                                 NotifyKind::kJobFailed,
                                                 NotifyKind::kPreempted,
                                                 NotifyKind::kIdleWarning,
                                                 NotifyKind::kQuota80,
                                                 NotifyKind::kQuota100,
                                                 NotifyKind::kGpuFailed,
                                                 NotifyKind::kMemoryBreach};

struct Notification {
  NotifyKind kind = NotifyKind::kJobEnd;
  Time time{};
  std::optional<JobId> job{};        // the job it is about, if any
  std::optional<JobId> array_job{};  // ... and its array, for a task of one
  std::string user{};                // the job's owner ("" when not about a job)
  std::string team{};                // the job's team, or the team whose budget it is
  std::string node{};                // the GPU's node, for kGpuFailed
  std::string subject{};             // one line: "job 42 (train) failed: exit code 1"
  std::string message{};             // the cause, as the job's events say it
  bool operator==(const Notification&) const = default;
};

// Who hears of what: an owner's own jobs (kUser), a team's jobs and budget (kTeam: its
// members and admins may subscribe), or everything including GPU failures (kCluster: admins),
// or one job, or every task of one array (kJob: its owner or an admin; `#SBATCH --mail-type`,
// `gpufleet notify add --job ID`), removed once that job or array has ended.
enum class SubscriptionScope { kUser, kTeam, kCluster, kJob };
enum class NotifyChannel { kWebhook, kEmail };

// "user", "team", "cluster"; "webhook", "email" (the store's and the API's spelling).
std::string_view ToString(SubscriptionScope scope);
std::string_view ToString(NotifyChannel channel);
// Errors: kInvalidArgument naming the accepted values.
Result<SubscriptionScope> ParseSubscriptionScope(std::string_view text);
Result<NotifyChannel> ParseNotifyChannel(std::string_view text);

// Whether `target` can be delivered to on `channel`: a webhook is an http:// or https:// URL
// with a host; an e-mail address has one @ with text on both sides. Neither may hold blanks
// or control characters (they would end up in a request line or a mail header).
// Errors: kInvalidArgument saying what is wrong and the form expected (the caller names the
// flag or field).
Status CheckSubscriptionTarget(NotifyChannel channel, std::string_view target);
// "job_end,quota_80" → the kinds, in order, without repeats. Errors: ParseNotifyKind's.
Result<std::vector<NotifyKind>> ParseNotifyKinds(std::string_view comma_separated);
// The inverse: names joined by commas, "" for none.
std::string JoinNotifyKinds(const std::vector<NotifyKind>& kinds);

struct Subscription {
  std::string id{};     // "sub-" + random hex, assigned by the controller
  std::string owner{};  // the user who created it (may remove it; admins may remove any)
  SubscriptionScope scope = SubscriptionScope::kUser;
  std::string team{};          // kTeam: the team
  std::optional<JobId> job{};  // kJob: the job, or the array (its tasks' array job id)
  NotifyChannel channel = NotifyChannel::kWebhook;
  std::string target{};             // webhook: http(s)://... URL; e-mail: an address
  std::vector<NotifyKind> kinds{};  // empty: every kind
  Time created{};
  bool operator==(const Subscription&) const = default;
};

}  // namespace gf
