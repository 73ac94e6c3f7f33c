// API and node tokens (issue #6): making them, and checking the ones callers present.
//
// A token reads "gft_<id>_<secret>": the id (12 characters of [a-z0-9]) finds the stored
// ApiToken (model/token.h); the secret (64 hex digits, 256 random bits from OpenSSL's CSPRNG)
// is checked against the stored SHA-256 of it, in constant time. Only the hash is stored, so a
// copy of the database gives nobody a working token; the secret is shown once, at creation.
// A fast hash is right here (unlike for passwords): the secret is random, not guessable.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controller/authorization.h"
#include "core/clock.h"
#include "core/result.h"
#include "model/token.h"
#include "service/service.h"

namespace gf {

// Makes a token for `request`; uid/gid are the user's (user tokens). Errors: kInternal if the
// system's random generator fails.
Result<IssuedToken> MakeToken(const TokenRequest& request,
                              std::uint32_t uid,
                              std::uint32_t gid,
                              Time now);

// The lowercase hex SHA-256 of `secret`.
std::string Sha256Hex(std::string_view secret);

// What `token list` and `token revoke` show of a token: everything but the hash.
ApiToken Listed(ApiToken token);

// Whose token it is for authorization.h: the caller's own when it is a user token acting as
// the caller, else another's.
Ownership WhoseToken(const Caller& caller, const ApiToken& token);

// The stored tokens, in memory, for checking callers on API worker threads. Thread-safe.
class TokenRegistry {
 public:
  void Load(std::vector<ApiToken> tokens);
  void Put(const ApiToken& token);  // added or replaced by id

  // The Caller a token stands for: a user token → that user, authenticated, with its role; a
  // node token → a node caller (Caller::node). Errors: kPermissionDenied with a message that
  // says what is wrong (malformed, unknown, revoked, expired) but never echoes the secret.
  Result<Caller> Authenticate(std::string_view text, Time now) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, ApiToken> tokens_;  // GUARDED_BY(mu_): by id
};

}  // namespace gf
