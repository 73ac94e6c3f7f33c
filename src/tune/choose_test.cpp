#include "tune/choose.h"

#include <gtest/gtest.h>

namespace gf::tune {
namespace {

// Candidates named a, b, c, ... with `changes[i]` changes each.
std::vector<Candidate> Named(const std::vector<int>& changes) {
  std::vector<Candidate> out;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    out.push_back(Candidate{.name = std::string(1, static_cast<char>('a' + i)),
                            .policy = {},
                            .changes = std::vector<Change>(static_cast<std::size_t>(changes[i]))});
  }
  return out;
}

std::vector<Goal> Goals(const std::vector<std::string>& texts) {
  std::vector<Goal> goals;
  goals.reserve(texts.size());
  for (const std::string& text : texts) {
    goals.push_back(*ParseGoal(text));
  }
  return goals;
}

// A summary with these figures: p95 wait of the high class, utilisation.
sim::Summary With(double high_p95_wait, double utilisation) {
  sim::Summary s;
  s.utilisation = utilisation;
  s.classes.push_back(
      sim::ClassFigures{.name = "high", .jobs = 1, .queueing_s = {.p95 = high_p95_wait}});
  return s;
}

std::vector<Measured> MeasureAll(const std::vector<Goal>& goals,
                                 const std::vector<sim::Summary>& summaries) {
  std::vector<Measured> out;
  out.reserve(summaries.size());
  for (const sim::Summary& s : summaries) {
    out.push_back(Measure(goals, s));
  }
  return out;
}

TEST(ChooseTest, BoundsFirstThenTheObjectiveThenTheFewestChanges) {
  const auto goals = Goals({"high.p95_wait<30m", "maximize utilisation"});
  // a misses the bound; b and c meet it, c with the better utilisation.
  const auto m = MeasureAll(goals, {With(3600, 0.99), With(600, 0.80), With(1200, 0.90)});
  EXPECT_EQ(m[0].missed, 1);
  EXPECT_DOUBLE_EQ(m[0].shortfall, 1.0);
  const Choice choice = Choose(goals, Named({0, 1, 1}), m);
  EXPECT_EQ(choice.index, 2U);
  EXPECT_TRUE(choice.meets_all);
}

TEST(ChooseTest, ObjectivesWithinOnePercentTieAndTheCurrentPolicyWins) {
  const auto goals = Goals({"maximize utilisation"});
  const auto m = MeasureAll(goals, {With(0, 0.900), With(0, 0.905), With(0, 0.95)});
  EXPECT_EQ(Choose(goals, Named({0, 1, 1}), m).index, 2U);
  const auto close = MeasureAll(goals, {With(0, 0.900), With(0, 0.905)});
  EXPECT_EQ(Choose(goals, Named({0, 1}), close).index, 0U);  // 0.5 % better: not worth a change
  // With no objective, the fewest changes among those that meet the bounds.
  const auto bounds = Goals({"high.p95_wait<30m"});
  EXPECT_EQ(
      Choose(bounds, Named({1, 0, 1}), MeasureAll(bounds, {With(1, 0), With(2, 0), With(3, 0)}))
          .index,
      1U);
}

TEST(ChooseTest, WhenNoneMeetsTheBoundsTheClosestIsFlagged) {
  const auto goals = Goals({"high.p95_wait<10m", "utilisation>0.9"});
  // a misses both; b misses one by 100 %; c misses one by 50 %.
  const auto m = MeasureAll(goals, {With(3600, 0.5), With(1200, 0.95), With(900, 0.95)});
  const Choice choice = Choose(goals, Named({0, 1, 1}), m);
  EXPECT_EQ(choice.index, 2U);
  EXPECT_FALSE(choice.meets_all);
}

TEST(ChooseTest, ABoundOnAClassThatRanNoJobIsMet) {
  const auto goals = Goals({"low.p95_wait<1m"});
  const auto m = MeasureAll(goals, {With(3600, 0.5)});
  EXPECT_EQ(m[0].values[0], std::nullopt);
  EXPECT_TRUE(m[0].met[0]);
  EXPECT_TRUE(Choose(goals, Named({0}), m).meets_all);
}

}  // namespace
}  // namespace gf::tune
