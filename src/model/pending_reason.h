// PendingReason: why a pending job waits, as a value rather than only as words (issue #21).
//
// After the Kubernetes scheduler framework's Status: a rejection names the stage that made it
// (`stage`), a short stable cause a program can switch on (`code`, its string never changes
// once released) and whether waiting alone can ever end it (`can_ever_fit`, as Kubernetes
// tells Unschedulable from UnschedulableAndUnresolvable). `text` is what a person reads — the
// sentence gpufleet has always shown (`gpufleet queue`, `show`, `explain`, the dashboard).
//
// Who builds them: the scheduler (Decide, Explain: the pass, its quota ledger and placement
// pools) and the lifecycle's admission (HeldBack: dependencies, gangs, array throttles). The
// controller keeps the last one on the Job (Job::pending_reason, in memory like Job::reason)
// and the API shows its code and stage beside the reason. It lives in `model`, not
// `scheduler`, because the Job, the lifecycle and the API carry it and the API must not depend
// on the scheduler.
//
// Plain value type; thread-compatible.
#pragma once

#include <string>
#include <string_view>

namespace gf {

// The stage of the job's path to GPUs that keeps it waiting, in the order a job meets them.
enum class PendingStage {
  kAdmission,    // held back before the pass (lifecycle/admission.h): hold, dependency, gang,
                 // array
  kQuota,        // a class or team rule: class users, per-user limit, max_gpus, budget
  kOrdering,     // a job ahead in the order set the GPUs it needs aside
  kPlacement,    // no GPUs of the kind it asks are free, or none exists (its request)
  kNodes,        // no node is up, or no up node has a GPU that takes work
  kPreemption,   // it preempts: its victims are stopping, or are not yet old enough
  kReservation,  // backfill set GPUs aside for it from an expected start
};

// One code per distinct cause. Each belongs to one stage (StageOf).
enum class PendingCode {
  // kAdmission
  kHeld,          // held by its owner or an admin (gpufleet hold) until gpufleet release
  kDependency,    // an --after dependency has not ended (as it must)
  kGangStopping,  // members of its gang still hold GPUs: the gang starts again whole
  kArrayLimit,    // its array runs as many tasks as its limit allows
  // kQuota
  kClassNotAllowed,  // its user may not use its priority class
  kUserClassLimit,   // its user holds the class's GPUs per user
  kTeamMaxGpus,      // its team is at max_gpus
  kBudgetExhausted,  // its team is over its GPU-hour budget under `hold`
  // kOrdering
  kBehindEarlierJob,  // a job before it in the order has claimed or reserved those GPUs
  // kPlacement
  kInvalidRequest,    // the request cannot be placed anywhere (negative GPUs)
  kNoFreeGpus,        // GPUs of its kind exist but are busy (whole, shared, MIG, a gang's nodes)
  kTooLarge,          // more than any up node (or shared GPU) has
  kTooFewNodes,       // a multi-node job: fewer up nodes than members could take one
  kNoGpuOfType,       // no up node has its GPU model
  kNoNodeWithLabels,  // no up node has its labels
  kNoSharedGpu,       // a fractional job: no GPU is in shared or mps mode
  kMpsOtherUser,      // a fractional job: every mps GPU serves another user now
  kNoMigDevice,       // a MIG job: no GPU has a device of its profile
  // kNodes
  kNoNodeUp,     // no node is up
  kNoUsableGpu,  // the up nodes have no GPU that takes work (failed, degraded, drained)
  // kPreemption
  kVictimsStopping,   // it preempted; it starts once its victims have stopped
  kVictimsProtected,  // it will preempt once its victims have run the minimum run time
  // kReservation
  kGpusReserved,  // GPUs set aside from when it is expected to start
  // kPlacement, issue #24 (after the older codes so that their values do not move)
  kCpuMemBusy,      // nodes with its GPUs free lack the host CPUs or memory it asks now
  kCpuMemTooLarge,  // no up node has that many CPUs or that much memory at all
};

std::string_view ToString(PendingStage stage);  // "admission", "quota", ..., "reservation"
std::string_view ToString(PendingCode code);    // "dependency", "no_free_gpus", ...
PendingStage StageOf(PendingCode code);

struct PendingReason {
  PendingStage stage = PendingStage::kPlacement;
  PendingCode code = PendingCode::kNoFreeGpus;
  // Whether the job can start without anyone changing the cluster or the config: false when it
  // asks for more than the up nodes (or a rule) could ever give it, so waiting alone never ends.
  bool can_ever_fit = true;
  std::string text;  // for a person: "needs 4 GPUs; 0 free", "waiting for job 12 to end"

  // The reason for `code` with its specifics `text`: the stage is the code's, and it can ever
  // fit unless the code says otherwise (the causes that only an admin or a node ends: an
  // invalid or too large request, a missing model, label, mode or node, a class not allowed).
  static PendingReason Of(PendingCode code, std::string text);
  // The same with `can_ever_fit` given: for a code whose answer depends on the specifics (a job
  // that asks more than a limit allows in all, rather than more than is left under it).
  static PendingReason Of(PendingCode code, bool can_ever_fit, std::string text);

  bool operator==(const PendingReason&) const = default;
};

// Whether a reason of `code` can ever fit when nothing says otherwise (PendingReason::Of).
bool CanEverFitByDefault(PendingCode code);

}  // namespace gf
