// The Controller's administration calls (issue #6): API tokens, node drain/resume (NodeDesk)
// and GPU commands (GpuCare). A part of controller.cpp's class, kept apart so that file stays the
// state thread and the job calls.
#include <algorithm>
#include <vector>

#include <pwd.h>

#include "controller/controller.h"
#include "controller/tokens.h"

namespace gf {
namespace {

constexpr std::size_t kMaxDescription = 200;
constexpr std::size_t kMaxDrainReason = 500;

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

Result<Caller> Controller::Authenticate(std::string_view token) const {
  return tokens_.Authenticate(token, clock_.Now());
}

Status Controller::LoadTokens() {
  GF_ASSIGN_OR_RETURN(std::vector<ApiToken> tokens, store_->ListTokens());
  tokens_.Load(std::move(tokens));
  return OkStatus();
}

Result<IssuedToken> Controller::CreateToken(const Caller& caller, TokenRequest request) {
  GF_TRY(Authorize(caller, Resource::kToken, Action::kCreate, Ownership::kNone, "token create"));
  GF_TRY(CheckTokenRequest(request));
  Owner owner;
  if (request.kind == TokenKind::kUser) {
    GF_ASSIGN_OR_RETURN(owner,
                        UnixUser(request.subject));  // NSS may block: not on the state thread
  }
  GF_ASSIGN_OR_RETURN(IssuedToken issued, MakeToken(request, owner.uid, owner.gid, clock_.Now()));
  return Call<IssuedToken>([this, caller, issued]() -> Result<IssuedToken> {
    out_.batch.tokens.push_back(issued.token);
    const ApiToken& t = issued.token;
    jobs_.Record(
        std::nullopt,
        "token",
        caller.user,
        "created " + std::string(ToString(t.kind)) + " token " + t.id +
            (t.kind == TokenKind::kUser
                 ? " for user " + t.subject + " (role " + std::string(ToString(t.role)) + ")"
                 : (t.subject.empty() ? " (any node may join with it)"
                                      : " for node " + t.subject)));
    // Usable at once: the answer (which the client may use right away) follows the commit, and
    // a failed commit stops the controller altogether.
    tokens_.Put(t);
    return issued;
  });
}

Result<std::vector<ApiToken>> Controller::ListTokens(const Caller& caller) {
  return reads_.ListTokens(caller);
}

Result<ApiToken> Controller::RevokeToken(const Caller& caller, const std::string& id) {
  GF_TRY(Authorize(caller, Resource::kToken, Action::kRevoke, Ownership::kOwn, "token revoke"));
  return Call<ApiToken>([this, caller, id]() -> Result<ApiToken> {
    // A token created earlier in this turn is in the batch, not yet in the store.
    std::optional<ApiToken> found;
    for (const ApiToken& t : out_.batch.tokens) {
      if (t.id == id) {
        found = t;  // the latest of the turn wins
      }
    }
    if (!found) {
      GF_ASSIGN_OR_RETURN(found, store_->GetToken(id));
    }
    if (!found || !Allows(caller, Resource::kToken, Action::kRevoke, WhoseToken(caller, *found))) {
      return NotFound("token " + id + " not found (gpufleet token list shows yours)");
    }
    if (!found->revoked) {
      found->revoked = clock_.Now();
      out_.batch.tokens.push_back(*found);
      jobs_.Record(std::nullopt, "token", caller.user, "revoked token " + id);
      tokens_.Put(*found);
    }
    return Listed(*found);
  });
}

Result<Node> Controller::DrainNode(const Caller& caller, const NodeId& node, std::string reason) {
  GF_TRY(Authorize(caller, Resource::kNode, Action::kDrain, Ownership::kNone, "node drain"));
  if (reason.empty() || reason.size() > kMaxDrainReason) {
    return InvalidArgument("reason: say why the node is drained (--reason 'bad fan'), in at most " +
                           std::to_string(kMaxDrainReason) + " characters");
  }
  return Call<Node>(
      [this, caller, node, reason] { return node_desk_.Drain(caller, node, reason); });
}

Result<Node> Controller::ResumeNode(const Caller& caller, const NodeId& node) {
  GF_TRY(Authorize(caller, Resource::kNode, Action::kDrain, Ownership::kNone, "node resume"));
  return Call<Node>([this, caller, node] { return node_desk_.Resume(caller, node); });
}

// ---- GPUs (gpu_care.h) -----------------------------------------------------------------------

Result<Gpu> Controller::ResumeGpu(const Caller& caller,
                                  const NodeId& node,
                                  const std::string& gpu) {
  GF_TRY(Authorize(caller, Resource::kGpu, Action::kResume, Ownership::kNone, "gpu resume"));
  return Call<Gpu>([this, caller, node, gpu] { return gpus_.Resume(caller, node, gpu); });
}

Result<Gpu> Controller::SetGpuMode(const Caller& caller,
                                   const NodeId& node,
                                   const std::string& gpu,
                                   const std::string& mode) {
  GF_TRY(Authorize(caller, Resource::kGpu, Action::kConfigure, Ownership::kNone, "gpu mode"));
  GF_ASSIGN_OR_RETURN(const SharingMode wanted, ParseSharingMode(mode));
  return Call<Gpu>(
      [this, caller, node, gpu, wanted] { return gpus_.SetMode(caller, node, gpu, wanted); });
}

Result<Gpu> Controller::SetMigLayout(const Caller& caller,
                                     const NodeId& node,
                                     const std::string& gpu,
                                     const std::string& layout) {
  GF_TRY(Authorize(caller, Resource::kGpu, Action::kConfigure, Ownership::kNone, "gpu mig-layout"));
  GF_ASSIGN_OR_RETURN(std::vector<std::string> profiles, ParseMigLayout(layout, "layout"));
  return Call<Gpu>([this, caller, node, gpu, profiles = std::move(profiles)] {
    return gpus_.SetMigLayout(caller, node, gpu, profiles);
  });
}

}  // namespace gf
