#include "notify/notifier.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/duration.h"
#include "core/printable_text.h"

extern char** environ;  // NOLINT: POSIX's process environment

namespace gf {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// Whether a webhook answer (or no answer) is worth another attempt.
bool Retryable(int status) {
  return status >= 500 || status == 408 || status == 429;
}

enum class Outcome { kSent, kRetry, kFailed, kDropped };

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSent:
      return "sent";
    case Outcome::kDropped:
      return "dropped";
    case Outcome::kRetry:  // out of attempts
    case Outcome::kFailed:
      return "failed";
  }
  return "failed";
}

struct Delivery {
  Notification notification;
  Subscription subscription;
  int attempt = 1;  // the attempt to make next
};

}  // namespace

Status ValidateNotifierOptions(const NotifierOptions& options) {
  if (options.webhook_attempts < 1) {
    return InvalidArgument("[notify] webhook_attempts must be at least 1 (the first try), got " +
                           std::to_string(options.webhook_attempts));
  }
  if (options.webhook_timeout.count() <= 0) {
    return InvalidArgument("[notify] webhook_timeout must be a positive duration such as \"10s\"");
  }
  if (options.webhook_first_retry.count() <= 0) {
    return InvalidArgument(
        "[notify] webhook_retry_delay must be a positive duration such as \"1s\"");
  }
  std::error_code ec;
  if (!options.ca_file.empty() && !std::filesystem::is_regular_file(options.ca_file, ec)) {
    return InvalidArgument("[notify] ca_file '" + options.ca_file +
                           "' is not a readable file; give the PEM file of the CA that signed "
                           "your webhook server's certificate, or leave it out for the system's");
  }
  return OkStatus();
}

std::string WebhookBody(const Notification& n, const Subscription& sub) {
  nlohmann::json body = {
      {"kind", ToString(n.kind)},
      {"time", FormatRfc3339(n.time)},
      {"job", n.job.has_value() ? nlohmann::json(n.job->value()) : nlohmann::json(nullptr)},
      {"user", n.user},
      {"team", n.team},
      {"node", n.node},
      {"subject", n.subject},
      {"message", n.message},
      {"subscription", sub.id},
  };
  // Invalid UTF-8 (a job name is the user's bytes) is replaced, not thrown on.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Every value from outside (a subject holds a job name, a message a reason) goes through
// EscapeControl: in a header a CR or LF would start a header of the user's (Bcc:), and in
// the text an ESC would act on the terminal of whoever reads the mail there.
std::string EmailMessage(const Notification& n, const Subscription& sub, const std::string& from) {
  std::string text = "From: " + EscapeControl(from) + "\n";
  text += "To: " + EscapeControl(sub.target) + "\n";
  text += "Subject: [gpufleet] " + EscapeControl(n.subject) + "\n";
  text += "Content-Type: text/plain; charset=utf-8\n\n";
  text += EscapeControl(n.message.empty() ? n.subject : n.message);
  text += "\n\nevent: " + std::string(ToString(n.kind)) + "\ntime: " + FormatRfc3339(n.time);
  if (n.job.has_value()) {
    text += "\njob: " + std::to_string(n.job->value());
  }
  for (const auto& [name, value] : {std::pair<const char*, const std::string&>{"user", n.user},
                                    {"team", n.team},
                                    {"node", n.node}}) {
    if (!value.empty()) {
      text += "\n" + std::string(name) + ": " + EscapeControl(value);
    }
  }
  text +=
      "\n\n(subscription " + sub.id + "; remove it with `gpufleet notify remove " + sub.id + "`)\n";
  return text;
}

class Notifier::Impl {
 public:
  Impl(NotifierOptions options, WebhookSender send_webhook)
      : options_(std::move(options)), send_webhook_(std::move(send_webhook)) {
    thread_ = std::thread([this] { Run(); });
  }

  void Send(Notification n, Subscription sub) {
    const NotifyChannel channel = sub.channel;
    {
      std::lock_guard lock(mu_);
      if (!stopping_ && queue_.size() < options_.max_queued) {
        queue_.emplace(std::chrono::steady_clock::now(),
                       Delivery{.notification = std::move(n), .subscription = std::move(sub)});
        cv_.notify_one();
        return;
      }
    }
    spdlog::warn("notify: dropped a {} notification: {}",
                 ToString(channel),
                 Stopping() ? "the notifier is stopping" : "too many queued");
    Count(channel, "dropped");
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        return;
      }
      stopping_ = true;
      drain_until_ = std::chrono::steady_clock::now() + options_.drain_deadline;
      cv_.notify_one();
    }
    thread_.join();
  }

  std::vector<DeliveryCount> Counts() const {
    std::lock_guard lock(counts_mu_);
    std::vector<DeliveryCount> out;
    for (const auto& [key, count] : counts_) {
      out.push_back({.channel = key.first, .outcome = key.second, .count = count});
    }
    return out;
  }

 private:
  bool Stopping() {
    std::lock_guard lock(mu_);
    return stopping_;
  }

  void Count(NotifyChannel channel, const char* outcome) {
    std::lock_guard lock(counts_mu_);
    ++counts_[{std::string(ToString(channel)), outcome}];
  }

  // The delivery thread: the earliest due item, until stopped and drained (or past the
  // drain deadline, when what is left is dropped).
  void Run() {
    std::unique_lock lock(mu_);
    while (true) {
      const SteadyTime now = std::chrono::steady_clock::now();
      if (stopping_ && (queue_.empty() || now >= drain_until_)) {
        break;
      }
      if (queue_.empty() || queue_.begin()->first > now) {
        SteadyTime wake = queue_.empty() ? SteadyTime::max() : queue_.begin()->first;
        if (stopping_) {
          wake = std::min(wake, drain_until_);
        }
        cv_.wait_until(lock, wake);
        continue;
      }
      Delivery item = std::move(queue_.begin()->second);
      queue_.erase(queue_.begin());
      lock.unlock();
      Handle(std::move(item));
      lock.lock();
    }
    for (const auto& [due, item] : queue_) {
      spdlog::warn("notify: dropped {} to {} at shutdown: not delivered within {} ms",
                   ToString(item.notification.kind),
                   item.subscription.target,
                   options_.drain_deadline.count());
      Count(item.subscription.channel, "dropped");
    }
    queue_.clear();
  }

  void Handle(Delivery item) {
    const NotifyChannel channel = item.subscription.channel;
    const Outcome outcome = channel == NotifyChannel::kWebhook ? PostWebhook(item) : Email(item);
    if (outcome == Outcome::kRetry && item.attempt < options_.webhook_attempts) {
      const auto delay = options_.webhook_first_retry * (1LL << std::min(item.attempt - 1, 20));
      ++item.attempt;
      std::lock_guard lock(mu_);
      queue_.emplace(std::chrono::steady_clock::now() + delay, std::move(item));
      return;
    }
    Count(channel, OutcomeName(outcome));
  }

  // The time one attempt may take: the configured timeout, less once draining at shutdown.
  std::chrono::milliseconds AttemptTimeout() {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      return options_.webhook_timeout;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        drain_until_ - std::chrono::steady_clock::now());
    return std::clamp(left, std::chrono::milliseconds(1), options_.webhook_timeout);
  }

  Outcome PostWebhook(const Delivery& item) {
    const Subscription& sub = item.subscription;
    // Judged on the addresses actually connected to: the URL was checked when it was
    // subscribed, but a name may resolve to anything, and to something else by now.
    const std::string host = WebhookUrlHost(sub.target);
    const std::string what = fmt::format("notify: webhook {} ({} of {}, attempt {} of {})",
                                         sub.target,
                                         ToString(item.notification.kind),
                                         sub.id,
                                         item.attempt,
                                         options_.webhook_attempts);
    Result<int> answer =
        send_webhook_(WebhookRequest{.url = sub.target,
                                     .body = WebhookBody(item.notification, sub),
                                     .timeout = AttemptTimeout(),
                                     .ca_file = options_.ca_file,
                                     .allow_address = [this, &host](std::string_view address) {
                                       return options_.webhook_allow.CheckAddress(host, address);
                                     }});
    if (!answer.ok()) {
      spdlog::warn("{}: {}", what, answer.error().message);
      return answer.error().code == ErrorCode::kUnavailable ? Outcome::kRetry : Outcome::kFailed;
    }
    if (*answer >= 200 && *answer < 300) {
      return Outcome::kSent;
    }
    spdlog::warn("{}: answered HTTP {}{}",
                 what,
                 *answer,
                 Retryable(*answer) ? "" : " (not retried: fix the URL or the receiver)");
    return Retryable(*answer) ? Outcome::kRetry : Outcome::kFailed;
  }

  Outcome Email(const Delivery& item) {
    if (::access(options_.sendmail.c_str(), X_OK) != 0) {
      if (!warned_no_sendmail_.exchange(true)) {
        spdlog::warn(
            "notify: no sendmail at {} ({}): e-mail notifications are dropped; install "
            "one (an MTA such as postfix, or msmtp-mta) or set [notify] sendmail",
            options_.sendmail,
            ErrnoText(errno));
      }
      return Outcome::kDropped;
    }
    const std::string message =
        EmailMessage(item.notification, item.subscription, options_.email_from);
    Status sent = RunSendmail(message);
    if (!sent.ok()) {
      spdlog::warn("notify: e-mail to {} ({}): {}",
                   item.subscription.target,
                   ToString(item.notification.kind),
                   sent.error().message);
      return Outcome::kFailed;
    }
    return Outcome::kSent;
  }

  // `sendmail -t -oi` with `message` on stdin; -t takes the recipients from To:, -oi keeps a
  // line holding only "." from ending the message.
  Status RunSendmail(const std::string& message) const {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      return IoError("pipe: " + ErrnoText(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[0], STDIN_FILENO);
    std::string path = options_.sendmail;
    std::string t_flag = "-t";
    std::string oi_flag = "-oi";
    char* argv[] = {path.data(), t_flag.data(), oi_flag.data(), nullptr};
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[0]);
    if (spawned != 0) {
      ::close(pipe_fds[1]);
      return IoError("cannot run " + path + ": " + ErrnoText(spawned));
    }
    std::size_t written = 0;
    while (written < message.size()) {
      const ssize_t n = ::write(pipe_fds[1], message.data() + written, message.size() - written);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        break;  // sendmail exited early: its status says why
      }
      written += static_cast<std::size_t>(n);
    }
    ::close(pipe_fds[1]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return IoError(path + " failed (" +
                     (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                        : "killed by a signal") +
                     ")");
    }
    return OkStatus();
  }

  const NotifierOptions options_;
  const WebhookSender send_webhook_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<SteadyTime, Delivery> queue_;  // REQUIRES: mu_ held. By due time.
  bool stopping_ = false;                      // REQUIRES: mu_ held
  SteadyTime drain_until_{};                   // REQUIRES: mu_ held; set with stopping_
  mutable std::mutex counts_mu_;
  std::map<std::pair<std::string, std::string>, std::int64_t> counts_;  // REQUIRES: counts_mu_
  std::atomic<bool> warned_no_sendmail_{false};
  std::thread thread_;  // last: starts after the members it uses exist
};

Notifier::Notifier(NotifierOptions options, WebhookSender send_webhook)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(send_webhook))) {}
Notifier::~Notifier() {
  Stop();
}
void Notifier::Send(Notification notification, Subscription subscription) {
  impl_->Send(std::move(notification), std::move(subscription));
}
void Notifier::Stop() {
  impl_->Stop();
}
std::vector<DeliveryCount> Notifier::Counts() const {
  return impl_->Counts();
}

}  // namespace gf
