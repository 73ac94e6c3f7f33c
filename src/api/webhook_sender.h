// SendWebhook: the Notifier's webhook attempts (notify/notifier.h WebhookSender) made with
// ApiClient, gpufleet's HTTP client. It lives here, not in notify/, so that the notifier and the
// controller that owns it link no HTTP library (Boost.Beast, OpenSSL): the daemon injects it.
#pragma once

#include "core/result.h"
#include "notify/notifier.h"

namespace gf {

// One POST of request.body to request.url (see WebhookRequest). Errors as WebhookSender says;
// ApiClient's error messages are passed on as they are.
Result<int> SendWebhook(const WebhookRequest& request);

}  // namespace gf
