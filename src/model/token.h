// ApiToken: a credential for the API over TCP (issue #6). A user token acts as one Unix user
// with a role; a node token lets a node agent join the server. Only a hash of the secret is
// kept: the secret is shown once, when the token is created.
// Plain value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"
#include "model/team.h"

namespace gf {

// Role (model/team.h, with ToString and ParseRole): what a user may do beyond their own jobs.
// user: their own jobs only; operator: every job and the nodes (drain, resume); admin:
// everything, tokens included.

enum class TokenKind { kUser, kNode };
std::string_view ToString(TokenKind k);  // "user", "node"
Result<TokenKind> ParseTokenKind(std::string_view s);

struct ApiToken {
  std::string id{};           // the public part of the token, unique: [a-z0-9]{1,32}
  std::string secret_hash{};  // lowercase hex SHA-256 of the secret part
  TokenKind kind = TokenKind::kUser;
  // User token: the login name it acts as. Node token: the node name it may register, or ""
  // for a join token that any one node may use.
  std::string subject{};
  std::uint32_t uid = 0;  // user token: the Unix uid it acts as (jobs run as this uid)
  std::uint32_t gid = 0;
  Role role = Role::kUser;    // user token only
  std::string description{};  // free text, shown by `gpufleet token list`
  Time created{};
  std::optional<Time> expires{};  // none = does not expire
  std::optional<Time> revoked{};  // set by `gpufleet token revoke`; a revoked token is refused
  bool operator==(const ApiToken&) const = default;
};

}  // namespace gf
