#include "scheduler/placement/whole_gpu_fit.h"

#include <gtest/gtest.h>

#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::MakeNode;
using testing::Request;
using testing::Uuid;

const std::set<GpuUuid> kNone;

Allocation Alloc(const std::string& node, const std::vector<int>& indexes) {
  Allocation allocation{.node = NodeId(node), .gpus = {}};
  for (int i : indexes) {
    allocation.gpus.push_back(Uuid(node, i));
  }
  return allocation;
}

TEST(SchedulerWholeGpuFitTest, CapacityKeepsUpNodesAndUsableGpusInOrder) {
  ClusterSnapshot cluster;
  cluster.nodes.push_back(MakeNode("gpu03", 2, "H100"));
  cluster.nodes.push_back(MakeNode("gpu01", 3, "H100"));
  cluster.nodes.push_back(MakeNode("gpu02", 2, "H100", NodeState::kDraining));
  cluster.nodes.push_back(MakeNode("gpu04", 2, "H100", NodeState::kDown));
  std::swap(cluster.nodes[1].node.gpus[0], cluster.nodes[1].node.gpus[2]);
  cluster.nodes[1].node.gpus[1].health = GpuHealth::kFailed;
  cluster.nodes[0].allocated.insert(Uuid("gpu03", 1));

  const Capacity capacity = BuildCapacity(cluster);
  ASSERT_EQ(capacity.nodes.size(), 2u);
  EXPECT_EQ(capacity.nodes[0].name, NodeId("gpu01"));
  ASSERT_EQ(capacity.nodes[0].usable.size(), 2u);
  EXPECT_EQ(capacity.nodes[0].usable[0].index, 0);
  EXPECT_EQ(capacity.nodes[0].usable[1].index, 2);
  EXPECT_EQ(capacity.nodes[1].name, NodeId("gpu03"));
  EXPECT_TRUE(capacity.nodes[1].usable[0].free);
  EXPECT_FALSE(capacity.nodes[1].usable[1].free);

  EXPECT_EQ(BuildCapacity(cluster, NodeScope::kNotDown).nodes.size(), 3u);
}

TEST(SchedulerWholeGpuFitTest, TypeMatchIgnoresCase) {
  EXPECT_TRUE(MatchesType(Request(1, "h100-80gb"), "H100-80GB"));
  EXPECT_TRUE(MatchesType(Request(1), "anything"));
  EXPECT_TRUE(MatchesType(Request(1, ""), "anything"));
  EXPECT_FALSE(MatchesType(Request(1, "H100"), "H100-80GB"));
}

TEST(SchedulerWholeGpuFitTest, BestFitPicksNodeLeftWithFewestFreeGpus) {
  ClusterSnapshot cluster{{MakeNode("big", 8, "H100"), MakeNode("small", 4, "H100")}};
  const Capacity capacity = BuildCapacity(cluster);
  EXPECT_EQ(FindBestFit(capacity, Request(4), kNone), Alloc("small", {0, 1, 2, 3}));
  EXPECT_EQ(FindBestFit(capacity, Request(2), kNone), Alloc("small", {0, 1}));
  EXPECT_EQ(FindBestFit(capacity, Request(6), kNone)->node, NodeId("big"));
  EXPECT_FALSE(FindBestFit(capacity, Request(9), kNone).has_value());
}

TEST(SchedulerWholeGpuFitTest, BestFitCountsFreeNotTotalGpus) {
  ClusterSnapshot cluster{{MakeNode("a", 8, "H100"), MakeNode("b", 4, "H100")}};
  for (int i = 0; i < 6; ++i) {
    cluster.nodes[0].allocated.insert(Uuid("a", i));
  }
  const Capacity capacity = BuildCapacity(cluster);
  EXPECT_EQ(FindBestFit(capacity, Request(2), kNone), Alloc("a", {6, 7}));
}

TEST(SchedulerWholeGpuFitTest, TiesGoToFirstNodeName) {
  ClusterSnapshot cluster{{MakeNode("b", 4, "H100"), MakeNode("a", 4, "H100")}};
  EXPECT_EQ(FindBestFit(BuildCapacity(cluster), Request(1), kNone), Alloc("a", {0}));
}

// Failed and degraded GPUs take no new work (TakesWork), like allocated and off-limits ones.
TEST(SchedulerWholeGpuFitTest, SkipsAllocatedUnhealthyOffLimitsAndOtherModels) {
  ClusterSnapshot cluster{{MakeNode("n", 4, "H100")}};
  cluster.nodes[0].node.gpus.push_back(cluster.nodes[0].node.gpus[0]);
  cluster.nodes[0].node.gpus[4].index = 4;
  cluster.nodes[0].node.gpus[4].uuid = Uuid("n", 4);
  cluster.nodes[0].node.gpus[4].model = "A100";
  cluster.nodes[0].allocated.insert(Uuid("n", 0));
  cluster.nodes[0].node.gpus[1].health = GpuHealth::kFailed;
  cluster.nodes[0].node.gpus[2].health = GpuHealth::kDegraded;
  const Capacity capacity = BuildCapacity(cluster);
  EXPECT_EQ(FindBestFit(capacity, Request(1, "h100"), kNone), Alloc("n", {3}));
  EXPECT_FALSE(FindBestFit(capacity, Request(2, "H100"), kNone).has_value());
  EXPECT_EQ(FindBestFit(capacity, Request(1, "a100"), kNone), Alloc("n", {4}));
  EXPECT_EQ(FindBestFit(capacity, Request(2), kNone), Alloc("n", {3, 4}));
  EXPECT_EQ(FindBestFit(capacity, Request(1), {Uuid("n", 3)}), Alloc("n", {4}));
}

TEST(SchedulerWholeGpuFitTest, CpuOnlyJobGoesToNodeWithFewestFreeGpus) {
  ClusterSnapshot cluster{{MakeNode("gpu", 8, "H100"), MakeNode("cpu", 0, "")}};
  EXPECT_EQ(FindBestFit(BuildCapacity(cluster), Request(0), kNone), Alloc("cpu", {}));
  EXPECT_FALSE(FindBestFit(BuildCapacity(ClusterSnapshot{}), Request(0), kNone).has_value());
}

TEST(SchedulerWholeGpuFitTest, ReserveTakesGpusOutOfLaterFits) {
  ClusterSnapshot cluster{{MakeNode("n", 4, "H100")}};
  Capacity capacity = BuildCapacity(cluster);
  Reserve(capacity, Alloc("n", {0, 2}));
  EXPECT_EQ(FindBestFit(capacity, Request(2), kNone), Alloc("n", {1, 3}));
  EXPECT_FALSE(FindBestFit(capacity, Request(3), kNone).has_value());
}

TEST(SchedulerWholeGpuFitTest, CouldEverUseOnlyCountsNodesLargeEnough) {
  ClusterSnapshot cluster{
      {MakeNode("big", 4, "H100"), MakeNode("small", 2, "H100"), MakeNode("other", 4, "A100")}};
  cluster.nodes[0].allocated.insert(Uuid("big", 0));
  const Capacity capacity = BuildCapacity(cluster);
  const std::set<GpuUuid> expected = {
      Uuid("big", 0), Uuid("big", 1), Uuid("big", 2), Uuid("big", 3)};
  EXPECT_EQ(CouldEverUse(capacity, Request(3, "H100")), expected);
  EXPECT_TRUE(CouldEverUse(capacity, Request(5)).empty());
  EXPECT_EQ(CouldEverUse(capacity, Request(1, "A100")).size(), 4u);
}

TEST(SchedulerWholeGpuFitTest, ExplainsWhyNothingFits) {
  ClusterSnapshot cluster{{MakeNode("gpu01", 8, "H100-80GB"), MakeNode("gpu02", 4, "A100-40GB")}};
  for (int i = 0; i < 6; ++i) {
    cluster.nodes[0].allocated.insert(Uuid("gpu01", i));
  }
  for (int i = 0; i < 4; ++i) {
    cluster.nodes[1].allocated.insert(Uuid("gpu02", i));
  }
  const Capacity capacity = BuildCapacity(cluster);
  EXPECT_EQ(ExplainNoFit(capacity, Request(4)).text,
            "needs 4 GPUs on one node; at most 2 free on a node (gpu01: 2 of 8 free)");
  EXPECT_EQ(ExplainNoFit(capacity, Request(2, "A100-40GB")).text,
            "needs 2 GPUs of type A100-40GB; 0 free");
  EXPECT_EQ(ExplainNoFit(capacity, Request(1, "a100-40gb")).text,
            "needs 1 GPU of type a100-40gb; 0 free");
  EXPECT_EQ(ExplainNoFit(capacity, Request(9)).text,
            "needs 9 GPUs on one node; the largest up node has 8 usable");
  EXPECT_EQ(ExplainNoFit(capacity, Request(2, "V100")).text,
            "needs 2 GPUs of type V100; no up node has one (up: A100-40GB, H100-80GB)");
  EXPECT_EQ(ExplainNoFit(BuildCapacity(ClusterSnapshot{}), Request(1)).text, "no node is up");
  ClusterSnapshot cpu_only{{MakeNode("cpu", 0, "")}};
  EXPECT_EQ(ExplainNoFit(BuildCapacity(cpu_only), Request(1)).text,
            "needs 1 GPU; no up node has a usable GPU");
}

TEST(SchedulerWholeGpuFitTest, DescribesRequests) {
  EXPECT_EQ(DescribeRequest(Request(0)), "no GPU");
  EXPECT_EQ(DescribeRequest(Request(1)), "1 GPU");
  EXPECT_EQ(DescribeRequest(Request(4, "H100")), "4 GPUs of type H100");
}

}  // namespace
}  // namespace gf
