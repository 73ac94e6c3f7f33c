#include "model/pending_reason.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace gf {
namespace {

constexpr int kCodes = static_cast<int>(PendingCode::kGpusReserved) + 1;

TEST(PendingReasonTest, EveryCodeHasItsOwnStableName) {
  std::set<std::string_view> names;
  for (int i = 0; i < kCodes; ++i) {
    const std::string_view name = ToString(static_cast<PendingCode>(i));
    EXPECT_FALSE(name.empty()) << i;
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string_view::npos)
        << name;
    EXPECT_TRUE(names.insert(name).second) << "two codes named " << name;
  }
  // Programs match on these: a renamed code breaks them (the table's rows must follow the
  // enum's order, which these spot checks catch too).
  EXPECT_EQ(ToString(PendingCode::kHeld), "held");
  EXPECT_EQ(ToString(PendingCode::kDependency), "dependency");
  EXPECT_EQ(ToString(PendingCode::kArrayLimit), "array_limit");
  EXPECT_EQ(ToString(PendingCode::kBudgetExhausted), "budget_exhausted");
  EXPECT_EQ(ToString(PendingCode::kBehindEarlierJob), "behind_earlier_job");
  EXPECT_EQ(ToString(PendingCode::kNoFreeGpus), "no_free_gpus");
  EXPECT_EQ(ToString(PendingCode::kNoNodeUp), "no_node_up");
  EXPECT_EQ(ToString(PendingCode::kGpusReserved), "gpus_reserved");
}

TEST(PendingReasonTest, EachCodeBelongsToItsStage) {
  EXPECT_EQ(StageOf(PendingCode::kHeld), PendingStage::kAdmission);
  EXPECT_EQ(StageOf(PendingCode::kGangStopping), PendingStage::kAdmission);
  EXPECT_EQ(StageOf(PendingCode::kTeamMaxGpus), PendingStage::kQuota);
  EXPECT_EQ(StageOf(PendingCode::kBehindEarlierJob), PendingStage::kOrdering);
  EXPECT_EQ(StageOf(PendingCode::kMpsOtherUser), PendingStage::kPlacement);
  EXPECT_EQ(StageOf(PendingCode::kNoUsableGpu), PendingStage::kNodes);
  EXPECT_EQ(StageOf(PendingCode::kVictimsProtected), PendingStage::kPreemption);
  EXPECT_EQ(StageOf(PendingCode::kGpusReserved), PendingStage::kReservation);
  EXPECT_EQ(ToString(PendingStage::kAdmission), "admission");
  EXPECT_EQ(ToString(PendingStage::kNodes), "nodes");
  EXPECT_EQ(ToString(PendingStage::kReservation), "reservation");
}

TEST(PendingReasonTest, OfTakesTheStageAndTheDefaultFromTheCode) {
  const PendingReason busy = PendingReason::Of(PendingCode::kNoFreeGpus, "needs 4 GPUs; 0 free");
  EXPECT_EQ(busy.stage, PendingStage::kPlacement);
  EXPECT_EQ(busy.code, PendingCode::kNoFreeGpus);
  EXPECT_TRUE(busy.can_ever_fit);
  EXPECT_EQ(busy.text, "needs 4 GPUs; 0 free");
  EXPECT_FALSE(PendingReason::Of(PendingCode::kTooLarge, "x").can_ever_fit);
  EXPECT_FALSE(PendingReason::Of(PendingCode::kNoNodeUp, "no node is up").can_ever_fit);
  const PendingReason over = PendingReason::Of(PendingCode::kTeamMaxGpus, false, "y");
  EXPECT_EQ(over.stage, PendingStage::kQuota);
  EXPECT_FALSE(over.can_ever_fit);
}

}  // namespace
}  // namespace gf
