// Authorization: who may do what, as one table (role x resource x action x ownership), and the
// one function that reads it. Every permission check of the controller goes through Allows()
// or Authorize(); docs/cluster.md ("Who may do what") prints the same table, and a test checks
// that the two agree.
//
// A caller's principal comes from how it proved who it is, never from its uid alone: root on
// the Unix socket (SO_PEERCRED uid 0) is an admin and another socket user is a user, while a
// caller named by an API token has exactly the token's role, a token acting as root included
// (a root token of role user is a user). A node token is a node; no credential is anonymous.
//
// What "own" means is the call site's, as the table's `whose` column says: the job's owner uid
// is the caller's (for a release, also: the hold was placed by the job's owner, so that a hold
// an operator or an admin placed is theirs to release, as Slurm's admin hold); the token acts as
// the caller; the subscription is the caller's, or for a team the caller is a member of; the team
// is the caller's ([team.NAME] members); the node token names that node (a join token: any node).
//
// How a refusal reads is the rule's: kForbidden answers kPermissionDenied (403) naming the
// caller's role and who may; kHidden is answered by the call site as kNotFound (404), and
// lists leave such items out, so that what others have does not leak (decision 0001). Over
// TCP the routes that need an identity answer 401 to anonymous and node callers before any
// rule is read (routes.cpp).
//
// Plain data and pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "core/result.h"
#include "service/service.h"

namespace gf {

// Who a caller is for authorization, in the order of the table's columns.
enum class Principal { kAnonymous, kNode, kUser, kOperator, kAdmin };
inline constexpr std::size_t kPrincipalCount = 5;

enum class Resource {
  kCluster,  // health, nodes, GPUs, GPU series, /metrics: read-only views
  kJob,
  kTeam,    // a team's quota, budget and use (gpufleet quota, report --team)
  kReport,  // the monthly report's cluster, node and GPU figures
  kToken,
  kNode,
  kGpu,
  kSubscription,  // notification subscriptions
  kAgentLink,     // the node agents' link (/api/v1/agent/...)
};

enum class Action {
  kRead,  // see one, or find it in a list
  kList,  // ask for a user's list by name (jobs ?user=NAME)
  kSubmit,
  kCancel,
  kCheckpoint,
  kHold,     // keep a pending job out of the passes (gpufleet hold)
  kRelease,  // end a hold (gpufleet release); "own" is a hold its owner placed on its own job
  kRequeue,  // stop a running job and queue it again at its place (gpufleet requeue)
  kUpdate,   // change a pending job's request, time, class, team or name (gpufleet update)
  kAttach,   // type into a running job's terminal (gpufleet run): its owner alone
  kApprove,  // let a job run past its team's GPU-hour budget
  kCharge,   // name a team at submit: the job spends that team's guarantee and budget
  kCreate,
  kRevoke,
  kDelete,
  kDrain,      // drain and resume
  kResume,     // a failed or degraded GPU back to service
  kConfigure,  // a GPU's sharing mode and MIG layout
  kUse,
};

enum class Ownership { kNone, kOwn, kOther };

enum class Refusal { kForbidden, kHidden };

struct AuthorizationRule {
  Resource resource;
  Action action;
  Ownership whose;
  std::array<bool, kPrincipalCount> allowed;  // by Principal
  Refusal refusal;
  std::string_view may;       // what the rule allows, for messages: "create API tokens"
  std::string_view requests;  // the requests it covers, for the docs
};

// Every rule, in the order docs/cluster.md lists them. A (resource, action, ownership) that is
// not in the table is allowed to nobody.
std::span<const AuthorizationRule> AuthorizationTable();

// How the caller proved who it is decides its principal (see the top of this file).
Principal PrincipalOf(const Caller& caller);

// kOwn when the caller is authenticated as `owner_uid` (a job's owner), else kOther.
Ownership Whose(const Caller& caller, std::uint32_t owner_uid);

bool Allows(const Caller& caller, Resource resource, Action action, Ownership whose);

// OkStatus when allowed; else kPermissionDenied, prefixed by `what` (the request, e.g. "token
// create"; the rule's own wording when empty), naming the caller, its role and who may, e.g.
// "token create: only an admin may create API tokens; you are alice with an API token of role
// user". An unauthenticated caller is told how to authenticate. Whatever the rule's Refusal:
// a call site that hides answers kNotFound itself.
Status Authorize(const Caller& caller,
                 Resource resource,
                 Action action,
                 Ownership whose,
                 std::string_view what = {});

// Whether `caller` may do `action` to `job`: its own when the caller is authenticated as its
// owner (Whose). Jobs are hidden from who may not read them (decision 0001): a list leaves such
// a job out, and a call naming it is answered NotVisible, as for a job that does not exist.
bool Visible(const Caller& caller, const Job& job, Action action = Action::kRead);
// kNotFound "job 12 not found": a job that does not exist, or that the caller may not see.
Error NotVisible(JobId id);

// The table's words: "anonymous", "node", "user", "operator", "admin"; "cluster", "job", ...;
// "read", "list", ...; "-", "own", "other's"; "403", "404".
std::string_view ToString(Principal p);
std::string_view ToString(Resource r);
std::string_view ToString(Action a);
std::string_view ToString(Ownership o);
std::string_view ToString(Refusal r);

}  // namespace gf
