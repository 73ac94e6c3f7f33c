#include "scheduler/classes.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

// urgent > high > normal = interactive > batch; urgent preempts batch only.
PolicyConfig FourTiers() {
  PolicyConfig policy;
  policy.classes = {
      PriorityClassPolicy{.name = "batch", .rank = 30},
      PriorityClassPolicy{.name = "normal", .rank = 20, .preempts = {"batch"}},
      PriorityClassPolicy{.name = "urgent", .rank = 0, .preempts = {"batch"}},
      PriorityClassPolicy{.name = "interactive", .rank = 20},
      PriorityClassPolicy{.name = "high", .rank = 10, .preempts = {"normal", "batch"}},
  };
  return policy;
}

TEST(ClassTableTest, NumbersClassesByRankThenNameAndTiersEqualRanksTogether) {
  const PolicyConfig policy = FourTiers();
  const ClassTable classes(policy);
  EXPECT_EQ(classes.Configured(), 5U);
  EXPECT_EQ(classes.Names(), "urgent, high, interactive, normal, batch");
  const auto tier = [&](const std::string& name) {
    return classes.Tier(classes.IndexOf(PriorityClass{.name = name}));
  };
  EXPECT_EQ(tier("urgent"), 0U);
  EXPECT_EQ(tier("high"), 1U);
  EXPECT_EQ(tier("interactive"), 2U);
  EXPECT_EQ(tier("normal"), 2U);  // same rank as interactive: same tier
  EXPECT_EQ(tier("batch"), 3U);
  EXPECT_EQ(classes.Tiers(), 5U);  // the unconfigured class has the last
  EXPECT_EQ(classes.Policy(classes.IndexOf(PriorityClass{.name = "high"})).rank, 10);
}

TEST(ClassTableTest, AClassMissingFromTheConfigGoesLastWithNoRulesAndPreemptsNothing) {
  const PolicyConfig policy = FourTiers();
  const ClassTable classes(policy);
  const ClassIndex gone = classes.IndexOf(PriorityClass::kLow);
  EXPECT_EQ(gone, classes.Unconfigured());
  EXPECT_FALSE(classes.IsConfigured(gone));
  EXPECT_EQ(classes.Tier(gone), classes.Tiers() - 1);
  EXPECT_TRUE(classes.Policy(gone).preempts.empty());
  EXPECT_TRUE(classes.Policy(gone).allowed_users.empty());
  EXPECT_FALSE(classes.Policy(gone).max_time_limit.has_value());
  for (ClassIndex c = 0; c <= classes.Unconfigured(); ++c) {
    EXPECT_FALSE(classes.Preempts(gone, c));
    EXPECT_FALSE(classes.Preempts(c, gone));
  }
}

TEST(ClassTableTest, PreemptsFollowsEachClassList) {
  const PolicyConfig policy = FourTiers();
  const ClassTable classes(policy);
  const auto preempts = [&](const std::string& by, const std::string& victim) {
    return classes.Preempts(classes.IndexOf(PriorityClass{.name = by}),
                            classes.IndexOf(PriorityClass{.name = victim}));
  };
  EXPECT_TRUE(preempts("urgent", "batch"));
  EXPECT_FALSE(preempts("urgent", "normal"));  // urgent names batch only
  EXPECT_TRUE(preempts("high", "normal"));
  EXPECT_FALSE(preempts("high", "interactive"));
  EXPECT_FALSE(preempts("batch", "urgent"));
}

TEST(ClassTableTest, LooksUpExactNamesAndResolvesRunningJobsOnce) {
  const PolicyConfig policy;  // high / normal / low
  ClusterSnapshot cluster;
  cluster.running.resize(2);
  cluster.running[0].priority = PriorityClass::kLow;
  cluster.running[1].priority = PriorityClass{.name = "x"};
  const ClassTable classes(policy, cluster);
  EXPECT_EQ(classes.OfRunning(0), classes.IndexOf(PriorityClass::kLow));
  EXPECT_EQ(classes.OfRunning(1), classes.Unconfigured());
  EXPECT_EQ(classes.IndexOf(PriorityClass::kHigh), 0U);
  EXPECT_EQ(classes.IndexOf(PriorityClass{.name = "hig"}), classes.Unconfigured());
  EXPECT_EQ(classes.IndexOf(PriorityClass{.name = "highs"}), classes.Unconfigured());
  EXPECT_EQ(classes.IndexOf(PriorityClass{.name = "lox"}), classes.Unconfigured());
}

}  // namespace
}  // namespace gf
