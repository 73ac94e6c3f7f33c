#include "controller/tokens.h"

#include <array>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "core/hex.h"

namespace gf {
namespace {

constexpr std::string_view kPrefix = "gft_";
constexpr std::size_t kIdLength = 12;
constexpr std::size_t kSecretBytes = 32;
constexpr std::string_view kIdAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";

Result<std::string> RandomBytes(std::size_t n) {
  std::string out(n, '\0');
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): OpenSSL takes unsigned char*
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return Internal("the system's random generator failed; cannot make a token");
  }
  return out;
}

Result<std::string> RandomId() {
  GF_ASSIGN_OR_RETURN(std::string bytes, RandomBytes(kIdLength));
  std::string id;
  for (char c : bytes) {
    // 256 is not a multiple of 36: a slight bias, harmless for an id that is not secret.
    id += kIdAlphabet[static_cast<unsigned char>(c) % kIdAlphabet.size()];
  }
  return id;
}

Error Refused(std::string_view why) {
  return PermissionDenied("token refused: " + std::string(why) +
                          "; ask an admin for a new one (gpufleet token create)");
}

}  // namespace

std::string Sha256Hex(std::string_view secret) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(secret.data(), secret.size(), digest.data(), &length, EVP_sha256(), nullptr);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the digest's bytes as chars
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest.data()), length));
}

Result<IssuedToken> MakeToken(const TokenRequest& request,
                              std::uint32_t uid,
                              std::uint32_t gid,
                              Time now) {
  GF_ASSIGN_OR_RETURN(std::string id, RandomId());
  GF_ASSIGN_OR_RETURN(std::string secret_bytes, RandomBytes(kSecretBytes));
  const std::string secret = HexEncode(secret_bytes);
  IssuedToken out;
  out.text = std::string(kPrefix) + id + "_" + secret;
  out.token = ApiToken{.id = id,
                       .secret_hash = Sha256Hex(secret),
                       .kind = request.kind,
                       .subject = request.subject,
                       .uid = request.kind == TokenKind::kUser ? uid : 0,
                       .gid = request.kind == TokenKind::kUser ? gid : 0,
                       .role = request.kind == TokenKind::kUser ? request.role : Role::kUser,
                       .description = request.description,
                       .created = now};
  if (request.expires_in) {
    out.token.expires = now + *request.expires_in;
  }
  return out;
}

void TokenRegistry::Load(std::vector<ApiToken> tokens) {
  std::lock_guard lock(mu_);
  tokens_.clear();
  for (ApiToken& t : tokens) {
    std::string id = t.id;
    tokens_.emplace(std::move(id), std::move(t));
  }
}

void TokenRegistry::Put(const ApiToken& token) {
  std::lock_guard lock(mu_);
  tokens_[token.id] = token;
}

Result<Caller> TokenRegistry::Authenticate(std::string_view text, Time now) const {
  if (!text.starts_with(kPrefix) ||
      text.size() != kPrefix.size() + kIdLength + 1 + 2 * kSecretBytes ||
      text[kPrefix.size() + kIdLength] != '_') {
    return Refused("not a gpufleet token (they read gft_<id>_<secret>)");
  }
  const std::string id(text.substr(kPrefix.size(), kIdLength));
  const std::string hash = Sha256Hex(text.substr(kPrefix.size() + kIdLength + 1));
  ApiToken token;
  {
    std::lock_guard lock(mu_);
    auto it = tokens_.find(id);
    if (it == tokens_.end()) {
      return Refused("no token " + id);
    }
    token = it->second;
  }
  if (token.secret_hash.size() != hash.size() ||
      CRYPTO_memcmp(token.secret_hash.data(), hash.data(), hash.size()) != 0) {
    return Refused("wrong secret for token " + id);
  }
  if (token.revoked) {
    return Refused("token " + id + " was revoked");
  }
  if (token.expires && now >= *token.expires) {
    return Refused("token " + id + " has expired");
  }
  Caller caller;
  caller.via_token = true;
  if (token.kind == TokenKind::kNode) {
    caller.node = NodeId(token.subject);
    return caller;
  }
  caller.authenticated = true;
  caller.uid = token.uid;
  caller.gid = token.gid;
  caller.user = token.subject;
  caller.role = token.role;
  return caller;
}

ApiToken Listed(ApiToken token) {
  token.secret_hash.clear();
  return token;
}

Ownership WhoseToken(const Caller& caller, const ApiToken& token) {
  return caller.authenticated && token.kind == TokenKind::kUser && token.uid == caller.uid &&
                 token.subject == caller.user
             ? Ownership::kOwn
             : Ownership::kOther;
}

}  // namespace gf
