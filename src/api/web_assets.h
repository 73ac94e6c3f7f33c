// The web dashboard's files (web/, docs/dashboard.md), embedded into the binary at build time,
// and how the server answers a GET for one.
//
// WebAssets() is defined by a source the build generates from the dashboard's bundle
// (web/embed.py → gf_web_assets): index.html at "/", app.js, app.css and favicon.svg. With
// -DGF_WEB=OFF it holds one page at "/" saying the dashboard was not built.
//
// Static, immutable data: safe from any thread.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "api/http_types.h"

namespace gf {

struct WebAsset {
  std::string_view path;          // "/", "/app.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view body;
};

// Every embedded file (generated; gf_web_assets).
std::span<const WebAsset> WebAssets();

// A GET of an embedded file's path (any query ignored): 200 with the file, its content type,
// and the headers that make the page safe to serve — a Content-Security-Policy allowing only
// this origin's scripts, styles and fetches (no inline script, nothing from elsewhere),
// X-Content-Type-Options: nosniff, no framing, no referrer, and Cache-Control: no-cache (a
// new gpufleet serves a new bundle at the same path). nullopt for anything else (the API's
// routes answer it). No identity is needed: the files hold no data; the API checks every call.
std::optional<HttpResponse> ServeWebAsset(const HttpRequest& request);

}  // namespace gf
