// Tokens (tokens.h): their text, what is stored of them, and how TokenRegistry turns a
// presented token into a Caller or refuses it.
#include "controller/tokens.h"

#include <string>

#include <gtest/gtest.h>

#include "controller/authorization.h"

namespace gf {
namespace {

using std::chrono::hours;

const Time kNow = FromUnixMillis(1'700'000'000'000);

TokenRequest UserRequest(std::string user, Role role) {
  return TokenRequest{.kind = TokenKind::kUser,
                      .subject = std::move(user),
                      .role = role,
                      .description = "laptop",
                      .expires_in = std::nullopt};
}

TokenRequest NodeRequest(std::string node) {
  return TokenRequest{.kind = TokenKind::kNode,
                      .subject = std::move(node),
                      .role = Role::kUser,
                      .description = "",
                      .expires_in = std::nullopt};
}

IssuedToken Make(const TokenRequest& request, std::uint32_t uid = 1000, std::uint32_t gid = 100) {
  Result<IssuedToken> issued = MakeToken(request, uid, gid, kNow);
  EXPECT_TRUE(issued.ok()) << issued.error().ToString();
  return issued.ok() ? *issued : IssuedToken{};
}

// The secret part of a token's text (after "gft_<id>_").
std::string SecretOf(const std::string& text) {
  return text.substr(text.rfind('_') + 1);
}

bool IsLowerHex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Authenticate must refuse `text` with kPermissionDenied, saying `why`, never echoing the
// secret part of what was presented.
void ExpectRefused(const TokenRegistry& registry,
                   const std::string& text,
                   const std::string& why,
                   Time now = kNow) {
  Result<Caller> caller = registry.Authenticate(text, now);
  ASSERT_FALSE(caller.ok()) << text;
  EXPECT_EQ(caller.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(caller.error().message.find(why), std::string::npos) << caller.error().message;
  if (text.size() > 17) {  // past "gft_<id>_": what would be the secret
    EXPECT_EQ(caller.error().message.find(text.substr(17)), std::string::npos)
        << caller.error().message;
  }
}

TEST(TokensTest, TextIsPrefixIdAndSecretAndOnlyTheHashIsKept) {
  IssuedToken issued = Make(UserRequest("alice", Role::kOperator));
  const std::string& text = issued.text;
  ASSERT_EQ(text.size(), 4u + 12u + 1u + 64u) << text;
  EXPECT_EQ(text.substr(0, 4), "gft_");
  const std::string id = text.substr(4, 12);
  EXPECT_EQ(id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789"), std::string::npos);
  EXPECT_EQ(text[16], '_');
  const std::string secret = SecretOf(text);
  EXPECT_TRUE(IsLowerHex(secret)) << secret;

  const ApiToken& stored = issued.token;
  EXPECT_EQ(stored.id, id);
  EXPECT_EQ(stored.secret_hash, Sha256Hex(secret));
  EXPECT_NE(stored.secret_hash, secret);
  // Nothing stored holds the secret.
  for (const std::string& field :
       {stored.id, stored.secret_hash, stored.subject, stored.description}) {
    EXPECT_EQ(field.find(secret), std::string::npos) << field;
  }
  EXPECT_EQ(stored.kind, TokenKind::kUser);
  EXPECT_EQ(stored.subject, "alice");
  EXPECT_EQ(stored.uid, 1000u);
  EXPECT_EQ(stored.gid, 100u);
  EXPECT_EQ(stored.role, Role::kOperator);
  EXPECT_EQ(stored.created, kNow);
  EXPECT_FALSE(stored.expires.has_value());
  EXPECT_FALSE(stored.revoked.has_value());

  // Two tokens share nothing.
  IssuedToken other = Make(UserRequest("alice", Role::kOperator));
  EXPECT_NE(other.token.id, stored.id);
  EXPECT_NE(SecretOf(other.text), secret);
}

TEST(TokensTest, Sha256HexIsTheStandardDigest) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(TokensTest, NodeTokensHaveNoUserAndExpiryIsFromCreation) {
  TokenRequest request = NodeRequest("gpu01");
  request.expires_in = hours(24);
  IssuedToken issued = Make(request, 1000, 100);
  EXPECT_EQ(issued.token.kind, TokenKind::kNode);
  EXPECT_EQ(issued.token.subject, "gpu01");
  EXPECT_EQ(issued.token.uid, 0u);  // a node token acts as no user
  EXPECT_EQ(issued.token.gid, 0u);
  EXPECT_EQ(issued.token.role, Role::kUser);
  ASSERT_TRUE(issued.token.expires.has_value());
  EXPECT_EQ(*issued.token.expires, kNow + hours(24));
}

TEST(TokensTest, UserTokenAuthenticatesAsItsUserWithItsRole) {
  TokenRegistry registry;
  IssuedToken issued = Make(UserRequest("alice", Role::kAdmin), 1000, 100);
  registry.Load({issued.token});
  Result<Caller> caller = registry.Authenticate(issued.text, kNow);
  ASSERT_TRUE(caller.ok()) << caller.error().ToString();
  EXPECT_TRUE(caller->authenticated);
  EXPECT_EQ(caller->uid, 1000u);
  EXPECT_EQ(caller->gid, 100u);
  EXPECT_EQ(caller->user, "alice");
  EXPECT_EQ(caller->role, Role::kAdmin);
  EXPECT_FALSE(caller->node.has_value());
  EXPECT_TRUE(caller->via_token);
  EXPECT_EQ(PrincipalOf(*caller), Principal::kAdmin);
}

TEST(TokensTest, NodeTokenAuthenticatesAsItsNodeAndNoUser) {
  TokenRegistry registry;
  IssuedToken bound = Make(NodeRequest("gpu01"));
  IssuedToken join = Make(NodeRequest(""));
  registry.Put(bound.token);
  registry.Put(join.token);
  Result<Caller> node = registry.Authenticate(bound.text, kNow);
  ASSERT_TRUE(node.ok()) << node.error().ToString();
  EXPECT_FALSE(node->authenticated);  // no job route accepts it
  ASSERT_TRUE(node->node.has_value());
  EXPECT_EQ(*node->node, NodeId("gpu01"));
  EXPECT_EQ(PrincipalOf(*node), Principal::kNode);
  Result<Caller> any = registry.Authenticate(join.text, kNow);
  ASSERT_TRUE(any.ok()) << any.error().ToString();
  ASSERT_TRUE(any->node.has_value());
  EXPECT_EQ(*any->node, NodeId(""));
}

TEST(TokensTest, WrongUnknownRevokedExpiredAndMalformedAreRefused) {
  TokenRegistry registry;
  IssuedToken good = Make(UserRequest("alice", Role::kUser));
  TokenRequest expiring = UserRequest("bob", Role::kUser);
  expiring.expires_in = hours(1);
  IssuedToken expires = Make(expiring);
  IssuedToken revoked = Make(UserRequest("carol", Role::kUser));
  revoked.token.revoked = kNow;
  registry.Load({good.token, expires.token, revoked.token});

  // The right id with another secret (flip its last digit).
  std::string wrong = good.text;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  ExpectRefused(registry, wrong, "wrong secret for token " + good.token.id);
  // A well-formed token the registry never saw.
  ExpectRefused(registry, Make(UserRequest("dave", Role::kUser)).text, "no token");
  ExpectRefused(registry, revoked.text, "revoked");
  // Valid until just before `expires`; refused at it and after.
  EXPECT_TRUE(registry.Authenticate(expires.text, kNow + hours(1) - Millis(1)).ok());
  ExpectRefused(registry, expires.text, "expired", kNow + hours(1));
  ExpectRefused(registry, expires.text, "expired", kNow + hours(2));

  for (const std::string& malformed : {std::string(),
                                       std::string("gft_"),
                                       good.text.substr(0, good.text.size() - 1),
                                       good.text + "0",
                                       "xyz_" + good.text.substr(4),
                                       good.text.substr(0, 16) + "-" + good.text.substr(17),
                                       std::string(81, 'a')}) {
    ExpectRefused(registry, malformed, "not a gpufleet token");
  }
}

TEST(TokensTest, PutReplacesByIdSoARevocationTakesEffectAtOnce) {
  TokenRegistry registry;
  IssuedToken issued = Make(UserRequest("alice", Role::kUser));
  registry.Put(issued.token);
  ASSERT_TRUE(registry.Authenticate(issued.text, kNow).ok());
  ApiToken revoked = issued.token;
  revoked.revoked = kNow;
  registry.Put(revoked);
  ExpectRefused(registry, issued.text, "revoked");
  registry.Load({});  // Load replaces everything
  ExpectRefused(registry, issued.text, "no token");
}

}  // namespace
}  // namespace gf
