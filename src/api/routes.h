// Router: the /api/v1 route table (and GET /metrics) and its handlers, independent of any
// transport.
//
// The server parses HTTP, learns the Caller from the connection, and hands the request here;
// tests call Handle() directly. This file (routes.cpp) is the only place that maps ErrorCode
// to an HTTP status, in one table.
//
// Ownership: a Router borrows the ClusterService and the Telemetry (optional), which must
// outlive it, and owns the cache of GET /jobs' rendered rows (job_rows.h).
// Thread-safety: Handle() is const and may run on many worker threads at once; it blocks for
// as long as the ClusterService call it makes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "api/http_types.h"
#include "api/job_rows.h"
#include "core/result.h"
#include "service/agent_link.h"
#include "service/service.h"

namespace gf {

class ClusterSeries;
class Telemetry;

// Bounds on what one request may ask for.
inline constexpr std::size_t kMaxRequestBodyBytes = 1 << 20;    // 1 MiB
inline constexpr std::int64_t kDefaultLogChunkBytes = 1 << 20;  // 1 MiB
inline constexpr std::int64_t kMaxLogChunkBytes = 8 << 20;      // 8 MiB

struct RouteInfo {
  std::string_view method;  // "GET"
  std::string_view path;    // template, e.g. "/api/v1/jobs/{id}"
  bool requires_identity;   // job routes: only callers known by SO_PEERCRED (or, later, token)
};

// Every route the server answers, in table order (the OpenAPI test compares against it).
std::span<const RouteInfo> RouteTable();

// The single ErrorCode → HTTP status table. kResourceExhausted maps to 429 (a bound on the
// system was hit); the transport answers 413 itself when a request body is too large.
int HttpStatusFor(ErrorCode code);
// The reverse, for clients reading a response whose body names no known code.
ErrorCode ErrorCodeForHttpStatus(int status);

// A JSON error response: {"error": {"code", "message"}} with Content-Type set.
HttpResponse ErrorResponse(const Error& error);
// For transport-level answers whose status the table cannot know (400 malformed HTTP,
// 401, 405, 413): `code_name` is the JSON code, e.g. "resource_exhausted".
HttpResponse ErrorResponse(int status, std::string_view code_name, std::string_view message);

class Router {
 public:
  // `telemetry` feeds the GPU families of GET /metrics; without one (tests) they are empty.
  // `agent_link` serves /api/v1/agent/* (gpufleet server); without one they answer 404.
  // `cluster_series` serves GET /api/v1/cluster/series; without one it answers 503.
  explicit Router(ClusterService& service,
                  const Telemetry* telemetry = nullptr,
                  AgentLinkService* agent_link = nullptr,
                  const ClusterSeries* cluster_series = nullptr)
      : service_(service),
        telemetry_(telemetry),
        agent_link_(agent_link),
        cluster_series_(cluster_series),
        rows_(std::make_shared<JobRowCache>()) {}

  // Routes and answers one request. Never throws: library exceptions become a 500.
  HttpResponse Handle(const Caller& caller, const HttpRequest& request) const;

  // The server-sent event name ("jobs", "gpus", "nodes") when `request` asks to watch a list
  // (GET /api/v1/{jobs,gpus,nodes} with watch=1 or true), nullopt otherwise (a bad watch value
  // too: Handle answers that with 400). The transport then streams: on each tick it calls
  // Handle() with the same request, which answers the plain list (or the error) as usual.
  std::optional<std::string_view> WatchEvent(const HttpRequest& request) const;

  // GET /api/v1/agent/commands is always a stream: the transport asks IsCommandStream, then
  // (on a worker, with the caller) OpenCommandStream, and serves what the stream gives, each
  // command an event "command" with AgentCommandToJson as its data; or answers the error.
  bool IsCommandStream(const HttpRequest& request) const;
  Result<std::shared_ptr<CommandStream>> OpenCommandStream(const Caller& caller,
                                                           const HttpRequest& request) const;

 private:
  ClusterService& service_;
  const Telemetry* telemetry_;
  AgentLinkService* agent_link_;
  const ClusterSeries* cluster_series_;
  // GET /jobs' rows, kept between requests (job_rows.h); shared by copies of this Router.
  std::shared_ptr<JobRowCache> rows_;
};

}  // namespace gf
