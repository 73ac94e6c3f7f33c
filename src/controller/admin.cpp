// The Controller's administration calls (issue #6): API tokens (TokenDesk), node drain/resume
// (NodeDesk) and GPU commands (GpuCare). A part of controller.cpp's class, kept apart so that file
// stays the state thread and the job calls.
#include <algorithm>
#include <vector>

#include "controller/controller.h"

namespace gf {
namespace {

constexpr std::size_t kMaxDrainReason = 500;

}  // namespace

Result<Caller> Controller::Authenticate(std::string_view token) const {
  return tokens_.Authenticate(token, clock_.Now());
}

Result<IssuedToken> Controller::CreateToken(const Caller& caller, TokenRequest request) {
  GF_TRY(Authorize(caller, Resource::kToken, Action::kCreate, Ownership::kNone, "token create"));
  // Checked and made here: NSS (the Unix user a token acts as) may block, not on the state thread.
  GF_ASSIGN_OR_RETURN(IssuedToken issued, TokenDesk::Make(request, clock_.Now()));
  return Call<IssuedToken>(
      [this, caller, issued]() -> Result<IssuedToken> { return tokens_.Issue(caller, issued); });
}

Result<std::vector<ApiToken>> Controller::ListTokens(const Caller& caller) {
  return reads_.ListTokens(caller);
}

Result<ApiToken> Controller::RevokeToken(const Caller& caller, const std::string& id) {
  GF_TRY(Authorize(caller, Resource::kToken, Action::kRevoke, Ownership::kOwn, "token revoke"));
  return Call<ApiToken>([this, caller, id] { return tokens_.Revoke(caller, id); });
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
