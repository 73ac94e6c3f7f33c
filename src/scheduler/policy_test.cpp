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

TEST(PolicyTest, AClassTheConfigDoesNotListIsPermissiveAndRanksLast) {
  PolicyConfig policy;
  policy.classes[2].default_time_limit = hours(1);
  const PriorityClassPolicy cls = ClassPolicyFor(policy, PriorityClass{.name = "gone"});
  EXPECT_EQ(cls.name, "gone");
  EXPECT_EQ(cls.rank, 3);  // after low's 2
  EXPECT_TRUE(cls.preempts.empty());
  EXPECT_TRUE(cls.allowed_users.empty());
  EXPECT_FALSE(cls.default_time_limit.has_value());
}

TEST(PolicyTest, SubmissionsMayNameOnlyAConfiguredClass) {
  PolicyConfig policy;
  EXPECT_TRUE(CheckClassExists(policy, PriorityClass::kLow).ok());
  const Status status = CheckClassExists(policy, PriorityClass{.name = "urgent"});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.error().message,
            "priority: no class 'urgent'; the classes are high, normal, low");
  policy.classes = {PriorityClassPolicy{.name = "batch", .rank = 9},
                    PriorityClassPolicy{.name = "urgent", .rank = 1}};
  EXPECT_TRUE(CheckClassExists(policy, PriorityClass{.name = "urgent"}).ok());
  EXPECT_EQ(CheckClassExists(policy, PriorityClass::kHigh).error().message,
            "priority: no class 'high'; the classes are urgent, batch");
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

TEST(PolicyTest, SharePlacementParsesItsNamesAndDefaultsToFullest) {
  EXPECT_EQ(PolicyConfig{}.share_placement, SharePlacement::kFullest);
  for (const SharePlacement p : {SharePlacement::kFullest, SharePlacement::kFirstFit}) {
    const Result<SharePlacement> parsed = ParseSharePlacement(ToString(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  const Result<SharePlacement> bad = ParseSharePlacement("best-fit");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "'best-fit' is not a placement; use fullest or first-fit");
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
  EXPECT_EQ(error(policy),
            "classes[high].preempts: no class 'urgent'; name a listed class (high, normal, low)");
  policy.classes[0].preempts.pop_back();
  policy.classes[2].preempts.emplace_back("normal");
  EXPECT_EQ(error(policy),
            "classes[low].preempts: 'normal' has rank 1, not after low's rank 2; a class may "
            "preempt only classes ranked after it");
  policy.classes[2].preempts.back() = "low";
  EXPECT_EQ(error(policy),
            "classes[low].preempts: 'low' has rank 2, not after low's rank 2; a class may "
            "preempt only classes ranked after it");
  policy.classes[2].preempts.clear();
  policy.classes[0].name = "Urgent!";
  EXPECT_EQ(error(policy),
            "classes[Urgent!].name: not a class name; use 1 to 32 lower-case letters, digits, "
            "'-' or '_'");
  policy.classes[0].name = "urgent";  // any well-formed name: classes are the admin's
  policy.classes[0].preempts = {"low"};
  EXPECT_EQ(error(policy), "ok");
  policy.classes.push_back(policy.classes[1]);
  EXPECT_EQ(error(policy), "classes[normal]: listed twice; keep one");
  policy.classes.pop_back();
  const std::vector<PriorityClassPolicy> kept = policy.classes;
  policy.classes.clear();
  EXPECT_EQ(error(policy), "classes: none defined; define at least one class");
  policy.classes = kept;
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
