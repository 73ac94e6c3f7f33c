#include "controller/authorization.h"

#include <string>

namespace gf {
namespace {

// One letter each, so that the table below reads as a table.
constexpr bool Y = true;   // NOLINT(readability-identifier-naming)
constexpr bool N = false;  // NOLINT(readability-identifier-naming)

using R = Resource;
using A = Action;
using O = Ownership;
constexpr Refusal k403 = Refusal::kForbidden;
constexpr Refusal k404 = Refusal::kHidden;

// The table. Columns of `allowed`: anonymous, node, user, operator, admin. docs/cluster.md
// prints it row for row (authorization_test.cpp compares them).
// clang-format off
constexpr std::array<AuthorizationRule, 42> kRules = {{
  {R::kCluster, A::kRead, O::kNone, {Y, Y, Y, Y, Y}, k403, "read health, nodes, GPUs and metrics",
   "`GET /api/v1/health`, `/nodes`, `/gpus`, `/gpus/{uuid}/series`, `/cluster/series`, "
   "`/metrics`"},
  {R::kJob, A::kSubmit, O::kNone, {N, N, Y, Y, Y}, k403, "submit jobs",
   "`POST /api/v1/jobs` (arrays and multi-job bodies too)"},
  {R::kJob, A::kRead, O::kOwn, {N, N, Y, Y, Y}, k404, "see their own jobs",
   "`GET /api/v1/jobs`, `/jobs/{id}`, its `events`, `runs`, `logs`, `explain`; `--after` it"},
  {R::kJob, A::kRead, O::kOther, {N, N, N, Y, Y}, k404, "see other users' jobs", "the same"},
  {R::kJob, A::kList, O::kOwn, {N, N, Y, Y, Y}, k403, "list their own jobs by name",
   "`GET /api/v1/jobs?user=NAME`"},
  {R::kJob, A::kList, O::kOther, {N, N, N, Y, Y}, k403, "list the jobs of other users",
   "the same"},
  {R::kJob, A::kCancel, O::kOwn, {N, N, Y, Y, Y}, k404, "cancel their own jobs",
   "`POST /api/v1/jobs/{id}/cancel`, `/arrays/{id}/cancel`, `/jobs/cancel` (by filter)"},
  {R::kJob, A::kCancel, O::kOther, {N, N, N, Y, Y}, k404, "cancel other users' jobs",
   "the same"},
  {R::kJob, A::kCheckpoint, O::kOwn, {N, N, Y, Y, Y}, k404,
   "report a checkpoint of their own jobs", "`POST /api/v1/jobs/{id}/checkpoint`"},
  {R::kJob, A::kCheckpoint, O::kOther, {N, N, N, Y, Y}, k404,
   "report a checkpoint of other users' jobs", "the same"},
  {R::kJob, A::kHold, O::kOwn, {N, N, Y, Y, Y}, k404, "hold their own pending jobs",
   "`POST /api/v1/jobs/{id}/hold`"},
  {R::kJob, A::kHold, O::kOther, {N, N, N, Y, Y}, k404, "hold other users' jobs", "the same"},
  {R::kJob, A::kRelease, O::kOwn, {N, N, Y, Y, Y}, k404,
   "release the holds they placed on their own jobs", "`POST /api/v1/jobs/{id}/release`"},
  // A hold placed by someone other than the job's owner is an administrator's hold: its owner
  // sees the job but may not release it (403).
  {R::kJob, A::kRelease, O::kOther, {N, N, N, Y, Y}, k404,
   "release other users' jobs and holds placed by an operator or an admin", "the same"},
  {R::kJob, A::kRequeue, O::kOwn, {N, N, Y, Y, Y}, k404, "requeue their own running jobs",
   "`POST /api/v1/jobs/{id}/requeue`"},
  {R::kJob, A::kRequeue, O::kOther, {N, N, N, Y, Y}, k404, "requeue other users' jobs",
   "the same"},
  {R::kJob, A::kUpdate, O::kOwn, {N, N, Y, Y, Y}, k404, "change their own pending jobs",
   "`POST /api/v1/jobs/{id}/update`"},
  {R::kJob, A::kUpdate, O::kOther, {N, N, N, Y, Y}, k404, "change other users' pending jobs",
   "the same"},
  // Keystrokes run as the job's owner: nobody else types into a user's shell, admins included
  // (they can cancel or requeue it). Hidden, like every job rule: who may see the job is told
  // the terminal is its owner's.
  {R::kJob, A::kAttach, O::kOwn, {N, N, Y, Y, Y}, k404,
   "type into their own interactive jobs' terminals", "`POST /api/v1/jobs/{id}/terminal`"},
  {R::kJob, A::kAttach, O::kOther, {N, N, N, N, N}, k404,
   "type into another user's job's terminal", "the same"},
  {R::kJob, A::kApprove, O::kNone, {N, N, N, N, Y}, k403,
   "let a job run past its team's GPU-hour budget", "`POST /api/v1/jobs/{id}/approve`"},
  {R::kTeam, A::kRead, O::kOwn, {N, N, Y, Y, Y}, k403,
   "see their own teams' quota, budget and use", "`GET /api/v1/quota`, `/report?team=T`"},
  {R::kTeam, A::kRead, O::kOther, {N, N, N, Y, Y}, k403,
   "see other teams' quota, budget and use", "the same"},
  // Naming a team spends its guarantee and budget: a budget is an admin's (model/team.h), so
  // operators, who see every team, charge only their own (submit_team.h).
  {R::kTeam, A::kCharge, O::kOwn, {N, N, Y, Y, Y}, k403, "charge jobs to their own team",
   "`POST /api/v1/jobs` naming `team` (arrays and multi-job bodies too)"},
  {R::kTeam, A::kCharge, O::kOther, {N, N, N, N, Y}, k403, "charge jobs to another team",
   "the same"},
  {R::kReport, A::kRead, O::kNone, {N, N, Y, Y, Y}, k403, "read the monthly report",
   "`GET /api/v1/report`"},
  {R::kToken, A::kCreate, O::kNone, {N, N, N, N, Y}, k403, "create API tokens",
   "`POST /api/v1/tokens`"},
  {R::kToken, A::kRead, O::kOwn, {N, N, Y, Y, Y}, k404, "list their own tokens",
   "`GET /api/v1/tokens`"},
  {R::kToken, A::kRead, O::kOther, {N, N, N, N, Y}, k404,
   "list other users' tokens and node tokens", "the same"},
  {R::kToken, A::kRevoke, O::kOwn, {N, N, Y, Y, Y}, k404, "revoke their own tokens",
   "`POST /api/v1/tokens/{id}/revoke`"},
  {R::kToken, A::kRevoke, O::kOther, {N, N, N, N, Y}, k404,
   "revoke other users' tokens and node tokens", "the same"},
  {R::kNode, A::kDrain, O::kNone, {N, N, N, Y, Y}, k403, "drain and resume nodes",
   "`POST /api/v1/nodes/{name}/drain`, `/resume`"},
  {R::kGpu, A::kResume, O::kNone, {N, N, N, Y, Y}, k403, "return GPUs to service",
   "`POST /api/v1/nodes/{name}/gpus/{gpu}/resume`"},
  {R::kGpu, A::kConfigure, O::kNone, {N, N, N, N, Y}, k403,
   "change how a GPU is shared or its MIG devices",
   "`POST /api/v1/nodes/{name}/gpus/{gpu}/mode`, `/mig-layout`"},
  {R::kSubscription, A::kCreate, O::kOwn, {N, N, Y, Y, Y}, k403,
   "subscribe to their own jobs or to their own team", "`POST /api/v1/subscriptions`"},
  {R::kSubscription, A::kCreate, O::kOther, {N, N, N, N, Y}, k403,
   "subscribe to another team or to the whole cluster", "the same"},
  {R::kSubscription, A::kRead, O::kOwn, {N, N, Y, Y, Y}, k404, "list their own subscriptions",
   "`GET /api/v1/subscriptions`"},
  {R::kSubscription, A::kRead, O::kOther, {N, N, N, N, Y}, k404,
   "list other users' subscriptions", "the same"},
  {R::kSubscription, A::kDelete, O::kOwn, {N, N, Y, Y, Y}, k404,
   "remove their own subscriptions", "`DELETE /api/v1/subscriptions/{id}`"},
  {R::kSubscription, A::kDelete, O::kOther, {N, N, N, N, Y}, k404,
   "remove other users' subscriptions", "the same"},
  // An admin could make itself a node token anyway, so it may speak for any node directly
  // (root runs gpufleet agent on the server's own machine over the socket).
  {R::kAgentLink, A::kUse, O::kOwn, {N, Y, N, N, Y}, k403, "speak for their node on the agent link",
   "`/api/v1/agent/hello`, `reports`, `commands`, `logs`"},
  {R::kAgentLink, A::kUse, O::kOther, {N, N, N, N, Y}, k403,
   "speak for any node on the agent link", "the same"},
}};
// clang-format on

const AuthorizationRule* Find(Resource resource, Action action, Ownership whose) {
  for (const AuthorizationRule& rule : kRules) {
    if (rule.resource == resource && rule.action == action && rule.whose == whose) {
      return &rule;
    }
  }
  return nullptr;
}

std::string_view Article(Principal p) {
  return p == Principal::kOperator || p == Principal::kAdmin ? "an " : "a ";
}

// "an operator or an admin (root on the server's socket is one)".
std::string WhoMay(const AuthorizationRule& rule) {
  std::string who;
  for (std::size_t i = 0; i < kPrincipalCount; ++i) {
    if (!rule.allowed[i]) {
      continue;
    }
    const auto p = static_cast<Principal>(i);
    who += who.empty() ? "" : " or ";
    who += std::string(Article(p)) + std::string(ToString(p));
    if (p == Principal::kNode) {
      who += " token for that node";
    }
  }
  if (rule.allowed[static_cast<std::size_t>(Principal::kAdmin)]) {
    who += " (root on the server's socket is one)";
  }
  return who.empty() ? "nobody" : who;
}

std::string Describe(const Caller& caller) {
  const std::string role(ToString(PrincipalOf(caller)));
  if (caller.via_token) {
    return "you are " + caller.user + " with an API token of role " + role;
  }
  return "you are " + caller.user + " on the server's socket (role " + role + ")";
}

}  // namespace

std::span<const AuthorizationRule> AuthorizationTable() {
  return kRules;
}

Principal PrincipalOf(const Caller& caller) {
  if (caller.node) {
    return Principal::kNode;
  }
  if (!caller.authenticated) {
    return Principal::kAnonymous;
  }
  if (!caller.via_token) {  // the kernel's word (SO_PEERCRED): only root is more than a user
    return caller.uid == 0 ? Principal::kAdmin : Principal::kUser;
  }
  switch (caller.role) {
    case Role::kUser:
      return Principal::kUser;
    case Role::kOperator:
      return Principal::kOperator;
    case Role::kAdmin:
      return Principal::kAdmin;
  }
  return Principal::kUser;
}

Ownership Whose(const Caller& caller, std::uint32_t owner_uid) {
  return caller.authenticated && caller.uid == owner_uid ? Ownership::kOwn : Ownership::kOther;
}

bool Allows(const Caller& caller, Resource resource, Action action, Ownership whose) {
  const AuthorizationRule* rule = Find(resource, action, whose);
  return rule != nullptr && rule->allowed[static_cast<std::size_t>(PrincipalOf(caller))];
}

bool Visible(const Caller& caller, const Job& job, Action action) {
  return Allows(caller, Resource::kJob, action, Whose(caller, job.owner.uid));
}

Error NotVisible(JobId id) {
  return NotFound("job " + std::to_string(id.value()) + " not found");
}

Status Authorize(const Caller& caller,
                 Resource resource,
                 Action action,
                 Ownership whose,
                 std::string_view what) {
  if (Allows(caller, resource, action, whose)) {
    return OkStatus();
  }
  const AuthorizationRule* rule = Find(resource, action, whose);
  std::string prefix(what);
  if (prefix.empty()) {
    prefix = std::string(ToString(resource)) + " " + std::string(ToString(action));
  }
  switch (PrincipalOf(caller)) {
    case Principal::kAnonymous:
      return PermissionDenied(prefix +
                              ": this connection is not authenticated; over TCP send an API "
                              "token (gpufleet token create), or use the local Unix socket "
                              "(gpufleet finds it, or set GPUFLEET_SOCKET)");
    case Principal::kNode:
      if (resource != Resource::kAgentLink) {
        return PermissionDenied(prefix +
                                ": a node token is only for gpufleet agent (the agent "
                                "link); users need a user token (gpufleet token "
                                "create --user)");
      }
      break;
    default:
      break;
  }
  if (rule == nullptr) {
    return PermissionDenied(prefix + ": nobody may do this");
  }
  const std::string who = WhoMay(*rule);
  return PermissionDenied(prefix + ": " + (who == "nobody" ? who : "only " + who) + " may " +
                          std::string(rule->may) + "; " + Describe(caller));
}

std::string_view ToString(Principal p) {
  switch (p) {
    case Principal::kAnonymous:
      return "anonymous";
    case Principal::kNode:
      return "node";
    case Principal::kUser:
      return "user";
    case Principal::kOperator:
      return "operator";
    case Principal::kAdmin:
      return "admin";
  }
  return "?";
}

std::string_view ToString(Resource r) {
  switch (r) {
    case Resource::kCluster:
      return "cluster";
    case Resource::kJob:
      return "job";
    case Resource::kTeam:
      return "team";
    case Resource::kReport:
      return "report";
    case Resource::kToken:
      return "token";
    case Resource::kNode:
      return "node";
    case Resource::kGpu:
      return "gpu";
    case Resource::kSubscription:
      return "subscription";
    case Resource::kAgentLink:
      return "agent link";
  }
  return "?";
}

std::string_view ToString(Action a) {
  switch (a) {
    case Action::kRead:
      return "read";
    case Action::kList:
      return "list";
    case Action::kSubmit:
      return "submit";
    case Action::kCancel:
      return "cancel";
    case Action::kCheckpoint:
      return "checkpoint";
    case Action::kHold:
      return "hold";
    case Action::kRelease:
      return "release";
    case Action::kRequeue:
      return "requeue";
    case Action::kAttach:
      return "attach";
    case Action::kUpdate:
      return "update";
    case Action::kApprove:
      return "approve";
    case Action::kCharge:
      return "charge";
    case Action::kCreate:
      return "create";
    case Action::kRevoke:
      return "revoke";
    case Action::kDelete:
      return "delete";
    case Action::kDrain:
      return "drain";
    case Action::kResume:
      return "resume";
    case Action::kConfigure:
      return "configure";
    case Action::kUse:
      return "use";
  }
  return "?";
}

std::string_view ToString(Ownership o) {
  switch (o) {
    case Ownership::kNone:
      return "-";
    case Ownership::kOwn:
      return "own";
    case Ownership::kOther:
      return "other's";
  }
  return "?";
}

std::string_view ToString(Refusal r) {
  return r == Refusal::kForbidden ? "403" : "404";
}

}  // namespace gf
