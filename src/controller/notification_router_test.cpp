// NotificationRouter alone (notification_router.h): matching a notification to subscriptions,
// the subscriptions' bookkeeping (who sees and removes which), a new subscription's checks,
// budget thresholds crossed once per team, threshold and period (also across a restart), and
// the notifications about a job.
#include "controller/notification_router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/controller_test_util.h"

namespace gf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;

Subscription Sub(std::string id,
                 std::string owner,
                 SubscriptionScope scope,
                 std::string team = "",
                 std::vector<NotifyKind> kinds = {}) {
  return Subscription{.id = std::move(id),
                      .owner = std::move(owner),
                      .scope = scope,
                      .team = std::move(team),
                      .channel = NotifyChannel::kEmail,
                      .target = "x@example.com",
                      .kinds = std::move(kinds)};
}

std::vector<std::string> Ids(const std::vector<Subscription>& subs) {
  std::vector<std::string> ids;
  ids.reserve(subs.size());
  for (const Subscription& sub : subs) {
    ids.push_back(sub.id);
  }
  return ids;
}

TeamQuota Use(std::string team, double used, std::optional<double> budget, std::string rule = "") {
  return TeamQuota{.team = std::move(team),
                   .budget_gpu_hours = budget,
                   .used_gpu_hours = used,
                   .over_budget = rule.empty() ? "borrow_only" : std::move(rule)};
}

class NotificationRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.Load({Sub("sub-a", "alice", SubscriptionScope::kUser),
                  Sub("sub-b", "bob", SubscriptionScope::kTeam, "vision"),
                  Sub("sub-c", "root", SubscriptionScope::kCluster, "", {NotifyKind::kGpuFailed}),
                  Sub("sub-d", "alice", SubscriptionScope::kUser, "", {NotifyKind::kJobFailed})},
                 period_,
                 {});
  }

  ManualClock clock_;
  Time period_ = clock_.Now();
  NotificationRouter router_;
  Caller root_ = TestCaller(0, "root");
  Caller alice_ = TestCaller(1000, "alice");
  Caller bob_ = TestCaller(1001, "bob");
};

TEST_F(NotificationRouterTest, RoutesToTheSubscriptionsThatMatch) {
  const Notification end{.kind = NotifyKind::kJobEnd, .user = "alice", .team = "vision"};
  EXPECT_THAT(Ids(router_.Route(end)), ElementsAre("sub-a", "sub-b"));  // sub-d: job_failed only
  const Notification failed{.kind = NotifyKind::kJobFailed, .user = "alice", .team = "nlp"};
  EXPECT_THAT(Ids(router_.Route(failed)), ElementsAre("sub-a", "sub-d"));
  // A GPU without a job: no user, no team; only the cluster subscription for gpu_failed.
  const Notification gpu{.kind = NotifyKind::kGpuFailed, .node = "gpu01"};
  EXPECT_THAT(Ids(router_.Route(gpu)), ElementsAre("sub-c"));
  const Notification carol{.kind = NotifyKind::kJobEnd, .user = "carol"};
  EXPECT_THAT(router_.Route(carol), IsEmpty());
}

// A subscription to one job (#SBATCH --mail-type): that job's notifications, or every task's of
// the array it names; removed with its job.
TEST_F(NotificationRouterTest, AJobSubscriptionHearsOfItsJobOrItsArrayOnly) {
  Subscription job = Sub("sub-j", "bob", SubscriptionScope::kJob);
  job.job = JobId(40);
  router_.Add(job);
  const Notification own{.kind = NotifyKind::kJobEnd, .job = JobId(40), .user = "bob"};
  EXPECT_THAT(Ids(router_.Route(own)), ElementsAre("sub-j"));
  const Notification task{
      .kind = NotifyKind::kJobEnd, .job = JobId(43), .array_job = JobId(40), .user = "bob"};
  EXPECT_THAT(Ids(router_.Route(task)), ElementsAre("sub-j"));
  const Notification other{.kind = NotifyKind::kJobEnd, .job = JobId(41), .user = "bob"};
  EXPECT_THAT(router_.Route(other), IsEmpty());
  EXPECT_TRUE(router_.HasJobSubscriptions(JobId(40)));
  EXPECT_FALSE(router_.HasJobSubscriptions(JobId(41)));
  EXPECT_THAT(Ids(router_.RemoveJobSubscriptions(JobId(40))), ElementsAre("sub-j"));
  EXPECT_THAT(router_.Route(own), IsEmpty());

  // A job subscription must name its job.
  const WebhookAllowList allow;
  const std::map<std::string, std::string> team_of_user;
  const SubscriptionRules rules{.webhook_allow = &allow, .team_of_user = &team_of_user};
  Result<Subscription> unnamed =
      NewSubscription(bob_, Sub("", "", SubscriptionScope::kJob), rules, clock_.Now());
  ASSERT_FALSE(unnamed.ok());
  EXPECT_THAT(unnamed.error().message, HasSubstr("must name its job"));
}

TEST_F(NotificationRouterTest, EachCallerSeesAndRemovesItsOwn) {
  EXPECT_THAT(Ids(router_.VisibleTo(alice_)), ElementsAre("sub-a", "sub-d"));
  EXPECT_THAT(Ids(router_.VisibleTo(root_)), SizeIs(4));

  // Another user's subscription is not found, as one that does not exist.
  Result<Subscription> other = router_.Remove(alice_, "sub-b");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(router_.Remove(alice_, "sub-zz").ok());

  Result<Subscription> own = router_.Remove(alice_, "sub-a");
  ASSERT_TRUE(own.ok()) << own.error().ToString();
  EXPECT_EQ(own->id, "sub-a");
  EXPECT_THAT(Ids(router_.VisibleTo(alice_)), ElementsAre("sub-d"));
  EXPECT_TRUE(router_.Remove(root_, "sub-b").ok());  // an admin removes any

  router_.Add(Sub("sub-e", "bob", SubscriptionScope::kUser));
  EXPECT_THAT(Ids(router_.VisibleTo(bob_)), ElementsAre("sub-e"));
  EXPECT_THAT(Ids(router_.Route({.kind = NotifyKind::kQuota80, .user = "bob"})),
              ElementsAre("sub-e"));
}

TEST_F(NotificationRouterTest, NewSubscriptionChecksItsTargetScopeAndCaller) {
  const WebhookAllowList allow;
  const std::map<std::string, std::string> team_of_user{{"alice", "vision"}};
  const SubscriptionRules rules{.webhook_allow = &allow, .team_of_user = &team_of_user};

  Subscription request = Sub("", "", SubscriptionScope::kTeam, "vision");
  Result<Subscription> made = NewSubscription(alice_, request, rules, clock_.Now());
  ASSERT_TRUE(made.ok()) << made.error().ToString();
  EXPECT_THAT(made->id, StartsWith("sub-"));
  EXPECT_EQ(made->id.size(), 20u);
  EXPECT_EQ(made->owner, "alice");
  EXPECT_EQ(made->created, clock_.Now());
  EXPECT_EQ(DescribeSubscription(*made),
            made->id + ": email x@example.com for team vision (every event)");

  Result<Subscription> not_member = NewSubscription(bob_, request, rules, clock_.Now());
  ASSERT_FALSE(not_member.ok());
  EXPECT_EQ(not_member.error().code, ErrorCode::kPermissionDenied);
  EXPECT_THAT(not_member.error().message, HasSubstr("bob is not a member of team vision"));

  Result<Subscription> cluster =
      NewSubscription(alice_, Sub("", "", SubscriptionScope::kCluster), rules, clock_.Now());
  ASSERT_FALSE(cluster.ok());
  EXPECT_THAT(cluster.error().message, HasSubstr("subscribe to your own jobs"));
  EXPECT_TRUE(
      NewSubscription(root_, Sub("", "", SubscriptionScope::kCluster), rules, clock_.Now()).ok());

  Subscription loopback = Sub("", "", SubscriptionScope::kUser, "ignored");
  loopback.channel = NotifyChannel::kWebhook;
  loopback.target = "http://127.0.0.1:9/hook";
  Result<Subscription> refused = NewSubscription(alice_, loopback, rules, clock_.Now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message, StartsWith("target: "));
  loopback.target = "https://hooks.example.com/x";
  Result<Subscription> user = NewSubscription(alice_, loopback, rules, clock_.Now());
  ASSERT_TRUE(user.ok()) << user.error().ToString();
  EXPECT_EQ(user->team, "");  // only a team subscription has one
}

TEST_F(NotificationRouterTest, BudgetThresholdsAreAlertedOncePerTeamAndPeriod) {
  EXPECT_THAT(ReachedBudgetThresholds(Use("vision", 85, 100)), ElementsAre(80));
  EXPECT_THAT(ReachedBudgetThresholds(Use("vision", 100, 100)), ElementsAre(80, 100));
  EXPECT_THAT(ReachedBudgetThresholds(Use("vision", 5, 0)), IsEmpty());  // nothing may run
  EXPECT_THAT(ReachedBudgetThresholds(Use("vision", 500, std::nullopt)), IsEmpty());

  EXPECT_TRUE(router_.BudgetCheckDue(clock_.Now()));
  std::vector<BudgetAlert> alerts = router_.CheckBudgets(
      clock_.Now(),
      period_,
      {Use("vision", 85, 100), Use("nlp", 10, 100), Use("tiny", 0.0085, 0.01)});
  ASSERT_THAT(alerts, SizeIs(2));
  EXPECT_EQ(alerts[0].event, "team vision used 85 of its 100 GPU-hour budget this period (80 %)");
  // A small budget keeps its figures (not "0.0 of its 0.0").
  EXPECT_EQ(alerts[1].event,
            "team tiny used 0.0085 of its 0.01 GPU-hour budget this period (80 %)");
  EXPECT_EQ(alerts[0].notification.kind, NotifyKind::kQuota80);
  EXPECT_EQ(alerts[0].notification.team, "vision");
  EXPECT_EQ(alerts[0].notification.time, clock_.Now());
  EXPECT_EQ(alerts[0].notification.subject, alerts[0].event);

  EXPECT_FALSE(router_.BudgetCheckDue(clock_.Now() + Millis(999)));  // once a second
  clock_.Advance(NotificationRouter::kBudgetCheckInterval);
  ASSERT_TRUE(router_.BudgetCheckDue(clock_.Now()));
  alerts = router_.CheckBudgets(clock_.Now(), period_, {Use("vision", 101, 100, "hold")});
  ASSERT_THAT(alerts, SizeIs(1));  // 80 % was sent already
  EXPECT_EQ(alerts[0].notification.kind, NotifyKind::kQuota100);
  EXPECT_THAT(alerts[0].event, HasSubstr("(100 %): its new jobs wait for an admin's approval"));
  EXPECT_THAT(router_.CheckBudgets(clock_.Now(), period_, {Use("vision", 120, 100)}), IsEmpty());

  // A new period: every team starts afresh.
  const Time next = period_ + std::chrono::hours(24 * 31);
  alerts = router_.CheckBudgets(next, next, {Use("", 90, 100)});
  ASSERT_THAT(alerts, SizeIs(1));
  EXPECT_THAT(alerts[0].event, StartsWith("jobs of no team used 90 of its 100 GPU-hour budget"));
}

TEST_F(NotificationRouterTest, ThresholdsReachedBeforeARestartAreNotSentAgain) {
  NotificationRouter restarted;
  restarted.Load({}, period_, {Use("vision", 90, 100)});
  EXPECT_THAT(restarted.CheckBudgets(clock_.Now(), period_, {Use("vision", 95, 100)}), IsEmpty());
  const std::vector<BudgetAlert> alerts =
      restarted.CheckBudgets(clock_.Now(), period_, {Use("vision", 100, 100)});
  ASSERT_THAT(alerts, SizeIs(1));
  EXPECT_EQ(alerts[0].notification.kind, NotifyKind::kQuota100);
  EXPECT_THAT(alerts[0].event, HasSubstr("preemptible borrowed work"));
}

TEST(JobNotificationTest, NamesTheJobItsOwnerTeamAndNode) {
  Job job;
  job.id = JobId(12);
  job.spec.name = "train";
  job.spec.team = "vision";
  job.owner.user = "alice";
  job.allocation = Allocation{.node = NodeId("gpu01"), .gpus = {GpuUuid("GPU-a")}};
  const Time now = FromUnixMillis(1'700'000'000'000);

  Notification done = EndedNotification(job, JobState::kCompleted, "exit 0", now);
  EXPECT_EQ(done.kind, NotifyKind::kJobEnd);
  EXPECT_EQ(done.subject, "job 12 (train) completed: exit 0");
  EXPECT_EQ(done.job, JobId(12));
  EXPECT_EQ(done.user, "alice");
  EXPECT_EQ(done.team, "vision");
  EXPECT_EQ(done.node, "gpu01");
  EXPECT_EQ(done.time, now);
  EXPECT_EQ(EndedNotification(job, JobState::kCancelled, "by alice", now).kind,
            NotifyKind::kJobEnd);
  const Notification timeout = EndedNotification(job, JobState::kTimeout, "limit 1h", now);
  EXPECT_EQ(timeout.kind, NotifyKind::kJobFailed);
  EXPECT_EQ(timeout.subject, "job 12 (train) reached its time limit: limit 1h");

  job.spec.name.clear();
  job.spec.requeue = false;
  const Notification preempted = PreemptedNotification(job, "for job 9", now);
  EXPECT_EQ(preempted.kind, NotifyKind::kPreempted);
  EXPECT_EQ(preempted.subject, "job 12 is preempted: for job 9");
  EXPECT_EQ(preempted.message, "for job 9; it ends CANCELLED (--no-requeue)");
}

}  // namespace
}  // namespace gf
