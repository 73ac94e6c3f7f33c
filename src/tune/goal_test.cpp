#include "tune/goal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf::tune {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text) {
  auto goal = ParseGoal(text);
  EXPECT_FALSE(goal.ok()) << text;
  return goal.ok() ? "" : goal.error().message;
}

TEST(GoalTest, ParsesBoundsOnAClassAndOnEveryJob) {
  auto goal = ParseGoal(" high.p95_wait < 30m ");
  ASSERT_TRUE(goal.ok()) << goal.error().message;
  EXPECT_EQ(goal->text, "high.p95_wait < 30m");
  EXPECT_EQ(goal->kind, GoalKind::kBound);
  EXPECT_EQ(goal->class_name, "high");
  EXPECT_EQ(goal->metric, Metric::kP95Wait);
  EXPECT_EQ(goal->comparison, Comparison::kBelow);
  EXPECT_DOUBLE_EQ(goal->bound, 1800);

  goal = ParseGoal("utilisation>=80%");
  ASSERT_TRUE(goal.ok());
  EXPECT_EQ(goal->class_name, "");
  EXPECT_EQ(goal->comparison, Comparison::kAtLeast);
  EXPECT_DOUBLE_EQ(goal->bound, 0.8);
  EXPECT_DOUBLE_EQ(ParseGoal("utilization>0.75")->bound, 0.75);
  EXPECT_EQ(ParseGoal("avg_jct<=1h30m")->comparison, Comparison::kAtMost);
  EXPECT_DOUBLE_EQ(ParseGoal("avg_jct<=1h30m")->bound, 5400);
  EXPECT_DOUBLE_EQ(ParseGoal("preemptions<10")->bound, 10);
  EXPECT_EQ(ParseGoal("low.avg_slowdown>1.5")->comparison, Comparison::kAbove);
}

TEST(GoalTest, ParsesObjectivesInBothSpellings) {
  auto goal = ParseGoal("maximize utilisation");
  ASSERT_TRUE(goal.ok());
  EXPECT_EQ(goal->kind, GoalKind::kMaximize);
  EXPECT_EQ(goal->metric, Metric::kUtilisation);
  goal = ParseGoal("minimise high.avg_jct");
  ASSERT_TRUE(goal.ok());
  EXPECT_EQ(goal->kind, GoalKind::kMinimize);
  EXPECT_EQ(goal->class_name, "high");
  EXPECT_EQ(goal->metric, Metric::kAvgJct);
}

TEST(GoalTest, BadGoalsNameTheGoalAndTheAcceptedForm) {
  const std::string form = "write [CLASS.]METRIC<VALUE";
  EXPECT_THAT(ErrorOf("high.p95_wiat<30m"),
              HasSubstr("goal 'high.p95_wiat<30m': no metric 'p95_wiat'; " + form));
  EXPECT_THAT(ErrorOf("high.p95_wiat<30m"), HasSubstr("metrics: avg_wait, median_wait, p95_wait"));
  EXPECT_THAT(ErrorOf("high.p95_wait<30 minutes"),
              HasSubstr("goal 'high.p95_wait<30 minutes': '30 minutes' is not a duration"));
  EXPECT_THAT(ErrorOf("high.p95_wait"), HasSubstr("no comparison (<, <=, >, >=)"));
  EXPECT_THAT(ErrorOf("high.p95_wait<"), HasSubstr("no value after the comparison"));
  EXPECT_THAT(ErrorOf("utilisation>120%"), HasSubstr("'120%' is not a ratio"));
  EXPECT_THAT(ErrorOf("high.utilisation>0.5"),
              HasSubstr("utilisation is a figure of the whole cluster, not of one class"));
  EXPECT_THAT(ErrorOf(".avg_jct<1h"), HasSubstr("no class before '.'"));
  EXPECT_THAT(ErrorOf("maximize"), HasSubstr("no metric;"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("goal '': empty"));
}

TEST(GoalTest, ClassesMustBeThePolicys) {
  const PolicyConfig stock;
  auto goals = ParseGoals({"high.p95_wait<30m", "maximize utilisation"}, stock);
  ASSERT_TRUE(goals.ok());
  EXPECT_EQ(goals->size(), 2U);
  goals = ParseGoals({"urgent.p95_wait<1h"}, stock);
  ASSERT_FALSE(goals.ok());
  EXPECT_EQ(goals.error().message,
            "goal 'urgent.p95_wait<1h': no class 'urgent'; the classes are high, normal, low");
}

TEST(GoalTest, ValuesComeFromTheSummaryOrItsClass) {
  sim::Summary summary;
  summary.utilisation = 0.9;
  summary.queueing_s.p95 = 100;
  summary.classes.push_back(
      sim::ClassFigures{.name = "high", .jobs = 2, .finished = 2, .queueing_s = {.p95 = 40}});
  EXPECT_EQ(ValueOf(*ParseGoal("p95_wait<1h"), summary), 100);
  EXPECT_EQ(ValueOf(*ParseGoal("high.p95_wait<1h"), summary), 40);
  EXPECT_EQ(ValueOf(*ParseGoal("low.p95_wait<1h"), summary), std::nullopt);  // no low job
  EXPECT_EQ(ValueOf(*ParseGoal("maximize utilisation"), summary), 0.9);
  EXPECT_TRUE(Meets(*ParseGoal("high.p95_wait<41s"), 40));
  EXPECT_FALSE(Meets(*ParseGoal("high.p95_wait<40s"), 40));
  EXPECT_TRUE(Meets(*ParseGoal("high.p95_wait<=40s"), 40));
  EXPECT_EQ(FormatValue(Metric::kP95Wait, 750), "12m30s");
  EXPECT_EQ(FormatValue(Metric::kUtilisation, 0.9321), "93.2 %");
  EXPECT_EQ(FormatValue(Metric::kPreemptions, 3), "3");
}

}  // namespace
}  // namespace gf::tune
