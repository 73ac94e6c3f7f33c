// Notifier: delivers notifications (model/notification.h) to their subscriptions, by webhook
// (an HTTP POST of a JSON body, retried) or e-mail (the local sendmail), on its own thread.
//
// The controller matches a Notification to the Subscriptions that want it and calls Send()
// for each match once the turn that raised it is durable; Send() only queues, so a slow or
// dead webhook never delays the state thread. One delivery thread works the queue in order
// of due time: an attempt that failed for a reason that may pass (connection refused or
// lost, timeout, 5xx, 408, 429) goes back with a due time of first_retry × 2^(attempt - 1),
// and other items are sent meanwhile. Every delivery ends counted as "sent", "failed" (the
// receiver refused it, or every attempt failed) or "dropped" (queue full, no sendmail, still
// queued when Stop's deadline passed), by channel: Counts() feeds /metrics.
//
// The HTTP client is injected (WebhookSender; the daemon passes api/webhook_sender.h's
// SendWebhook), so that this module, and the controller that uses it, depend on no HTTP library.
//
// Thread-safety: Send, Counts and Stop may be called from any thread. Owns its thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/notification.h"
#include "model/webhook_allow.h"

namespace gf {

struct NotifierOptions {
  std::string email_from = "gpufleet";                // the From: of e-mails
  std::string sendmail = "/usr/sbin/sendmail";        // run as `SENDMAIL -t -oi`, message on stdin
  int webhook_attempts = 5;                           // >= 1; the first try included
  std::chrono::milliseconds webhook_timeout{10'000};  // per attempt: connect, send, answer
  std::chrono::milliseconds webhook_first_retry{1'000};  // doubles after each failed attempt
  std::string ca_file{};  // PEM CAs for https webhooks; "" = the system's CAs
  // [notify] webhook_allow: the loopback, link-local and unspecified addresses a webhook may
  // reach (none by default). Every address a webhook's host resolves to is checked, and only
  // those allowed are connected to; a webhook with none is "failed", not retried.
  WebhookAllowList webhook_allow{};
  std::chrono::milliseconds drain_deadline{5'000};  // how long Stop() keeps delivering
  std::size_t max_queued = 10'000;                  // beyond: dropped (and counted)
};

// Deliveries since start by channel ("webhook", "email") and outcome ("sent", "failed",
// "dropped"); pairs with no delivery are absent.
struct DeliveryCount {
  std::string channel{};
  std::string outcome{};
  std::int64_t count = 0;
};

// One webhook attempt, as the Notifier asks its HTTP client for it: POST `body` as
// application/json to `url` (http or https; CheckSubscriptionTarget passed) within `timeout`,
// https trusting `ca_file` ("" = the system's CAs), connecting only to the addresses
// `allow_address` accepts (every address the host resolves to is asked; a refusal says why).
struct WebhookRequest {
  std::string url{};
  std::string body{};
  std::chrono::milliseconds timeout{};
  std::string ca_file{};
  std::function<Status(std::string_view address)> allow_address{};
};
// Makes one attempt. Returns the answer's HTTP status; kUnavailable when no answer came (no
// connection, connection lost, timed out: worth another attempt); any other error when the
// request cannot be made at all (not retried). Its message names what went wrong.
using WebhookSender = std::function<Result<int>(const WebhookRequest& request)>;

// Checks what Notifier needs before it starts: attempts >= 1, timeouts > 0, a CA file that
// exists. Errors: kInvalidArgument naming the [notify] key and the fix.
Status ValidateNotifierOptions(const NotifierOptions& options);

// The JSON body of a webhook POST: kind, time (RFC 3339 UTC), job (number or null), user, team,
// node, subject, message, subscription (its id).
std::string WebhookBody(const Notification& notification, const Subscription& subscription);
// The e-mail sendmail reads: From, To, Subject headers, a blank line, the text.
std::string EmailMessage(const Notification& notification,
                         const Subscription& subscription,
                         const std::string& from);

class Notifier {
 public:
  // `send_webhook`: the HTTP client of webhook deliveries (api/webhook_sender.h SendWebhook).
  Notifier(NotifierOptions options, WebhookSender send_webhook);
  ~Notifier();  // Stop()
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Queues one delivery and returns at once. After Stop(), counts it dropped.
  void Send(Notification notification, Subscription subscription);
  // Stops taking new work, delivers what is queued until drain_deadline (retries included,
  // if due before it), drops the rest, and joins the thread. Idempotent.
  void Stop();
  std::vector<DeliveryCount> Counts() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gf
