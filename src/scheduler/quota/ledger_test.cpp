#include "scheduler/quota/ledger.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

QueuedJob Job(const std::string& team, const std::string& user = "u") {
  QueuedJob job;
  job.team = team;
  job.user = user;
  return job;
}

RunningJob Running(const std::string& team, int gpus, bool stopping = false) {
  RunningJob job;
  job.team = team;
  job.user = "u";
  job.stopping = stopping;
  for (int i = 0; i < gpus; ++i) {
    job.allocation.gpus.emplace_back("GPU-" + team + std::to_string(i));
  }
  return job;
}

int Gpus(int n) {
  return n * kWholeGpuMilli;
}

ClassIndex Normal(const ClassTable& classes) {
  return classes.IndexOf(PriorityClass::kNormal);
}

PolicyConfig TwoTeams() {
  PolicyConfig policy;
  policy.teams = {TeamPolicy{.name = "a", .guaranteed_gpus = 4, .max_gpus = 6},
                  TeamPolicy{.name = "b",
                             .guaranteed_gpus = 2,
                             .gpu_hour_budget = 100,
                             .over_budget = OverBudget::kHold}};
  return policy;
}

// Fractional jobs (issue #7) count their share: four quarters fill one GPU of the guarantee.
TEST(LedgerTest, SharesCountByTheirMilliGpus) {
  const PolicyConfig policy = TwoTeams();
  ClusterSnapshot cluster;
  RunningJob quarter = Running("a", 1);
  quarter.allocation.gpu_milli = 250;
  cluster.running = {Running("a", 3), quarter};
  const ClassTable classes(policy, cluster);
  Ledger ledger(policy, cluster, classes);
  EXPECT_EQ(ledger.TeamHeldMilli("a"), 3250);
  EXPECT_TRUE(ledger.BelowGuarantee("a"));
  EXPECT_FALSE(ledger.Check(Job("a"), Normal(classes), 750).borrowed);  // 3.25 + 0.75 = 4
  EXPECT_TRUE(ledger.Check(Job("a"), Normal(classes), 751).borrowed);
  ledger.Add("a", "u", Normal(classes), Gpus(2) + 500);
  const QuotaVerdict verdict = ledger.Check(Job("a"), Normal(classes), 500);  // 5.75 + 0.5 > 6
  EXPECT_FALSE(verdict.may_start);
  EXPECT_EQ(verdict.reason.text,
            "team a is at its limit: holds 5.75 of max_gpus 6; this job needs 0.5 more");
  ledger.Remove(quarter);
  EXPECT_TRUE(ledger.Check(Job("a"), Normal(classes), 500).may_start);
}

TEST(LedgerTest, QuotasOffWithoutTeams) {
  const PolicyConfig policy;
  const ClassTable classes(policy);
  const Ledger ledger(policy, ClusterSnapshot{}, classes);
  const QuotaVerdict verdict = ledger.Check(Job("a"), Normal(classes), Gpus(64));
  EXPECT_TRUE(verdict.may_start);
  EXPECT_FALSE(verdict.borrowed);
  EXPECT_FALSE(verdict.guarantee_right);
  EXPECT_FALSE(ledger.BelowGuarantee("a"));
}

TEST(LedgerTest, WithinTheGuaranteeThenBorrowedThenAtTheLimit) {
  const PolicyConfig policy = TwoTeams();
  ClusterSnapshot cluster;
  cluster.running = {Running("a", 3), Running("a", 4, /*stopping=*/true)};  // stopping: not held
  const ClassTable classes(policy, cluster);
  Ledger ledger(policy, cluster, classes);
  EXPECT_TRUE(ledger.BelowGuarantee("a"));
  QuotaVerdict verdict = ledger.Check(Job("a"), Normal(classes), Gpus(1));
  EXPECT_FALSE(verdict.borrowed);
  EXPECT_TRUE(verdict.guarantee_right);
  verdict = ledger.Check(Job("a"), Normal(classes), Gpus(2));  // 3 + 2 > 4
  EXPECT_TRUE(verdict.may_start);
  EXPECT_TRUE(verdict.borrowed);
  EXPECT_FALSE(verdict.guarantee_right);
  ledger.Add("a", "u", Normal(classes), Gpus(3));
  verdict = ledger.Check(Job("a"), Normal(classes), Gpus(1));  // 6 + 1 > max 6
  EXPECT_FALSE(verdict.may_start);
  EXPECT_EQ(verdict.reason.text,
            "team a is at its limit: holds 6 of max_gpus 6; this job needs 1 more");
  ledger.Remove(Running("a", 3));
  EXPECT_TRUE(ledger.Check(Job("a"), Normal(classes), Gpus(1)).may_start);
}

TEST(LedgerTest, AnUnlistedTeamFollowsOtherTeams) {
  PolicyConfig policy = TwoTeams();
  policy.other_teams.max_gpus = 2;
  const ClassTable classes(policy);
  const Ledger ledger(policy, ClusterSnapshot{}, classes);
  EXPECT_TRUE(ledger.Check(Job("zzz"), Normal(classes), Gpus(2)).borrowed);
  EXPECT_FALSE(ledger.Check(Job(""), Normal(classes), Gpus(3)).may_start);
}

TEST(LedgerTest, OverBudgetHoldWaitsUnlessApprovedAndBorrowOnlyRunsBorrowed) {
  PolicyConfig policy = TwoTeams();
  policy.teams[0].gpu_hour_budget = 10;  // a: borrow-only (the default)
  ClusterSnapshot cluster;
  cluster.team_usage["a"] = TeamUsage{.decayed_gpu_seconds = 0, .period_gpu_hours = 10};
  cluster.team_usage["b"] = TeamUsage{.decayed_gpu_seconds = 0, .period_gpu_hours = 123.45};
  const ClassTable classes(policy, cluster);
  const Ledger ledger(policy, cluster, classes);
  QuotaVerdict verdict = ledger.Check(Job("b"), Normal(classes), Gpus(1));
  EXPECT_FALSE(verdict.may_start);
  EXPECT_EQ(verdict.reason.text,
            "team b is over its GPU-hour budget (123.5 of 100 this period); waits until an admin "
            "raises the budget or approves the job");
  QueuedJob approved = Job("b");
  approved.budget_approved = true;
  verdict = ledger.Check(approved, Normal(classes), Gpus(1));
  EXPECT_TRUE(verdict.may_start);
  EXPECT_FALSE(verdict.borrowed);  // approved: as if within budget, and within the guarantee
  verdict = ledger.Check(Job("a"), Normal(classes), Gpus(1));
  EXPECT_TRUE(verdict.may_start);
  EXPECT_TRUE(verdict.borrowed);          // within its guarantee, but over budget
  EXPECT_FALSE(verdict.guarantee_right);  // and so it may not preempt to get it
}

TEST(LedgerTest, ClassRulesWhoMayUseItAndGpusPerUser) {
  PolicyConfig policy;
  PriorityClassPolicy& high = policy.classes[0];
  high.allowed_users = {"alice", "carol"};
  high.max_gpus_per_user = 4;
  ClusterSnapshot cluster;
  RunningJob running = Running("", 3);
  running.user = "alice";
  running.priority = PriorityClass::kHigh;
  cluster.running = {running};
  const ClassTable classes(policy, cluster);
  const Ledger ledger(policy, cluster, classes);
  QueuedJob job = Job("", "bob");
  job.priority = PriorityClass::kHigh;
  const ClassIndex high_class = classes.IndexOf(PriorityClass::kHigh);
  EXPECT_EQ(ledger.Check(job, high_class, Gpus(1)).reason.text,
            "user bob may not use priority class high (allowed: alice, carol)");
  job.user = "alice";
  EXPECT_TRUE(ledger.Check(job, high_class, Gpus(1)).may_start);
  EXPECT_EQ(ledger.Check(job, high_class, Gpus(2)).reason.text,
            "user alice holds 3 GPUs in class high, which allows 4 per user; this job needs 2 "
            "more");
  job.user = "carol";
  EXPECT_TRUE(ledger.Check(job, high_class, Gpus(4)).may_start);  // per user, not per class
}

TEST(LedgerTest, GpusPerUserCountPerAdminDefinedClassAndTheUnconfiguredHasNoRules) {
  PolicyConfig policy;
  policy.classes = {PriorityClassPolicy{.name = "urgent", .rank = 0, .max_gpus_per_user = 2},
                    PriorityClassPolicy{.name = "batch", .rank = 1, .max_gpus_per_user = 2}};
  ClusterSnapshot cluster;
  RunningJob running = Running("", 2);
  running.priority = PriorityClass{.name = "batch"};
  cluster.running = {running};
  const ClassTable classes(policy, cluster);
  Ledger ledger(policy, cluster, classes);
  QueuedJob job = Job("");
  const ClassIndex urgent = classes.IndexOf(PriorityClass{.name = "urgent"});
  const ClassIndex batch = classes.IndexOf(PriorityClass{.name = "batch"});
  EXPECT_TRUE(
      ledger.Check(job, urgent, Gpus(2)).may_start);  // batch's GPUs do not count for urgent
  EXPECT_EQ(ledger.Check(job, batch, Gpus(1)).reason.text,
            "user u holds 2 GPUs in class batch, which allows 2 per user; this job needs 1 more");
  ledger.Add("", "u", classes.Unconfigured(), Gpus(50));
  EXPECT_TRUE(ledger.Check(job, classes.Unconfigured(), Gpus(50)).may_start);
  EXPECT_TRUE(ledger.Check(job, urgent, Gpus(2)).may_start);
}

}  // namespace
}  // namespace gf
