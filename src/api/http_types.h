// HttpRequest / HttpResponse: plain HTTP messages shared by the router, the server and the
// client, so that none of their headers needs Boost.Beast (it compiles slowly; only
// the server's api_server.cpp, api_session.cpp, api_streams.cpp and api_client.cpp include it).
//
// Plain value types; thread-safety is that of std::string.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gf {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// The product version: reported by /api/v1/health, sent as the client's User-Agent and the
// server's Server header. Here, not in routes.cpp, so that the client (api_client.cpp) does not
// link the server's route table, and with it the dashboard and the metrics renderer.
std::string_view ApiVersion();

// Case-insensitive lookup of the first header named `name`.
std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name);

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // origin form: "/api/v1/jobs?all=1"
  HttpHeaders headers;
  std::string body;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;  // Content-Type among them; Content-Length is added by the transport
  std::string body;

  std::optional<std::string> Header(std::string_view name) const {
    return FindHeader(headers, name);
  }
};

}  // namespace gf
