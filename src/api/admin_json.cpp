#include "api/admin_json.h"

#include <algorithm>
#include <set>

#include "api/json_mapping.h"
#include "core/duration.h"

namespace gf {
namespace {

using json = nlohmann::json;

Status OnlyFields(const json& body, const std::set<std::string>& known, std::string_view what) {
  if (!body.is_object()) {
    return InvalidArgument(std::string(what) + ": the body must be a JSON object");
  }
  for (const auto& [key, value] : body.items()) {
    if (!known.contains(key)) {
      return InvalidArgument(key + ": unknown field of " + std::string(what));
    }
  }
  return OkStatus();
}

Result<std::string> StringField(const json& body, const std::string& name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) {
    return std::string();
  }
  if (!it->is_string()) {
    return InvalidArgument(name + ": must be a string");
  }
  GF_TRY(NoNulByte(name, it->get_ref<const std::string&>()));
  return it->get<std::string>();
}

json OptionalMs(const std::optional<Time>& t) {
  return t ? json(ToUnixMillis(*t)) : json();
}

}  // namespace

json ApiTokenToJson(const ApiToken& t) {
  return json{{"id", t.id},
              {"kind", ToString(t.kind)},
              {"user", t.kind == TokenKind::kUser ? json(t.subject) : json()},
              {"node", t.kind == TokenKind::kNode ? json(t.subject) : json()},
              {"uid", t.kind == TokenKind::kUser ? json(t.uid) : json()},
              {"role", t.kind == TokenKind::kUser ? json(ToString(t.role)) : json()},
              {"description", t.description},
              {"created_ms", ToUnixMillis(t.created)},
              {"expires_ms", OptionalMs(t.expires)},
              {"revoked_ms", OptionalMs(t.revoked)}};
}

json IssuedTokenToJson(const IssuedToken& issued) {
  json out = ApiTokenToJson(issued.token);
  out["token"] = issued.text;
  return out;
}

Result<TokenRequest> TokenRequestFromJson(const json& body) {
  GF_TRY(OnlyFields(body, {"kind", "user", "node", "role", "description", "expires"}, "a token"));
  TokenRequest request;
  GF_ASSIGN_OR_RETURN(std::string kind, StringField(body, "kind"));
  GF_ASSIGN_OR_RETURN(request.kind, ParseTokenKind(kind.empty() ? "user" : kind));
  GF_ASSIGN_OR_RETURN(std::string user, StringField(body, "user"));
  GF_ASSIGN_OR_RETURN(std::string node, StringField(body, "node"));
  if (request.kind == TokenKind::kUser && !node.empty()) {
    return InvalidArgument("node: only for node tokens (kind \"node\")");
  }
  if (request.kind == TokenKind::kNode && !user.empty()) {
    return InvalidArgument("user: only for user tokens (kind \"user\")");
  }
  request.subject = request.kind == TokenKind::kUser ? user : node;
  GF_ASSIGN_OR_RETURN(std::string role, StringField(body, "role"));
  if (!role.empty()) {
    GF_ASSIGN_OR_RETURN(request.role, ParseRole(role));
  }
  GF_ASSIGN_OR_RETURN(request.description, StringField(body, "description"));
  GF_ASSIGN_OR_RETURN(std::string expires, StringField(body, "expires"));
  if (!expires.empty()) {
    Result<std::chrono::seconds> d = ParseDuration(expires);
    if (!d.ok()) {
      return InvalidArgument("expires: '" + expires + "' is not a duration (e.g. 90d, 12h)");
    }
    request.expires_in = *d;
  }
  return request;
}

Result<std::string> DrainReasonFromJson(const json& body) {
  GF_TRY(OnlyFields(body, {"reason"}, "a drain"));
  return StringField(body, "reason");
}

json SubscriptionToJson(const Subscription& sub) {
  json events = json::array();
  for (const NotifyKind kind : sub.kinds) {
    events.push_back(ToString(kind));
  }
  return json{{"id", sub.id},
              {"owner", sub.owner},
              {"scope", ToString(sub.scope)},
              {"team", sub.scope == SubscriptionScope::kTeam ? json(sub.team) : json()},
              {"job", sub.job ? json(sub.job->value()) : json()},
              {"channel", ToString(sub.channel)},
              {"target", sub.target},
              {"events", std::move(events)},
              {"created", FormatRfc3339(sub.created)},
              {"created_ms", ToUnixMillis(sub.created)}};
}

Result<Subscription> SubscriptionFromJson(const json& body) {
  GF_TRY(
      OnlyFields(body, {"scope", "team", "job", "channel", "target", "events"}, "a subscription"));
  Subscription sub;
  GF_ASSIGN_OR_RETURN(const std::string scope, StringField(body, "scope"));
  if (!scope.empty()) {
    GF_ASSIGN_OR_RETURN(sub.scope, ParseSubscriptionScope(scope));
  }
  GF_ASSIGN_OR_RETURN(sub.team, StringField(body, "team"));
  if (sub.scope == SubscriptionScope::kTeam && sub.team.empty()) {
    return InvalidArgument("team: a team subscription (scope \"team\") must name its team");
  }
  if (auto job = body.find("job"); job != body.end() && !job->is_null()) {
    if (!job->is_number_integer() || job->get<std::int64_t>() <= 0) {
      return InvalidArgument("job: must be a job id (a positive whole number)");
    }
    sub.job = JobId(job->get<std::int64_t>());
  }
  if (sub.scope == SubscriptionScope::kJob && !sub.job) {
    return InvalidArgument("job: a job subscription (scope \"job\") must name its job");
  }
  GF_ASSIGN_OR_RETURN(const std::string channel, StringField(body, "channel"));
  if (channel.empty()) {
    return InvalidArgument("channel: required, \"webhook\" or \"email\"");
  }
  GF_ASSIGN_OR_RETURN(sub.channel, ParseNotifyChannel(channel));
  GF_ASSIGN_OR_RETURN(sub.target, StringField(body, "target"));
  if (sub.target.empty()) {
    return InvalidArgument("target: required, the webhook URL or the e-mail address");
  }
  auto events = body.find("events");
  if (events != body.end() && !events->is_null()) {
    if (!events->is_array()) {
      return InvalidArgument("events: must be a list of event names, e.g. [\"job_end\"]");
    }
    for (const json& name : *events) {
      if (!name.is_string()) {
        return InvalidArgument("events: must be a list of event names, e.g. [\"job_end\"]");
      }
      Result<NotifyKind> kind = ParseNotifyKind(name.get<std::string>());
      if (!kind.ok()) {
        return InvalidArgument("events: " + kind.error().message);
      }
      if (std::find(sub.kinds.begin(), sub.kinds.end(), *kind) == sub.kinds.end()) {
        sub.kinds.push_back(*kind);
      }
    }
  }
  return sub;
}

}  // namespace gf
