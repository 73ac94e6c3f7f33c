#include "scheduler/explain.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using testing::MakeJob;
using testing::MakeNode;

Time AtMinute(std::int64_t minute) {
  return FromUnixMillis(minute * 60'000);
}

RunningJob Running(std::int64_t id,
                   const std::string& node,
                   const std::vector<int>& gpus,
                   const PriorityClass& priority,
                   Time start) {
  RunningJob job = testing::RunningOn(id, node, gpus);
  job.priority = priority;
  job.start_time = start;
  return job;
}

// `cluster` with each running job's GPUs marked allocated on its node, as the controller does.
ClusterSnapshot WithAllocations(ClusterSnapshot cluster) {
  for (const RunningJob& job : cluster.running) {
    for (NodeSnapshot& node : cluster.nodes) {
      if (node.node.name == job.allocation.node) {
        node.allocated.insert(job.allocation.gpus.begin(), job.allocation.gpus.end());
      }
    }
  }
  return cluster;
}

const NodeExplanation& NodeOf(const Explanation& e, const std::string& name) {
  const auto it = std::find_if(e.nodes.begin(), e.nodes.end(), [&](const NodeExplanation& n) {
    return n.node == NodeId(name);
  });
  EXPECT_NE(it, e.nodes.end()) << "node " << name << " not explained";
  return *it;
}

std::string DecidedReason(const Decisions& d, JobId job) {
  for (const PendingDecision& p : d.pending) {
    if (p.job == job) {
      return p.reason.text;
    }
  }
  return "(not pending)";
}

TEST(ExplainTest, JobBehindAHigherClassNamesItAndItsClaim) {
  // Job 100 holds the node with no known end: the high job ahead claims every GPU it could use.
  ClusterSnapshot cluster = WithAllocations(ClusterSnapshot{
      .nodes = {MakeNode("n", 4, "H100")},
      .running = {Running(100, "n", {0, 1, 2, 3}, PriorityClass::kNormal, FromUnixMillis(0))}});
  PolicyConfig policy;
  policy.preemption.enabled = false;
  const Queue queue{{MakeJob(2, 4, std::nullopt, PriorityClass::kNormal, 0),
                     MakeJob(1, 4, std::nullopt, PriorityClass::kHigh, 10)}};
  const Time now = FromUnixMillis(60'000);

  const Result<Explanation> e = Explain(cluster, queue, policy, now, JobId(2));

  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->state, "pending");
  EXPECT_EQ(e->position, 2);
  EXPECT_EQ(e->waiting, 2);
  EXPECT_EQ(e->outcome, "waits");
  EXPECT_EQ(e->reason, "behind job 1 (high priority, needs 4 GPUs)");
  EXPECT_EQ(e->reason, DecidedReason(Decide(cluster, queue, policy, now), JobId(2)));
  ASSERT_EQ(e->ahead.size(), 1u);
  EXPECT_EQ(e->ahead[0].id, JobId(1));
  EXPECT_EQ(e->ahead[0].position, 1);
  EXPECT_EQ(e->ahead[0].priority, "high");
  EXPECT_EQ(e->ahead[0].action, "claimed");
  EXPECT_EQ(e->ahead[0].nodes, (std::vector<NodeId>{NodeId("n")}));
  ASSERT_TRUE(e->priority.has_value());
  EXPECT_EQ(e->priority->priority, "normal");
  EXPECT_EQ(e->priority->class_rank, 1);
  EXPECT_EQ(e->priority->waited, Millis(60'000));
  const NodeExplanation& n = NodeOf(*e, "n");
  EXPECT_EQ(n.verdict, "busy");
  EXPECT_EQ(n.matching, 4);
  EXPECT_EQ(n.free, 0);
  ASSERT_EQ(n.held.size(), 4u);
  EXPECT_EQ(n.held[0].kind, "claimed");  // busy, and promised to job 1 next
  EXPECT_EQ(n.held[0].job, JobId(1));
  EXPECT_TRUE(n.victims.empty());  // preemption is off
}

TEST(ExplainTest, JobAheadThatStartsInThisPassTakesTheGpus) {
  const ClusterSnapshot cluster{.nodes = {MakeNode("n", 4, "H100")}};
  const Queue queue{{MakeJob(2, 4, std::nullopt, PriorityClass::kNormal, 0),
                     MakeJob(1, 2, std::nullopt, PriorityClass::kHigh, 5)}};

  const Result<Explanation> e = Explain(cluster, queue, PolicyConfig{}, AtMinute(1), JobId(2));

  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_EQ(e->ahead.size(), 1u);
  EXPECT_EQ(e->ahead[0].id, JobId(1));
  EXPECT_EQ(e->ahead[0].action, "starts");
  const NodeExplanation& n = NodeOf(*e, "n");
  EXPECT_EQ(n.verdict, "busy");
  EXPECT_EQ(n.free, 2);
  ASSERT_EQ(n.held.size(), 2u);
  EXPECT_EQ(n.held[0].index, 0);
  EXPECT_EQ(n.held[0].kind, "started");
  EXPECT_EQ(n.held[0].job, JobId(1));

  const Result<Explanation> first = Explain(cluster, queue, PolicyConfig{}, AtMinute(1), JobId(1));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->outcome, "starts");
  EXPECT_EQ(first->reason, "");
  EXPECT_EQ(NodeOf(*first, "n").verdict, "chosen");
}

TEST(ExplainTest, JobHeldByItsTeamsMaxGpus) {
  ClusterSnapshot cluster = WithAllocations(ClusterSnapshot{
      .nodes = {MakeNode("n", 8, "H100")},
      .running = {Running(100, "n", {0, 1, 2, 3}, PriorityClass::kNormal, FromUnixMillis(0))}});
  cluster.running[0].team = "cv";
  PolicyConfig policy;
  policy.teams.push_back(TeamPolicy{.name = "cv", .guaranteed_gpus = 2, .max_gpus = 4});
  QueuedJob job = MakeJob(1, 2);
  job.team = "cv";
  job.time_limit = hours(3);

  const Result<Explanation> e = Explain(cluster, Queue{{job}}, policy, FromUnixMillis(0), JobId(1));

  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->outcome, "held");
  ASSERT_TRUE(e->quota.has_value());
  EXPECT_FALSE(e->quota->may_start);
  EXPECT_EQ(e->quota->reason,
            "team cv is at its limit: holds 4 of max_gpus 4; this job needs 2 more");
  EXPECT_EQ(e->reason, e->quota->reason);
  EXPECT_TRUE(e->quota->quotas_on);
  EXPECT_EQ(e->quota->team_held_milli, 4000);
  EXPECT_EQ(e->quota->team_guaranteed_gpus, 2);
  EXPECT_EQ(e->quota->team_max_gpus, 4);
  EXPECT_FALSE(e->priority->team_below_guarantee);
  EXPECT_EQ(e->time_limit, hours(3));
  EXPECT_EQ(e->time_limit_source, "requested");
  EXPECT_EQ(NodeOf(*e, "n").verdict, "fits");  // room on the node: the quota is what holds it
  EXPECT_EQ(NodeOf(*e, "n").givable, 4);
}

// Node a: job 100 holds GPUs 0,1 until 1h; job 1 (ahead) reserves all four from then.
// Node b is too small, c has another model, d is down, e has a failed GPU.
ClusterSnapshot MixedCluster() {
  NodeSnapshot e = MakeNode("e", 4, "H100");
  e.node.gpus[3].health = GpuHealth::kFailed;
  ClusterSnapshot cluster{
      .nodes = {MakeNode("a", 4, "H100"),
                MakeNode("b", 2, "H100"),
                MakeNode("c", 8, "A100"),
                MakeNode("d", 8, "H100", NodeState::kDown),
                e},
      .running = {Running(100, "a", {0, 1}, PriorityClass::kNormal, FromUnixMillis(0))}};
  cluster.running[0].time_limit = hours(1);
  return WithAllocations(cluster);
}

Queue MixedQueue() {
  QueuedJob first = MakeJob(1, 4, "H100", PriorityClass::kHigh, 0);
  QueuedJob second = MakeJob(2, 4, "H100", PriorityClass::kNormal, 5);
  second.time_limit = hours(2);
  return Queue{{second, first}};
}

TEST(ExplainTest, JobThatFitsNowhereGetsAReasonPerNode) {
  const ClusterSnapshot cluster = MixedCluster();
  const Queue queue = MixedQueue();
  PolicyConfig policy;
  policy.preemption.enabled = false;
  const Time now = AtMinute(10);

  const Result<Explanation> e = Explain(cluster, queue, policy, now, JobId(2));

  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->reason, DecidedReason(Decide(cluster, queue, policy, now), JobId(2)));
  const NodeExplanation& a = NodeOf(*e, "a");
  EXPECT_EQ(a.verdict, "busy");
  EXPECT_EQ(a.free, 2);
  EXPECT_EQ(a.givable, 0);
  ASSERT_EQ(a.held.size(), 4u);
  EXPECT_EQ(a.held[0].kind, "running");
  EXPECT_EQ(a.held[0].job, JobId(100));
  EXPECT_EQ(a.held[0].until, FromUnixMillis(3'600'000));
  EXPECT_EQ(a.held[2].kind, "reserved");  // free, but job 1's from 1h, and job 2 runs 2h
  EXPECT_EQ(a.held[2].job, JobId(1));
  EXPECT_EQ(a.held[2].until, FromUnixMillis(3'600'000));
  EXPECT_EQ(NodeOf(*e, "b").verdict, "too_small");
  EXPECT_EQ(NodeOf(*e, "b").detail, "2 usable matching GPUs; needs 4 GPUs of type H100");
  EXPECT_EQ(NodeOf(*e, "c").verdict, "no_model");
  EXPECT_EQ(NodeOf(*e, "c").models, (std::vector<std::string>{"A100"}));
  EXPECT_EQ(NodeOf(*e, "d").verdict, "not_up");
  EXPECT_EQ(NodeOf(*e, "d").detail, "node is down: it takes no new work");
  EXPECT_EQ(NodeOf(*e, "e").verdict, "too_small");
  EXPECT_EQ(NodeOf(*e, "e").detail, "3 usable matching GPUs (1 failed); needs 4 GPUs of type H100");
  EXPECT_EQ(e->nodes.front().node, NodeId("a"));  // the one that could take it comes first
  EXPECT_EQ(
      e->nodes_by_verdict,
      (std::map<std::string, int>{{"busy", 1}, {"too_small", 2}, {"no_model", 1}, {"not_up", 1}}));
  ASSERT_EQ(e->ahead.size(), 1u);
  EXPECT_EQ(e->ahead[0].id, JobId(1));
  EXPECT_EQ(e->ahead[0].action, "reserved");
  EXPECT_EQ(e->ahead[0].from, FromUnixMillis(3'600'000));
}

TEST(ExplainTest, ReasonAndEstimateAreDecidesForEveryJob) {
  const ClusterSnapshot cluster = MixedCluster();
  const Queue queue = MixedQueue();
  PolicyConfig policy;
  policy.preemption.enabled = false;
  const Time now = AtMinute(10);
  const Decisions decided = Decide(cluster, queue, policy, now);
  for (const PendingDecision& pending : decided.pending) {
    const Result<Explanation> e = Explain(cluster, queue, policy, now, pending.job);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->reason, pending.reason.text);
    EXPECT_EQ(e->estimated_start, pending.estimated_start);
    EXPECT_EQ(e->placement, pending.reservation);
  }
  const Result<Explanation> first = Explain(cluster, queue, policy, now, JobId(1));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->outcome, "reserved");
  EXPECT_EQ(NodeOf(*first, "a").verdict, "reserved");
}

// Node n: a low job that ran 30m; node m: a low job that ran 5m (under the 10m minimum).
ClusterSnapshot PreemptionCluster() {
  ClusterSnapshot cluster{
      .nodes = {MakeNode("m", 4, "H100"), MakeNode("n", 4, "H100")},
      .running = {Running(100, "n", {0, 1, 2, 3}, PriorityClass::kLow, FromUnixMillis(0)),
                  Running(101, "m", {0, 1, 2, 3}, PriorityClass::kLow, AtMinute(25))}};
  return WithAllocations(cluster);
}

TEST(ExplainTest, JobThatPreemptsNamesItsVictimsAndWhoIsSpared) {
  const ClusterSnapshot cluster = PreemptionCluster();
  const Queue queue{{MakeJob(1, 4, std::nullopt, PriorityClass::kHigh, 0)}};
  const Time now = AtMinute(30);

  const Result<Explanation> e = Explain(cluster, queue, PolicyConfig{}, now, JobId(1));

  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->outcome, "preempts");
  EXPECT_EQ(e->preempts, (std::vector<JobId>{JobId(100)}));
  EXPECT_EQ(e->estimated_start, now);
  ASSERT_TRUE(e->placement.has_value());
  EXPECT_EQ(e->placement->node, NodeId("n"));
  const NodeExplanation& n = NodeOf(*e, "n");
  EXPECT_EQ(n.verdict, "preempt");
  ASSERT_EQ(n.victims.size(), 1u);
  EXPECT_TRUE(n.victims[0].may_preempt);
  EXPECT_TRUE(n.victims[0].chosen);
  EXPECT_EQ(n.victims[0].why, "high priority beats low");
  const NodeExplanation& m = NodeOf(*e, "m");
  EXPECT_EQ(m.verdict, "busy");
  ASSERT_EQ(m.victims.size(), 1u);
  EXPECT_EQ(m.victims[0].job, JobId(101));
  EXPECT_FALSE(m.victims[0].may_preempt);
  EXPECT_EQ(m.victims[0].why, "protected: ran 5m of the minimum run time 10m");
  EXPECT_EQ(e->nodes.front().node, NodeId("n"));
}

TEST(ExplainTest, RunningJobSaysWhereSinceWhenAndWhoMayPreemptIt) {
  const ClusterSnapshot cluster = PreemptionCluster();
  const Time now = AtMinute(30);

  const Result<Explanation> young = Explain(cluster, Queue{}, PolicyConfig{}, now, JobId(101));

  ASSERT_TRUE(young.ok()) << young.error().message;
  EXPECT_EQ(young->state, "running");
  ASSERT_TRUE(young->running.has_value());
  EXPECT_EQ(young->running->allocation.node, NodeId("m"));
  EXPECT_EQ(young->running->gpu_indexes, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(young->running->since, AtMinute(25));
  EXPECT_EQ(young->running->protected_until, AtMinute(35));
  EXPECT_FALSE(young->running->preemptible);
  EXPECT_EQ(young->running->preempted_by,
            (std::vector<std::string>{"jobs of class high", "jobs of class normal"}));

  PolicyConfig off;
  off.preemption.enabled = false;
  const Result<Explanation> spared = Explain(cluster, Queue{}, off, now, JobId(100));
  ASSERT_TRUE(spared.ok());
  EXPECT_EQ(spared->running->preempted_by, (std::vector<std::string>{"nobody: preemption is off"}));
  EXPECT_FALSE(spared->running->protected_until.has_value());
}

TEST(ExplainTest, BorrowedRunningJobMayBePreemptedByTeamsWithinTheirGuarantee) {
  ClusterSnapshot cluster = PreemptionCluster();
  cluster.running[0].priority = PriorityClass::kHigh;
  cluster.running[0].team = "research";
  cluster.running[0].preemptible = true;
  PolicyConfig policy;
  policy.teams.push_back(TeamPolicy{.name = "research"});

  const Result<Explanation> e = Explain(cluster, Queue{}, policy, AtMinute(30), JobId(100));

  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->running->preempted_by,
            (std::vector<std::string>{
                "jobs of other teams within their guarantee (it runs on borrowed GPUs)"}));
}

TEST(ExplainTest, ManyNodesAreBoundedWithCounts) {
  ClusterSnapshot cluster;
  for (int i = 0; i < 30; ++i) {
    cluster.nodes.push_back(MakeNode("n" + std::to_string(100 + i), 2, "H100"));
  }
  const Result<Explanation> e =
      Explain(cluster, Queue{{MakeJob(1, 4)}}, PolicyConfig{}, FromUnixMillis(0), JobId(1));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->nodes.size(), static_cast<std::size_t>(kMaxExplainedNodes));
  EXPECT_EQ(e->nodes_omitted, 30 - kMaxExplainedNodes);
  EXPECT_EQ(e->nodes_by_verdict, (std::map<std::string, int>{{"too_small", 30}}));
}

TEST(ExplainTest, UnknownJobIsNotFound) {
  const Result<Explanation> e = Explain(
      ClusterSnapshot{}, Queue{{MakeJob(1, 1)}}, PolicyConfig{}, FromUnixMillis(0), JobId(9));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(e.error().message, "job 9 is neither queued nor running");
}

}  // namespace
}  // namespace gf
