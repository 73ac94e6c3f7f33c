#include "lifecycle/pass_planner.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Time At(Millis t) {
  return Time(t);
}

// A planner past its first full pass, as after a shell's first turn.
PassPlanner Settled(PassRules rules = {}) {
  PassPlanner planner(rules);
  planner.StartFull();
  return planner;
}

TEST(PassPlannerTest, TheFirstPassIsFullThenNothingUntilSomethingHappens) {
  PassPlanner planner;
  EXPECT_EQ(planner.Plan(At(seconds(0))), PassKind::kFull);  // the scheduler has no state yet
  planner.StartFull();
  EXPECT_EQ(planner.Plan(At(seconds(5))), PassKind::kNone);
  EXPECT_EQ(planner.WakeAt(), std::nullopt);
}

TEST(PassPlannerTest, EndsComeTogetherBeforeArrivalsAndAFullPassIsDueAnIntervalAfter) {
  PassPlanner planner = Settled();
  planner.Arrival(JobId(7));
  planner.End(JobId(3));
  planner.Arrival(JobId(5));
  planner.End(JobId(1));
  EXPECT_EQ(planner.Plan(At(seconds(10))), PassKind::kIncremental);
  const IncrementalBatch batch = planner.StartIncremental();
  planner.IncrementalRan(At(seconds(10)), 2);
  EXPECT_EQ(batch.ends, (std::vector<JobId>{JobId(3), JobId(1)}));
  EXPECT_EQ(batch.arrivals, (std::vector<JobId>{JobId(7), JobId(5)}));
  // Due at 10 s + 1 s; a second incremental pass before then does not push it back.
  EXPECT_EQ(planner.WakeAt(), At(seconds(11)));
  planner.Arrival(JobId(8));
  EXPECT_EQ(planner.Plan(At(milliseconds(10500))), PassKind::kIncremental);
  (void)planner.StartIncremental();
  planner.IncrementalRan(At(milliseconds(10500)), 1);
  EXPECT_EQ(planner.WakeAt(), At(seconds(11)));
  EXPECT_EQ(planner.Plan(At(milliseconds(10999))), PassKind::kNone);
  EXPECT_EQ(planner.Plan(At(seconds(11))), PassKind::kFull);
  planner.StartFull();
  EXPECT_EQ(planner.WakeAt(), std::nullopt);
}

TEST(PassPlannerTest, NoFullPassIsOwedWhenIncrementalPassesLeaveNothingWaiting) {
  PassPlanner planner = Settled();
  planner.Arrival(JobId(1));
  (void)planner.StartIncremental();
  planner.IncrementalRan(At(seconds(10)), 0);  // it started: nothing to refresh
  EXPECT_EQ(planner.WakeAt(), std::nullopt);
  EXPECT_EQ(planner.Plan(At(seconds(20))), PassKind::kNone);
}

TEST(PassPlannerTest, AChangeTheSchedulerIsNotToldOfTakesAFullPass) {
  PassPlanner planner = Settled();
  planner.Arrival(JobId(1));
  planner.NeedFull();
  EXPECT_TRUE(planner.FullNeeded());
  EXPECT_EQ(planner.Plan(At(seconds(1))), PassKind::kFull);
  planner.StartFull();  // the full pass decides the arrival too
  EXPECT_FALSE(planner.FullNeeded());
  EXPECT_EQ(planner.Plan(At(seconds(1))), PassKind::kNone);
}

TEST(PassPlannerTest, MoreEventsThanOneFullPassCostsTakeAFullPass) {
  PassPlanner planner = Settled(PassRules{.max_incremental_events = 3});
  for (int i = 1; i <= 3; ++i) {
    planner.Arrival(JobId(i));
  }
  EXPECT_EQ(planner.Plan(At(seconds(1))), PassKind::kIncremental);
  planner.Arrival(JobId(4));
  EXPECT_EQ(planner.Plan(At(seconds(1))), PassKind::kFull);
}

TEST(PassPlannerTest, BudgetsAreAskedOnlyWhenThePassWouldBeIncremental) {
  PassPlanner planner = Settled();
  int asked = 0;
  const auto crossed = [&] {
    ++asked;
    return true;
  };
  EXPECT_EQ(planner.Plan(At(seconds(1)), crossed), PassKind::kNone);  // nothing to decide
  planner.NeedFull();
  EXPECT_EQ(planner.Plan(At(seconds(1)), crossed), PassKind::kFull);
  EXPECT_EQ(asked, 0);
  planner.StartFull();
  planner.End(JobId(2));
  EXPECT_EQ(planner.Plan(At(seconds(1)), crossed), PassKind::kFull);  // a team crossed its budget
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(planner.Plan(At(seconds(1)), [] { return false; }), PassKind::kIncremental);
}

TEST(PassPlannerTest, AnArmedMomentTakesAFullPassThenAndKeepsTheEarliest) {
  PassPlanner planner = Settled();
  planner.ArmAt(At(seconds(600)));
  planner.ArmAt(At(seconds(900)));  // later: the earlier stays
  EXPECT_EQ(planner.ArmedAt(), At(seconds(600)));
  planner.ArmAt(At(seconds(300)));
  EXPECT_EQ(planner.WakeAt(), At(seconds(300)));
  EXPECT_EQ(planner.Plan(At(seconds(299))), PassKind::kNone);
  EXPECT_EQ(planner.Plan(At(seconds(300))), PassKind::kFull);
  planner.StartFull();  // the shell arms again from what that pass leaves waiting
  EXPECT_EQ(planner.ArmedAt(), std::nullopt);
}

TEST(PassPlannerTest, TheWakeUpIsTheEarlierOfTheDueFullPassAndTheArmedMoment) {
  PassPlanner planner = Settled();
  planner.ArmAt(At(seconds(20)));
  planner.End(JobId(1));
  (void)planner.StartIncremental();
  planner.IncrementalRan(At(seconds(10)), 1);
  EXPECT_EQ(planner.WakeAt(), At(seconds(11)));
  planner.StartFull();
  planner.ArmAt(At(seconds(5)));
  planner.Arrival(JobId(2));
  (void)planner.StartIncremental();
  planner.IncrementalRan(At(seconds(4)), 1);
  EXPECT_EQ(planner.WakeAt(), At(seconds(5)));
}

}  // namespace
}  // namespace gf
