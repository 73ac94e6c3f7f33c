#include "api/web_assets.h"

#include <string>

namespace gf {

// 'self' only: the bundle is served from here, and its fetches go to this origin's /api/v1.
// Scripts and styles come from files (no inline <script>, no style attributes in markup;
// uPlot and preact set styles through the CSSOM, which style-src does not govern).
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

std::optional<HttpResponse> ServeWebAsset(const HttpRequest& request) {
  if (request.method != "GET") {
    return std::nullopt;
  }
  const std::string_view target = request.target;
  const std::string_view path = target.substr(0, target.find('?'));
  for (const WebAsset& asset : WebAssets()) {
    if (asset.path != path) {
      continue;
    }
    HttpResponse response;
    response.headers = {
        {"Content-Type", std::string(asset.content_type)},
        {"Content-Security-Policy", std::string(kContentSecurityPolicy)},
        {"X-Content-Type-Options", "nosniff"},
        {"X-Frame-Options", "DENY"},
        {"Referrer-Policy", "no-referrer"},
        {"Cache-Control", "no-cache"},
    };
    response.body = std::string(asset.body);
    return response;
  }
  return std::nullopt;
}

}  // namespace gf
