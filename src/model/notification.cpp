#include "model/notification.h"

#include <string>

namespace gf {

std::string_view ToString(NotifyKind kind) {
  switch (kind) {
    case NotifyKind::kJobEnd: return "job_end";
    case NotifyKind::kJobFailed: return "job_failed";
    case NotifyKind::kPreempted: return "preempted";
    case NotifyKind::kIdleWarning: return "idle_warning";
    case NotifyKind::kQuota80: return "quota_80";
    case NotifyKind::kQuota100: return "quota_100";
    case NotifyKind::kGpuFailed: return "gpu_failed";
  }
  return "unknown";
}

Result<NotifyKind> ParseNotifyKind(std::string_view text) {
  std::string names;
  for (const NotifyKind kind : kAllNotifyKinds) {
    if (text == ToString(kind)) {
      return kind;
    }
    names += (names.empty() ? "" : ", ") + std::string(ToString(kind));
  }
  return InvalidArgument("event '" + std::string(text) + "' is not one gpufleet notifies of; use " +
                         names);
}

}  // namespace gf
