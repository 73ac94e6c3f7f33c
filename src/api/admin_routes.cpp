// The administration routes (tokens, node drain and resume, GPU modes and MIG layouts,
// notification subscriptions) and the agent link's routes (`gpufleet server` only). Apart
// from the job, node and GPU routes (routes.cpp): they serve operators and agents, not users.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/admin_json.h"
#include "api/agent_wire.h"
#include "api/json_mapping.h"
#include "api/routes_internal.h"

namespace gf {

using nlohmann::json;

// ---- Administration: tokens and node drain (issue #6) ----

Result<HttpResponse> CreateToken(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(TokenRequest request, TokenRequestFromJson(body));
  GF_ASSIGN_OR_RETURN(const IssuedToken issued,
                      service.CreateToken(ctx.caller, std::move(request)));
  HttpResponse response = JsonResponse(201, IssuedTokenToJson(issued));
  response.headers.emplace_back("Cache-Control", "no-store");  // it carries a secret
  return response;
}

Result<HttpResponse> ListTokens(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const auto tokens, service.ListTokens(ctx.caller));
  json out = json::array();
  for (const auto& t : tokens) {
    out.push_back(ApiTokenToJson(t));
  }
  return JsonResponse(200, json{{"tokens", std::move(out)}});
}

Result<HttpResponse> RevokeToken(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const ApiToken token, service.RevokeToken(ctx.caller, ctx.params.at("id")));
  return JsonResponse(200, ApiTokenToJson(token));
}

// ---- Notification subscriptions (issue #8) ----

Result<HttpResponse> CreateSubscription(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(Subscription request, SubscriptionFromJson(body));
  GF_ASSIGN_OR_RETURN(const Subscription sub,
                      service.CreateSubscription(ctx.caller, std::move(request)));
  return JsonResponse(201, SubscriptionToJson(sub));
}

Result<HttpResponse> ListSubscriptions(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const auto subs, service.ListSubscriptions(ctx.caller));
  json out = json::array();
  for (const auto& sub : subs) {
    out.push_back(SubscriptionToJson(sub));
  }
  return JsonResponse(200, json{{"subscriptions", std::move(out)}});
}

Result<HttpResponse> DeleteSubscription(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const Subscription sub,
                      service.DeleteSubscription(ctx.caller, ctx.params.at("id")));
  return JsonResponse(200, SubscriptionToJson(sub));
}

Result<HttpResponse> DrainNode(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(std::string reason, DrainReasonFromJson(body));
  GF_ASSIGN_OR_RETURN(
      const Node node,
      service.DrainNode(ctx.caller, NodeId(ctx.params.at("name")), std::move(reason)));
  return JsonResponse(200, NodeToJson(node));
}

Result<HttpResponse> ResumeNode(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const Node node,
                      service.ResumeNode(ctx.caller, NodeId(ctx.params.at("name"))));
  return JsonResponse(200, NodeToJson(node));
}

Result<HttpResponse> ResumeGpu(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(
      const Gpu gpu,
      service.ResumeGpu(ctx.caller, NodeId(ctx.params.at("name")), ctx.params.at("gpu")));
  return JsonResponse(200, GpuToJson(gpu));
}

Result<HttpResponse> SetGpuMode(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  const auto mode = body.find("mode");
  if (mode == body.end() || !mode->is_string()) {
    return InvalidArgument("mode: give the sharing mode as a string: exclusive, shared or mps");
  }
  GF_ASSIGN_OR_RETURN(const Gpu gpu,
                      service.SetGpuMode(ctx.caller,
                                         NodeId(ctx.params.at("name")),
                                         ctx.params.at("gpu"),
                                         mode->get<std::string>()));
  return JsonResponse(200, GpuToJson(gpu));
}

Result<HttpResponse> SetMigLayout(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  const auto layout = body.find("layout");
  if (layout == body.end() || !layout->is_string()) {
    return InvalidArgument(
        "layout: give the MIG devices as a string, e.g. \"3g.40gb,3g.40gb\" "
        "(\"none\" for none)");
  }
  GF_ASSIGN_OR_RETURN(const Gpu gpu,
                      service.SetMigLayout(ctx.caller,
                                           NodeId(ctx.params.at("name")),
                                           ctx.params.at("gpu"),
                                           layout->get<std::string>()));
  return JsonResponse(200, GpuToJson(gpu));
}

// ---- The agent link (service/agent_link.h), for `gpufleet server` only ----

Result<AgentLinkService*> AgentLink(const RequestContext& ctx) {
  if (ctx.agent_link == nullptr) {
    return NotFound(
        "this gpufleet takes no remote agents (gpufleet up runs its own); start "
        "`gpufleet server` for a cluster");
  }
  return ctx.agent_link;
}

Result<std::int64_t> SessionParam(const RequestContext& ctx) {
  const std::optional<std::string> session = QueryValue(ctx, "session");
  if (!session) {
    return InvalidArgument("session: missing; give the session the hello answered");
  }
  return ParseInt("session", *session, 1, INT64_MAX, "a positive whole number");
}

Result<HttpResponse> AgentHelloRoute(ClusterService&, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(AgentLinkService * link, AgentLink(ctx));
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(AgentHello hello, AgentHelloFromJson(body));
  GF_ASSIGN_OR_RETURN(const AgentSession session, link->Hello(ctx.caller, std::move(hello)));
  return JsonResponse(200, AgentSessionToJson(session));
}

Result<HttpResponse> AgentReportsRoute(ClusterService&, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(AgentLinkService * link, AgentLink(ctx));
  GF_ASSIGN_OR_RETURN(const std::int64_t session, SessionParam(ctx));
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(AgentReportBatch batch, AgentReportBatchFromJson(body));
  GF_TRY(link->Report(ctx.caller, session, std::move(batch)));
  return JsonResponse(200, json{{"ok", true}});
}

// The agent's answer to a read_log command; the hub hands it to the read that waits for it.
Result<HttpResponse> AgentLogsRoute(ClusterService&, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(AgentLinkService * link, AgentLink(ctx));
  GF_ASSIGN_OR_RETURN(const std::int64_t session, SessionParam(ctx));
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(AgentLogReply reply, AgentLogReplyFromJson(body));
  GF_TRY(link->LogReply(ctx.caller, session, std::move(reply)));
  return JsonResponse(200, json{{"ok", true}});
}

// Served as a stream by the transport (Router::OpenCommandStream); Handle() alone (a transport
// without streams) can only say so.
Result<HttpResponse> AgentCommandsRoute(ClusterService&, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(AgentLinkService * link, AgentLink(ctx));
  (void)link;
  return InvalidArgument(
      "GET /api/v1/agent/commands is a stream of server-sent events, "
      "served by the HTTP server only");
}

}  // namespace gf
