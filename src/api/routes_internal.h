// Internal to gf_api: what the route handlers of routes.cpp share with those of
// admin_routes.cpp (administration and the agent link): a request's context, the helpers
// every handler answers or reads with, and admin_routes.cpp's handlers for the route table.
// Include it from those two alone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/routes.h"

namespace gf {

struct RequestContext {
  const Caller& caller;
  const HttpRequest& request;
  std::map<std::string, std::string> params;  // from the path template
  std::map<std::string, std::string> query;
  const Telemetry* telemetry;           // for /metrics; may be null
  const ClusterSeries* cluster_series;  // for /api/v1/cluster/series; may be null
  AgentLinkService* agent_link;         // for /api/v1/agent/*; null: no remote agents (gpufleet up)
  JobRowCache& rows;                    // GET /jobs' rendered rows (the Router's)
};

HttpResponse JsonResponse(int status, const nlohmann::json& body);
// An answer whose JSON text the handler wrote itself (`text`, compact, without the newline).
HttpResponse JsonTextResponse(int status, std::string text);
Result<std::int64_t> ParseInt(std::string_view name,
                              std::string_view text,
                              std::int64_t min,
                              std::int64_t max,
                              std::string_view what);
std::optional<std::string> QueryValue(const RequestContext& ctx, const std::string& name);
// Any local user can send a body to the root daemon: it is read with the depth limit and
// without duplicate keys (json/json_text.h), so nothing recursive ever sees a deep value.
Result<nlohmann::json> JsonBody(const RequestContext& ctx);

// cluster_series_route.cpp
Result<HttpResponse> ClusterSeriesRoute(ClusterService&, const RequestContext& ctx);

// admin_routes.cpp
Result<HttpResponse> CreateToken(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> ListTokens(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> RevokeToken(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> CreateSubscription(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> ListSubscriptions(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> DeleteSubscription(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> DrainNode(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> ResumeNode(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> ResumeGpu(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> SetGpuMode(ClusterService& service, const RequestContext& ctx);
Result<HttpResponse> SetMigLayout(ClusterService& service, const RequestContext& ctx);
Result<AgentLinkService*> AgentLink(const RequestContext& ctx);
Result<std::int64_t> SessionParam(const RequestContext& ctx);
Result<HttpResponse> AgentHelloRoute(ClusterService&, const RequestContext& ctx);
Result<HttpResponse> AgentReportsRoute(ClusterService&, const RequestContext& ctx);
Result<HttpResponse> AgentLogsRoute(ClusterService&, const RequestContext& ctx);
Result<HttpResponse> AgentCommandsRoute(ClusterService&, const RequestContext& ctx);

}  // namespace gf
