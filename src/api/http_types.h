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
