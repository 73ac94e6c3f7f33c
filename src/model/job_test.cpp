#include "model/job.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(JobStateTest, RoundTripsNames) {
  for (JobState s : {JobState::kPending, JobState::kStarting, JobState::kRunning,
                     JobState::kCompleted, JobState::kFailed, JobState::kCancelled,
                     JobState::kTimeout, JobState::kPreempted, JobState::kNodeFail}) {
    EXPECT_EQ(*ParseJobState(ToString(s)), s);
  }
  EXPECT_EQ(*ParseJobState("running"), JobState::kRunning);
  EXPECT_FALSE(ParseJobState("DONE").ok());
}

TEST(JobStateTest, TransitionsFollowTheStateMachine) {
  EXPECT_TRUE(CanTransition(JobState::kPending, JobState::kStarting));
  EXPECT_TRUE(CanTransition(JobState::kStarting, JobState::kRunning));
  EXPECT_TRUE(CanTransition(JobState::kRunning, JobState::kTimeout));
  EXPECT_TRUE(CanTransition(JobState::kPending, JobState::kCancelled));
  EXPECT_FALSE(CanTransition(JobState::kPending, JobState::kRunning));
  EXPECT_FALSE(CanTransition(JobState::kCompleted, JobState::kRunning));
  EXPECT_FALSE(CanTransition(JobState::kCancelled, JobState::kPending));
  EXPECT_TRUE(IsTerminal(JobState::kTimeout));
  EXPECT_FALSE(IsTerminal(JobState::kPreempted));
}

TEST(PriorityTest, ParsesAndRanks) {
  EXPECT_EQ(*ParsePriorityClass("high"), PriorityClass::kHigh);
  EXPECT_LT(Rank(PriorityClass::kHigh), Rank(PriorityClass::kLow));
  auto bad = ParsePriorityClass("urgent");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("high, normal or low"), std::string::npos);
}

JobSpec Valid() {
  JobSpec s;
  s.argv = {"true"};
  s.workdir = "/tmp";
  return s;
}

TEST(ValidateSpecTest, NamesTheField) {
  EXPECT_TRUE(ValidateSpec(Valid()).ok());
  auto s = Valid();
  s.request.gpus = -1;
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("gpus:", 0), 0u);
  s = Valid();
  s.argv.clear();
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("command:", 0), 0u);
  s = Valid();
  s.workdir = "rel";
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("workdir:", 0), 0u);
  s = Valid();
  s.env = {{"1BAD", "x"}};
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("env:", 0), 0u);
}

}  // namespace
}  // namespace gf
