#include "api/webhook_sender.h"

#include <string>
#include <string_view>
#include <utility>

#include "api/api_client.h"

namespace gf {
namespace {

// A webhook URL split for ApiClient: "scheme://host:port" (the port made explicit) and the
// request target ("/path?query", "/" when none).
struct WebhookUrl {
  std::string endpoint;
  std::string target;
};

// Requires CheckSubscriptionTarget(kWebhook, url) to have passed (the controller checks it).
WebhookUrl SplitWebhookUrl(std::string_view url) {
  const bool https = url.starts_with("https://");
  url.remove_prefix(https ? 8 : 7);
  const std::size_t slash = url.find_first_of("/?");
  std::string authority(url.substr(0, slash));
  std::string target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  if (target.front() == '?') {
    target.insert(0, "/");
  }
  // A port is the text after the last ':' unless that ':' is inside an IPv6 literal.
  const std::size_t colon = authority.rfind(':');
  const std::size_t bracket = authority.rfind(']');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) {
    authority += https ? ":443" : ":80";
  }
  return {.endpoint = (https ? "https://" : "http://") + authority, .target = std::move(target)};
}

}  // namespace

Result<int> SendWebhook(const WebhookRequest& request) {
  const WebhookUrl url = SplitWebhookUrl(request.url);
  ApiClient client(url.endpoint,
                   ApiClientOptions{.timeout = request.timeout,
                                    .ca_file = request.ca_file,
                                    .allow_address = request.allow_address});
  GF_ASSIGN_OR_RETURN(
      HttpResponse answer,
      client.Call("POST", url.target, request.body, {{"Content-Type", "application/json"}}));
  return answer.status;
}

}  // namespace gf
