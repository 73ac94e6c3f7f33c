#include "model/notification.h"

#include <algorithm>
#include <string>

namespace gf {

std::string_view ToString(NotifyKind kind) {
  switch (kind) {
    case NotifyKind::kJobEnd:
      return "job_end";
    case NotifyKind::kJobFailed:
      return "job_failed";
    case NotifyKind::kPreempted:
      return "preempted";
    case NotifyKind::kIdleWarning:
      return "idle_warning";
    case NotifyKind::kQuota80:
      return "quota_80";
    case NotifyKind::kQuota100:
      return "quota_100";
    case NotifyKind::kGpuFailed:
      return "gpu_failed";
    case NotifyKind::kMemoryBreach:
      return "memory_breach";
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

std::string_view ToString(SubscriptionScope scope) {
  switch (scope) {
    case SubscriptionScope::kUser:
      return "user";
    case SubscriptionScope::kTeam:
      return "team";
    case SubscriptionScope::kCluster:
      return "cluster";
    case SubscriptionScope::kJob:
      return "job";
  }
  return "unknown";
}

std::string_view ToString(NotifyChannel channel) {
  switch (channel) {
    case NotifyChannel::kWebhook:
      return "webhook";
    case NotifyChannel::kEmail:
      return "email";
  }
  return "unknown";
}

Result<SubscriptionScope> ParseSubscriptionScope(std::string_view text) {
  for (const SubscriptionScope scope : {SubscriptionScope::kUser,
                                        SubscriptionScope::kTeam,
                                        SubscriptionScope::kCluster,
                                        SubscriptionScope::kJob}) {
    if (text == ToString(scope)) {
      return scope;
    }
  }
  return InvalidArgument("subscription scope '" + std::string(text) +
                         "' is not one of user, team, cluster, job");
}

Result<NotifyChannel> ParseNotifyChannel(std::string_view text) {
  for (const NotifyChannel channel : {NotifyChannel::kWebhook, NotifyChannel::kEmail}) {
    if (text == ToString(channel)) {
      return channel;
    }
  }
  return InvalidArgument("notification channel '" + std::string(text) +
                         "' is not one of webhook, email");
}

Status CheckSubscriptionTarget(NotifyChannel channel, std::string_view target) {
  for (const char c : target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return InvalidArgument("'" + std::string(target) +
                             "' holds a blank or control character; remove it");
    }
  }
  if (channel == NotifyChannel::kWebhook) {
    std::string_view rest = target;
    if (rest.starts_with("https://")) {
      rest.remove_prefix(8);
    } else if (rest.starts_with("http://")) {
      rest.remove_prefix(7);
    } else {
      return InvalidArgument("'" + std::string(target) +
                             "' is not a webhook URL; give http://HOST[:PORT]/PATH or "
                             "https://HOST[:PORT]/PATH");
    }
    if (rest.empty() || rest.front() == '/' || rest.front() == ':') {
      return InvalidArgument("'" + std::string(target) + "' names no host; give " +
                             "http(s)://HOST[:PORT]/PATH");
    }
    return OkStatus();
  }
  const std::size_t at = target.find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == target.size() ||
      target.find('@', at + 1) != std::string_view::npos) {
    return InvalidArgument("'" + std::string(target) +
                           "' is not an e-mail address; give one like name@example.com");
  }
  return OkStatus();
}

Result<std::vector<NotifyKind>> ParseNotifyKinds(std::string_view comma_separated) {
  std::vector<NotifyKind> kinds;
  std::string_view rest = comma_separated;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (name.empty()) {
      continue;  // "a,,b" or a trailing comma
    }
    GF_ASSIGN_OR_RETURN(NotifyKind kind, ParseNotifyKind(name));
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      kinds.push_back(kind);
    }
  }
  return kinds;
}

std::string JoinNotifyKinds(const std::vector<NotifyKind>& kinds) {
  std::string text;
  for (const NotifyKind kind : kinds) {
    text += (text.empty() ? "" : ",") + std::string(ToString(kind));
  }
  return text;
}

}  // namespace gf
