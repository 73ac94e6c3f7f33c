#include "lifecycle/gang_rules.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

GangMemberState Member(std::int64_t job, int rank, JobState state, std::string reason = "") {
  return GangMemberState{.job = JobId(job),
                         .rank = rank,
                         .size = 3,
                         .state = state,
                         .reason = std::move(reason),
                         .stopping = std::nullopt};
}

GangMemberState Stopping(GangMemberState member, JobState final_state, std::string cause) {
  member.stopping = StopIntent{.final_state = final_state, .cause = std::move(cause)};
  return member;
}

TEST(GangRulesTest, AWholeGangNeedsNothing) {
  EXPECT_TRUE(SettleGang({Member(1, 0, JobState::kRunning),
                          Member(2, 1, JobState::kRunning),
                          Member(3, 2, JobState::kRunning)})
                  .empty());
  EXPECT_TRUE(SettleGang({Member(1, 0, JobState::kCompleted),
                          Member(2, 1, JobState::kRunning),
                          Member(3, 2, JobState::kCompleted)})
                  .empty());
}

TEST(GangRulesTest, AFailedMemberCancelsTheOthersEachInItsOwnWay) {
  // Given out of rank order: the rules go by rank.
  const auto actions = SettleGang(
      {Stopping(Member(3, 2, JobState::kRunning), JobState::kPreempted, "preempted by job 9"),
       Member(1, 0, JobState::kFailed, "exit 1"),
       Member(2, 1, JobState::kRunning)});
  ASSERT_EQ(actions.size(), 2U);
  const std::string cause = "its gang's member 1 (node 1 of 3) ended FAILED (exit 1)";
  EXPECT_EQ(actions[0].job, JobId(2));
  EXPECT_EQ(actions[0].step, GangStep::kStopToCancel);
  EXPECT_EQ(actions[0].cause, cause);
  EXPECT_EQ(actions[1].job, JobId(3));
  EXPECT_EQ(actions[1].step, GangStep::kRetargetToCancel);  // it was to be requeued: no more
}

TEST(GangRulesTest, AMemberBeingStoppedToEndCancelsAPendingOne) {
  const auto actions = SettleGang(
      {Stopping(Member(1, 0, JobState::kRunning), JobState::kTimeout, "time limit 1h reached"),
       Member(2, 1, JobState::kPending),
       Stopping(Member(3, 2, JobState::kRunning), JobState::kCancelled, "cancelled")});
  ASSERT_EQ(actions.size(), 1U);
  EXPECT_EQ(actions[0].job, JobId(2));
  EXPECT_EQ(actions[0].step, GangStep::kCancel);
  EXPECT_EQ(actions[0].cause, "its gang's member 1 (node 1 of 3) is being stopped ()");
}

TEST(GangRulesTest, ARequeuedMemberTakesTheRunningOnesBackToTheQueue) {
  const auto actions = SettleGang({Member(1, 0, JobState::kRunning),
                                   Member(2, 1, JobState::kPending, "requeued after node failure"),
                                   Member(3, 2, JobState::kStarting)});
  ASSERT_EQ(actions.size(), 2U);
  EXPECT_EQ(actions[0].job, JobId(1));
  EXPECT_EQ(actions[0].step, GangStep::kStopToRequeue);
  EXPECT_EQ(actions[0].cause,
            "requeued with its gang's member 2 (node 2 of 3) (requeued after node failure)");
  EXPECT_EQ(actions[1].job, JobId(3));
  // Settled: every member pending or being stopped to be requeued.
  EXPECT_TRUE(SettleGang({Stopping(Member(1, 0, JobState::kRunning), JobState::kPreempted, "x"),
                          Member(2, 1, JobState::kPending),
                          Stopping(Member(3, 2, JobState::kStarting), JobState::kPreempted, "x")})
                  .empty());
}

}  // namespace
}  // namespace gf
