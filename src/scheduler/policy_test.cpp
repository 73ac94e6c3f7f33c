#include "scheduler/policy.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(PolicyTest, StockClassesAreHighNormalLowAndEachPreemptsThoseBelow) {
  const PolicyConfig policy;
  ASSERT_EQ(policy.classes.size(), 3U);
  EXPECT_EQ(ClassPolicyFor(policy, PriorityClass::kHigh).preempts,
            (std::vector<std::string>{"normal", "low"}));
  EXPECT_EQ(ClassPolicyFor(policy, PriorityClass::kNormal).preempts,
            (std::vector<std::string>{"low"}));
  EXPECT_TRUE(ClassPolicyFor(policy, PriorityClass::kLow).preempts.empty());
  EXPECT_LT(ClassPolicyFor(policy, PriorityClass::kHigh).rank,
            ClassPolicyFor(policy, PriorityClass::kLow).rank);
  EXPECT_TRUE(ValidatePolicy(policy).ok());
}

TEST(PolicyTest, AClassTheConfigDoesNotListIsPermissive) {
  PolicyConfig policy;
  policy.classes.clear();
  const PriorityClassPolicy cls = ClassPolicyFor(policy, PriorityClass::kNormal);
  EXPECT_EQ(cls.name, "normal");
  EXPECT_EQ(cls.rank, Rank(PriorityClass::kNormal));
  EXPECT_TRUE(cls.preempts.empty());
  EXPECT_TRUE(cls.allowed_users.empty());
}

TEST(PolicyTest, TimeLimitIsDefaultedAndCappedByTheClass) {
  PriorityClassPolicy cls;
  EXPECT_EQ(EffectiveTimeLimit(cls, std::nullopt), std::nullopt);
  EXPECT_EQ(EffectiveTimeLimit(cls, hours(3)), seconds(hours(3)));
  cls.default_time_limit = hours(1);
  cls.max_time_limit = hours(2);
  EXPECT_EQ(EffectiveTimeLimit(cls, std::nullopt), seconds(hours(1)));
  EXPECT_EQ(EffectiveTimeLimit(cls, minutes(30)), seconds(minutes(30)));
  EXPECT_EQ(EffectiveTimeLimit(cls, hours(5)), seconds(hours(2)));
  cls.default_time_limit.reset();
  EXPECT_EQ(EffectiveTimeLimit(cls, std::nullopt), seconds(hours(2)));  // the cap bounds all
}

TEST(PolicyTest, UsageHalvesEveryHalfLife) {
  EXPECT_DOUBLE_EQ(DecayedUsage(1000, Millis(0), hours(1)), 1000);
  EXPECT_DOUBLE_EQ(DecayedUsage(1000, hours(1), hours(1)), 500);
  EXPECT_DOUBLE_EQ(DecayedUsage(1000, hours(3), hours(1)), 125);
  EXPECT_NEAR(DecayedUsage(1000, minutes(30), hours(1)), 707.1, 0.1);
}

TEST(PolicyTest, ValidationNamesTheFieldAndTheFix) {
  const auto error = [](const PolicyConfig& policy) {
    const Status status = ValidatePolicy(policy);
    return status.ok() ? std::string("ok") : status.error().message;
  };
  PolicyConfig policy;
  policy.teams = {TeamPolicy{.name = "ml", .guaranteed_gpus = 8, .max_gpus = 4}};
  EXPECT_EQ(error(policy),
            "teams[ml].max_gpus: 4 is below guaranteed_gpus 8; raise max_gpus or lower the "
            "guarantee");
  policy.teams[0].max_gpus = 16;
  policy.teams.push_back(policy.teams[0]);
  EXPECT_EQ(error(policy), "teams[ml]: listed twice; keep one");
  policy.teams.pop_back();
  policy.teams[0].fair_share_weight = 0;
  EXPECT_EQ(error(policy), "teams[ml].fair_share_weight: must be above 0");
  policy.teams[0].fair_share_weight = 1;
  policy.classes[0].preempts.emplace_back("urgent");
  EXPECT_EQ(error(policy), "classes[high].preempts: no class 'urgent'; name a listed class");
  policy.classes[0].preempts.pop_back();
  policy.classes[0].name = "urgent";
  EXPECT_EQ(error(policy),
            "classes[urgent].name: jobs can name only high, normal or low; rename the class");
  policy.classes[0].name = "high";
  policy.classes[0].default_time_limit = hours(3);
  policy.classes[0].max_time_limit = hours(2);
  EXPECT_EQ(error(policy), "classes[high].default_time_limit: above max_time_limit; lower it");
  policy.classes[0].default_time_limit.reset();
  policy.fair_share.half_life = seconds(0);
  EXPECT_EQ(error(policy), "fair_share.half_life: must be above 0s");
  policy.fair_share.half_life = hours(1);
  policy.backfill.depth = -1;
  EXPECT_EQ(error(policy), "backfill.depth: must be 0 or more");
  policy.backfill.depth = 1;
  EXPECT_EQ(error(policy), "ok");
}

}  // namespace
}  // namespace gf
