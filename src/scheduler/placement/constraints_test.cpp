// Node-label constraints (JobRequest::node_labels) through every stage that chooses a node:
// the pool's fit, claims, earliest start and reasons, preemption, and CheckFeasible.
#include <gtest/gtest.h>

#include "scheduler/placement/gpu_pool.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Uuid;

constexpr std::int64_t kNow = 1'000'000;

JobRequest On(int gpus, std::map<std::string, std::string> labels) {
  JobRequest request = testing::Request(gpus);
  request.node_labels = std::move(labels);
  return request;
}

// a (rack=a, 4 GPUs), b (rack=b, 8 GPUs), c (rack=a, zone=x, 2 GPUs).
ClusterSnapshot Racks() {
  ClusterSnapshot cluster{
      {MakeNode("a", 4, "H100"), MakeNode("b", 8, "H100"), MakeNode("c", 2, "H100")}};
  cluster.nodes[0].node.labels = {{"rack", "a"}};
  cluster.nodes[1].node.labels = {{"rack", "b"}};
  cluster.nodes[2].node.labels = {{"rack", "a"}, {"zone", "x"}};
  return cluster;
}

std::string NodeOf(const GpuPool& pool, const PoolFit& fit) {
  return pool.Nodes()[static_cast<std::size_t>(fit.node)].name.value();
}

TEST(ConstraintsTest, FitsOnlyOnNodesWithEveryLabel) {
  GpuPool pool(Racks(), FromUnixMillis(kNow));
  // Unconstrained best fit is c (left with 0); rack=b must go to b.
  std::optional<PoolFit> fit = pool.FindFit(pool.ShapeOf(On(2, {{"rack", "b"}})), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(NodeOf(pool, *fit), "b");
  // Best fit among the allowed nodes: c (rack=a, 2 GPUs) before a.
  fit = pool.FindFit(pool.ShapeOf(On(2, {{"rack", "a"}})), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(NodeOf(pool, *fit), "c");
  pool.Take(*fit, kNever);
  fit = pool.FindFit(pool.ShapeOf(On(1, {{"rack", "a"}, {"zone", "x"}})), kNever);
  EXPECT_FALSE(fit.has_value());  // c is full, and a has no zone
  EXPECT_FALSE(pool.FindFit(pool.ShapeOf(On(5, {{"rack", "a"}})), kNever).has_value());
  EXPECT_EQ(pool.LargestUsable(pool.ShapeOf(On(1, {{"rack", "a"}}))), 4);
  EXPECT_EQ(pool.LargestUsable(pool.ShapeOf(On(1, {{"rack", "c"}}))), 0);
  EXPECT_EQ(pool.ShapeOf(On(1, {{"rack", "a"}})).constraint,
            pool.ShapeOf(On(3, {{"rack", "a"}})).constraint);  // one id per label set
}

TEST(ConstraintsTest, ClaimsAndEarliestStartStayOnAllowedNodes) {
  ClusterSnapshot cluster = Racks();
  cluster.nodes[0].allocated = {Uuid("a", 0), Uuid("a", 1), Uuid("a", 2), Uuid("a", 3)};
  GpuPool pool(cluster, FromUnixMillis(kNow));
  const Shape rack_a = pool.ShapeOf(On(3, {{"rack", "a"}}));
  EXPECT_FALSE(pool.EarliestStart(rack_a).has_value());  // a's holders have no known end
  EXPECT_TRUE(pool.Claim(rack_a, /*waiter=*/0));
  for (const PoolGpu& gpu : pool.Gpus()) {
    EXPECT_EQ(gpu.claimed, pool.Nodes()[static_cast<std::size_t>(gpu.node)].name == NodeId("a"))
        << gpu.uuid.value();
  }
  // The claim on a does not stop an unconstrained claim of the same size elsewhere.
  EXPECT_TRUE(pool.Claim(pool.ShapeOf(On(3, {})), 1));
}

TEST(ConstraintsTest, DecideStartsOnTheLabelledNodeAndExplainsWhatIsMissing) {
  ClusterSnapshot cluster = Racks();
  std::vector<QueuedJob> jobs = {MakeJob(1, 2), MakeJob(2, 2), MakeJob(3, 1), MakeJob(4, 1)};
  jobs[1].request.node_labels = {{"rack", "b"}};
  jobs[2].request.node_labels = {{"rack", "z"}};
  jobs[3].request.node_labels = {{"zone", "x"}};
  jobs[3].request.gpus = 3;
  const Decisions d = Decide(cluster, Queue{jobs}, PolicyConfig{}, FromUnixMillis(kNow));
  ASSERT_EQ(d.starts.size(), 2U);
  EXPECT_EQ(d.starts[0].allocation.node, NodeId("c"));  // job 1, best fit
  EXPECT_EQ(d.starts[1].allocation.node, NodeId("b"));  // job 2, rack=b
  ASSERT_EQ(d.pending.size(), 2U);
  for (const PendingDecision& p : d.pending) {
    if (p.job == JobId(3)) {
      EXPECT_EQ(p.reason.text,
                "needs 1 GPU with label rack=z; no up node has label rack=z (labels of the up "
                "nodes: rack=a, rack=b, zone=x)");
    } else {
      EXPECT_EQ(p.reason.text,
                "needs 3 GPUs with label zone=x on one node; the largest up node has 2 usable");
    }
  }
}

TEST(ConstraintsTest, BusyLabelledNodeGivesAReasonAboutThatNodeOnly) {
  ClusterSnapshot cluster = Racks();
  cluster.nodes[1].allocated = {Uuid("b", 0),
                                Uuid("b", 1),
                                Uuid("b", 2),
                                Uuid("b", 3),
                                Uuid("b", 4),
                                Uuid("b", 5),
                                Uuid("b", 6)};
  std::vector<QueuedJob> jobs = {MakeJob(1, 2)};
  jobs[0].request.node_labels = {{"rack", "b"}};
  const Decisions d = Decide(cluster, Queue{jobs}, PolicyConfig{}, FromUnixMillis(kNow));
  ASSERT_TRUE(d.starts.empty());
  ASSERT_EQ(d.pending.size(), 1U);
  // a and c have more free GPUs, but not rack=b.
  EXPECT_EQ(d.pending[0].reason.text,
            "needs 2 GPUs with label rack=b on one node; at most 1 free on a node (b: 1 of 8 "
            "free)");
}

TEST(ConstraintsTest, PreemptsOnlyOnNodesWithTheLabels) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100"), MakeNode("b", 4, "H100")}};
  cluster.nodes[0].node.labels = {{"rack", "a"}};
  cluster.nodes[1].node.labels = {{"rack", "b"}};
  for (const std::string node : {"a", "b"}) {
    RunningJob job;
    job.id = JobId(node == "a" ? 10 : 20);
    job.priority = PriorityClass::kLow;
    job.allocation.node = NodeId(node);
    for (int g = 0; g < 4; ++g) {
      job.allocation.gpus.push_back(Uuid(node, g));
    }
    // b's job ran longer: without the constraint, a's (least work lost) would be chosen.
    job.start_time = FromUnixMillis(kNow - (node == "a" ? 3'600'000 : 7'200'000));
    cluster.running.push_back(job);
  }
  std::vector<QueuedJob> jobs = {MakeJob(1, 4, std::nullopt, PriorityClass::kHigh)};
  jobs[0].request.node_labels = {{"rack", "b"}};
  const Decisions d = Decide(cluster, Queue{jobs}, PolicyConfig{}, FromUnixMillis(kNow));
  ASSERT_EQ(d.preemptions.size(), 1U);
  EXPECT_EQ(d.preemptions[0].victim, JobId(20));
}

TEST(ConstraintsTest, CheckFeasibleNamesTheConstraintAndTheLabelsThereAre) {
  const ClusterSnapshot cluster = Racks();
  EXPECT_TRUE(CheckFeasible(cluster, On(8, {{"rack", "b"}})).ok());
  EXPECT_TRUE(CheckFeasible(cluster, On(0, {{"zone", "x"}})).ok());
  const Status missing = CheckFeasible(cluster, On(1, {{"rack", "z"}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(missing.error().message,
            "constraint: no node has label rack=z; labels in this cluster: rack=a, rack=b, "
            "zone=x (a node gets labels from `gpufleet up --label KEY=VALUE` or [up] labels)");
  const Status cpu_only = CheckFeasible(cluster, On(0, {{"rack", "a"}, {"zone", "y"}}));
  ASSERT_FALSE(cpu_only.ok());
  EXPECT_NE(cpu_only.error().message.find("no node has labels rack=a, zone=y"), std::string::npos);
  const Status too_big = CheckFeasible(cluster, On(5, {{"rack", "a"}}));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().message,
            "gpus: 5 GPUs with label rack=a requested on one node, the largest node has 4");
  JobRequest typed = On(1, {{"rack", "a"}});
  typed.gpu_type = "A100";
  const Status no_type = CheckFeasible(cluster, typed);
  ASSERT_FALSE(no_type.ok());
  EXPECT_EQ(no_type.error().message,
            "gpu-type: no GPU of type 'A100' on the nodes with rack=a; types: H100");
}

}  // namespace
}  // namespace gf
