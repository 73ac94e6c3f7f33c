#include "model/pending_reason.h"

#include <array>
#include <utility>

namespace gf {
namespace {

struct CodeInfo {
  PendingCode code;
  std::string_view name;  // stable: programs match on it (the API's reason_code)
  PendingStage stage;
  bool can_ever_fit;
};

// One row per code, in the enum's order: InfoOf indexes it by the code (checked at compile time
// below, so a row moved out of place cannot change the API's stable reason_code).
constexpr std::array<CodeInfo, 25> kCodes = {{
    // Only a release ends a hold: waiting alone never does.
    {PendingCode::kHeld, "held", PendingStage::kAdmission, false},
    {PendingCode::kDependency, "dependency", PendingStage::kAdmission, true},
    {PendingCode::kGangStopping, "gang_stopping", PendingStage::kAdmission, true},
    {PendingCode::kArrayLimit, "array_limit", PendingStage::kAdmission, true},
    {PendingCode::kClassNotAllowed, "class_not_allowed", PendingStage::kQuota, false},
    {PendingCode::kUserClassLimit, "user_class_limit", PendingStage::kQuota, true},
    {PendingCode::kTeamMaxGpus, "team_max_gpus", PendingStage::kQuota, true},
    {PendingCode::kBudgetExhausted, "budget_exhausted", PendingStage::kQuota, true},
    {PendingCode::kBehindEarlierJob, "behind_earlier_job", PendingStage::kOrdering, true},
    {PendingCode::kInvalidRequest, "invalid_request", PendingStage::kPlacement, false},
    {PendingCode::kNoFreeGpus, "no_free_gpus", PendingStage::kPlacement, true},
    {PendingCode::kTooLarge, "too_large", PendingStage::kPlacement, false},
    {PendingCode::kTooFewNodes, "too_few_nodes", PendingStage::kPlacement, false},
    {PendingCode::kNoGpuOfType, "no_gpu_of_type", PendingStage::kPlacement, false},
    {PendingCode::kNoNodeWithLabels, "no_node_with_labels", PendingStage::kPlacement, false},
    {PendingCode::kNoSharedGpu, "no_shared_gpu", PendingStage::kPlacement, false},
    {PendingCode::kMpsOtherUser, "mps_other_user", PendingStage::kPlacement, true},
    {PendingCode::kNoMigDevice, "no_mig_device", PendingStage::kPlacement, false},
    {PendingCode::kNoNodeUp, "no_node_up", PendingStage::kNodes, false},
    {PendingCode::kNoUsableGpu, "no_usable_gpu", PendingStage::kNodes, false},
    {PendingCode::kVictimsStopping, "victims_stopping", PendingStage::kPreemption, true},
    {PendingCode::kVictimsProtected, "victims_protected", PendingStage::kPreemption, true},
    {PendingCode::kGpusReserved, "gpus_reserved", PendingStage::kReservation, true},
    {PendingCode::kCpuMemBusy, "cpu_mem_busy", PendingStage::kPlacement, true},
    {PendingCode::kCpuMemTooLarge, "cpu_mem_too_large", PendingStage::kPlacement, false},
}};

constexpr bool InEnumOrder() {
  for (std::size_t i = 0; i < kCodes.size(); ++i) {
    if (kCodes[i].code != static_cast<PendingCode>(i)) {
      return false;
    }
  }
  return true;
}
static_assert(InEnumOrder(), "kCodes: one row per PendingCode, in the enum's order");

const CodeInfo& InfoOf(PendingCode code) {
  return kCodes[static_cast<std::size_t>(code)];
}

}  // namespace

std::string_view ToString(PendingStage stage) {
  switch (stage) {
    case PendingStage::kAdmission:
      return "admission";
    case PendingStage::kQuota:
      return "quota";
    case PendingStage::kOrdering:
      return "ordering";
    case PendingStage::kPlacement:
      return "placement";
    case PendingStage::kNodes:
      return "nodes";
    case PendingStage::kPreemption:
      return "preemption";
    case PendingStage::kReservation:
      return "reservation";
  }
  return "unknown";
}

std::string_view ToString(PendingCode code) {
  return InfoOf(code).name;
}

PendingStage StageOf(PendingCode code) {
  return InfoOf(code).stage;
}

bool CanEverFitByDefault(PendingCode code) {
  return InfoOf(code).can_ever_fit;
}

PendingReason PendingReason::Of(PendingCode code, std::string text) {
  return Of(code, CanEverFitByDefault(code), std::move(text));
}

PendingReason PendingReason::Of(PendingCode code, bool can_ever_fit, std::string text) {
  return PendingReason{
      .stage = StageOf(code), .code = code, .can_ever_fit = can_ever_fit, .text = std::move(text)};
}

}  // namespace gf
