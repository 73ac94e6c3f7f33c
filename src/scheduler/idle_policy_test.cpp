#include "scheduler/idle_policy.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const IdleRule kClass{.after = minutes(30),
                      .interactive_after = hours(2),
                      .grace = minutes(10),
                      .util_below_pct = 5,
                      .action = IdleAction::kRequeue};

TEST(IdlePolicyTest, TheClassRuleAppliesWithDefaultsForWhatItLeavesOut) {
  EXPECT_EQ(ResolveIdleRule(kClass, nullptr, false, true),
            (IdleReaping{.after = minutes(30),
                         .grace = minutes(10),
                         .util_below_pct = 5,
                         .action = IdleAction::kRequeue}));
  EXPECT_EQ(ResolveIdleRule(IdleRule{.after = minutes(30)}, nullptr, false, true),
            (IdleReaping{.after = minutes(30),
                         .grace = kDefaultIdleGrace,
                         .util_below_pct = kDefaultIdleUtilBelowPct,
                         .action = IdleAction::kRequeue}));
}

TEST(IdlePolicyTest, NoThresholdAZeroOneOrAnOptOutMeansNeverReaped) {
  EXPECT_FALSE(ResolveIdleRule(IdleRule{}, nullptr, false, true));
  EXPECT_FALSE(ResolveIdleRule(kClass, nullptr, false, /*idle_reap=*/false));
  const IdleRule off{.after = seconds(0)};
  EXPECT_FALSE(ResolveIdleRule(kClass, &off, false, true));  // the team turns it off
}

TEST(IdlePolicyTest, InteractiveJobsTakeTheInteractiveThresholdOrElseThePlainOne) {
  EXPECT_EQ(ResolveIdleRule(kClass, nullptr, true, true)->after, hours(2));
  EXPECT_EQ(ResolveIdleRule(IdleRule{.after = minutes(30)}, nullptr, true, true)->after,
            minutes(30));
  // A team's interactive value beats the class's; a team's plain one does not.
  const IdleRule team{.after = minutes(5), .interactive_after = hours(4)};
  EXPECT_EQ(ResolveIdleRule(kClass, &team, true, true)->after, hours(4));
  const IdleRule plain_team{.after = minutes(5)};
  EXPECT_EQ(ResolveIdleRule(kClass, &plain_team, true, true)->after, hours(2));
  EXPECT_EQ(ResolveIdleRule(kClass, &plain_team, false, true)->after, minutes(5));
}

TEST(IdlePolicyTest, ATeamOverridesItsClassKeyByKey) {
  const IdleRule team{.util_below_pct = 20, .action = IdleAction::kCancel};
  EXPECT_EQ(ResolveIdleRule(kClass, &team, false, true),
            (IdleReaping{.after = minutes(30),
                         .grace = minutes(10),
                         .util_below_pct = 20,
                         .action = IdleAction::kCancel}));
}

TEST(IdlePolicyTest, PolicyLookupByClassAndTeamWithOtherTeamsForTheRest) {
  PolicyConfig policy;
  EXPECT_FALSE(AnyIdleReaping(policy));
  policy.classes[1].idle = kClass;  // normal
  policy.teams.push_back(TeamPolicy{.name = "ml", .idle = IdleRule{.after = minutes(1)}});
  policy.other_teams.idle = IdleRule{.grace = seconds(0)};
  EXPECT_TRUE(AnyIdleReaping(policy));
  JobSpec spec;
  spec.team = "ml";
  EXPECT_EQ(IdleReapingFor(policy, spec)->after, minutes(1));
  spec.team = "cv";
  EXPECT_EQ(IdleReapingFor(policy, spec)->after, minutes(30));
  EXPECT_EQ(IdleReapingFor(policy, spec)->grace, seconds(0));
  spec.priority = PriorityClass::kLow;
  EXPECT_FALSE(IdleReapingFor(policy, spec));
}

TEST(IdlePolicyTest, OptOutNeedsTheClassToAllowIt) {
  PolicyConfig policy;
  const Status refused = CheckIdleOptOut(policy, PriorityClass::kNormal);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "--no-reap: class 'normal' does not let its jobs opt out of idle reaping; submit "
            "without --no-reap (keep the GPUs busy, or use --interactive for a session), or "
            "use a class whose config sets idle_opt_out = true");
  policy.classes[1].idle_opt_out = true;
  EXPECT_TRUE(CheckIdleOptOut(policy, PriorityClass::kNormal).ok());
}

TEST(IdlePolicyTest, ValidationNamesTheField) {
  PolicyConfig policy;
  policy.classes[0].idle.util_below_pct = 101;
  EXPECT_EQ(ValidatePolicy(policy).error().message,
            "classes[high].idle_util_below: 101 is not a percentage; use 0 to 100 (0: only a "
            "GPU without processes counts as idle)");
  policy.classes[0].idle = IdleRule{};
  policy.teams.push_back(TeamPolicy{.name = "ml", .idle = IdleRule{.grace = seconds(-1)}});
  EXPECT_EQ(ValidatePolicy(policy).error().message, "teams[ml].idle_grace: must be 0s or more");
}

TEST(IdlePolicyTest, ActionNames) {
  EXPECT_EQ(ParseIdleAction("cancel").value(), IdleAction::kCancel);
  EXPECT_EQ(ToString(*ParseIdleAction("requeue")), "requeue");
  EXPECT_EQ(ParseIdleAction("delete_pod").value(), IdleAction::kDeletePod);
  EXPECT_EQ(ToString(*ParseIdleAction("scale_owner")), "scale_owner");
  EXPECT_FALSE(ParseIdleAction("kill").ok());
  EXPECT_TRUE(IsPodAction(IdleAction::kScaleOwner));
  EXPECT_FALSE(IsPodAction(IdleAction::kCancel));
}

// delete_pod and scale_owner stop Kubernetes pods: a server that follows none refuses them,
// naming the table and the fix.
TEST(IdlePolicyTest, PodActionsOnlyOnAKubernetesServer) {
  PolicyConfig policy;
  EXPECT_FALSE(AnyPodAction(policy));
  policy.teams.push_back(
      TeamPolicy{.name = "dev", .idle = IdleRule{.action = IdleAction::kCancel}});
  EXPECT_TRUE(CheckPodActions(policy, /*kubernetes=*/false).ok());
  policy.teams.push_back(
      TeamPolicy{.name = "notebooks", .idle = IdleRule{.action = IdleAction::kDeletePod}});
  EXPECT_TRUE(AnyPodAction(policy));
  EXPECT_TRUE(CheckPodActions(policy, /*kubernetes=*/true).ok());
  const Status refused = CheckPodActions(policy, /*kubernetes=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "teams[notebooks].idle_action: \"delete_pod\" stops Kubernetes pods, and only "
            "`gpufleet server --kubernetes` follows pods; use \"requeue\" or \"cancel\" here");
}

}  // namespace
}  // namespace gf
