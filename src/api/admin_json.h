// JSON of the administration routes (issue #6): tokens and node drain.
//   POST /api/v1/tokens   {"kind": "user"|"node", "user": "alice" (user tokens),
//                          "node": "gpu01" (node tokens, optional), "role": "user"|"operator"|
//                          "admin", "description": "...", "expires": "90d" | null}
//   → 201 {"token": "gft_...", and the stored token's fields}
//   POST /api/v1/nodes/{name}/drain {"reason": "bad fan"}
// Readers are strict (unknown fields are errors naming them, as for submissions). Pure.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "service/service.h"

namespace gf {

// A token as `gpufleet token list` shows it: never the secret, never its hash.
nlohmann::json ApiTokenToJson(const ApiToken& token);
nlohmann::json IssuedTokenToJson(const IssuedToken& issued);  // with "token": the text
Result<TokenRequest> TokenRequestFromJson(const nlohmann::json& body);
Result<std::string> DrainReasonFromJson(const nlohmann::json& body);

// Notification subscriptions (issue #8):
//   POST /api/v1/subscriptions {"scope": "user"|"team"|"cluster" (default user), "team": "cv"
//                               (scope team), "channel": "webhook"|"email", "target": URL or
//                               address, "events": ["job_end", ...] (absent or []: every one)}
//   → 201 the subscription: those fields and "id", "owner", "created" (RFC 3339), "created_ms"
nlohmann::json SubscriptionToJson(const Subscription& sub);
Result<Subscription> SubscriptionFromJson(const nlohmann::json& body);

}  // namespace gf
