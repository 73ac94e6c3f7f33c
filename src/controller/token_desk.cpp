// TokenDesk (token_desk.h): API and node tokens issued, revoked and loaded.
#include "controller/token_desk.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pwd.h>

#include "controller/authorization.h"

namespace gf {
namespace {

constexpr std::size_t kMaxDescription = 200;

// The Unix account a user token acts as: its jobs run with this uid and gid on the nodes.
Result<Owner> UnixUser(const std::string& name) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return InvalidArgument("user: no user '" + name +
                           "' on this server; a token acts as a Unix user known here (its jobs "
                           "run as that user on the nodes)");
  }
  return Owner{.uid = found->pw_uid, .gid = found->pw_gid, .user = name};
}

Status CheckTokenRequest(const TokenRequest& request) {
  if (request.kind == TokenKind::kUser && request.subject.empty()) {
    return InvalidArgument("user: missing; name the user the token acts as (--user NAME)");
  }
  if (request.kind == TokenKind::kNode && request.role != Role::kUser) {
    return InvalidArgument("role: a node token has no role; it may only act as its node");
  }
  if (request.description.size() > kMaxDescription) {
    return InvalidArgument("description: longer than " + std::to_string(kMaxDescription) +
                           " characters");
  }
  if (request.expires_in && request.expires_in->count() <= 0) {
    return InvalidArgument("expires: must be a positive duration (e.g. 90d), or none");
  }
  if (request.kind == TokenKind::kNode && !request.subject.empty()) {
    GF_TRY(ValidateLabel("node", request.subject, "node"));  // a node name is label-shaped
  }
  return OkStatus();
}

}  // namespace

Status TokenDesk::Load(StoreReader& store) {
  GF_ASSIGN_OR_RETURN(std::vector<ApiToken> tokens, store.ListTokens());
  registry_.Load(std::move(tokens));
  return OkStatus();
}

Result<IssuedToken> TokenDesk::Make(const TokenRequest& request, Time now) {
  GF_TRY(CheckTokenRequest(request));
  Owner owner;
  if (request.kind == TokenKind::kUser) {
    GF_ASSIGN_OR_RETURN(owner, UnixUser(request.subject));
  }
  return MakeToken(request, owner.uid, owner.gid, now);
}

IssuedToken TokenDesk::Issue(const Caller& caller, IssuedToken issued) {
  p_.out.batch.tokens.push_back(issued.token);
  const ApiToken& t = issued.token;
  p_.jobs.Record(
      std::nullopt,
      "token",
      caller.user,
      "created " + std::string(ToString(t.kind)) + " token " + t.id +
          (t.kind == TokenKind::kUser
               ? " for user " + t.subject + " (role " + std::string(ToString(t.role)) + ")"
               : (t.subject.empty() ? " (any node may join with it)" : " for node " + t.subject)));
  // Usable at once: the answer (which the client may use right away) follows the commit, and
  // a failed commit stops the controller altogether.
  registry_.Put(t);
  return issued;
}

Result<ApiToken> TokenDesk::Revoke(const Caller& caller, const std::string& id) {
  // A token created earlier in this turn is in the outbox, not yet in the store.
  std::optional<ApiToken> found;
  for (const ApiToken& t : p_.out.batch.tokens) {
    if (t.id == id) {
      found = t;  // the latest of the turn wins
    }
  }
  if (!found) {
    GF_ASSIGN_OR_RETURN(found, p_.store.GetToken(id));
  }
  if (!found || !Allows(caller, Resource::kToken, Action::kRevoke, WhoseToken(caller, *found))) {
    return NotFound("token " + id + " not found (gpufleet token list shows yours)");
  }
  if (!found->revoked) {
    found->revoked = p_.clock.Now();
    p_.out.batch.tokens.push_back(*found);
    p_.jobs.Record(std::nullopt, "token", caller.user, "revoked token " + id);
    registry_.Put(*found);
  }
  return Listed(*found);
}

}  // namespace gf
