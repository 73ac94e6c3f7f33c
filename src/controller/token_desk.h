// TokenDesk: API and node tokens (issue #6), a component of the controller. It owns the
// TokenRegistry (tokens.h: the tokens by hash, thread-safe, so that API workers authenticate
// without the state thread) and, on the state thread, issues a token (stored with the turn,
// recorded, usable at once) and revokes one (the caller's own, or any for an admin), including
// one issued earlier in the same turn.
#pragma once

#include <string>
#include <string_view>

#include "controller/tokens.h"
#include "controller/turn_outbox.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "service/service.h"
#include "store/store.h"

namespace gf {

// The controller's parts the desk works with; each must outlive it.
struct TokenDeskParts {
  JobBook& jobs;       // its journal records the tokens' events
  StoreReader& store;  // tokens stored by earlier turns
  TurnOutbox& out;
  const Clock& clock;
};

class TokenDesk {
 public:
  explicit TokenDesk(TokenDeskParts parts) : p_(parts) {}

  // The stored tokens, at start.
  Status Load(StoreReader& store);
  // The Caller a bearer token stands for. Any thread.
  Result<Caller> Authenticate(std::string_view token, Time now) const {
    return registry_.Authenticate(token, now);
  }
  // A token for `request`, checked (the field and the fix named) and made with its secret; a
  // user token's Unix account is looked up. On the caller's thread: NSS may block.
  static Result<IssuedToken> Make(const TokenRequest& request, Time now);
  // State thread: the token stored with the turn, recorded and usable at once.
  IssuedToken Issue(const Caller& caller, IssuedToken issued);
  Result<ApiToken> Revoke(const Caller& caller, const std::string& id);

 private:
  TokenDeskParts p_;
  TokenRegistry registry_;
};

}  // namespace gf
