#include "controller/node_registry.h"

#include <gtest/gtest.h>

#include "controller/controller_test_util.h"

namespace gf {
namespace {

using std::chrono::seconds;
using SteadyTime = NodeRegistry::SteadyTime;

const SteadyTime kT0 = SteadyTime{} + std::chrono::hours(1);
const Time kWall = FromUnixMillis(1'772'323'200'000);

// A registry with `name` connected through `agent` (its hello at kT0).
NodeRegistry Connected(FakeAgent& agent, const std::string& name = "gpu01", int gpus = 2) {
  NodeRegistry nodes;
  nodes.AttachAgent(NodeId(name), &agent);
  nodes.MergeHello(TestNode(gpus, name), kWall, kT0);
  return nodes;
}

TEST(NodeRegistryTest, ASilentNodeGoesDownOnceAfterTheTimeout) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  EXPECT_TRUE(nodes.CheckLiveness(Millis(30'000), kT0 + seconds(29)).empty());
  nodes.Heard(NodeId("gpu01"), kT0 + seconds(20));  // a heartbeat moves the deadline
  EXPECT_TRUE(nodes.CheckLiveness(Millis(30'000), kT0 + seconds(45)).empty());

  const std::vector<NodeRegistry::NodeDown> down =
      nodes.CheckLiveness(Millis(30'000), kT0 + seconds(50) + Millis(500));
  ASSERT_EQ(down.size(), 1U);
  EXPECT_EQ(down[0].node.name, NodeId("gpu01"));
  EXPECT_EQ(down[0].node.state, NodeState::kDown);
  EXPECT_EQ(down[0].agent, &agent);
  EXPECT_EQ(down[0].cause, "node gpu01 down: no report from its agent for 30.5s");
  const NodeEntry& entry = nodes.At(NodeId("gpu01"));
  EXPECT_FALSE(entry.connected);
  EXPECT_EQ(entry.node.state_reason, down[0].cause);
  // Down once: a disconnected node is not reported again, and its heartbeats do not count.
  nodes.Heard(NodeId("gpu01"), kT0 + seconds(60));
  EXPECT_TRUE(nodes.CheckLiveness(Millis(30'000), kT0 + seconds(600)).empty());
}

TEST(NodeRegistryTest, LivenessReadsMinutesWholeAndNeverWithoutATimeout) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  EXPECT_TRUE(nodes.CheckLiveness(Millis(0), kT0 + std::chrono::hours(5)).empty());
  const auto down = nodes.CheckLiveness(Millis(60'000), kT0 + seconds(90));
  ASSERT_EQ(down.size(), 1U);
  EXPECT_EQ(down[0].cause, "node gpu01 down: no report from its agent for 1m30s");
}

TEST(NodeRegistryTest, ARestoredNodeThatNeverSaysHelloGoesDownFromTheStart) {
  NodeRegistry nodes;
  nodes.Restore(TestNode(1, "old"));
  Node gone = TestNode(1, "gone");
  gone.state = NodeState::kDown;
  gone.state_reason = "node gone down: no report";
  nodes.Restore(gone);
  nodes.AwaitHellos(kT0);
  EXPECT_TRUE(nodes.At(NodeId("old")).awaiting_hello);
  EXPECT_FALSE(nodes.At(NodeId("gone")).awaiting_hello);  // already down: not again
  const auto down = nodes.CheckLiveness(Millis(10'000), kT0 + seconds(10));
  ASSERT_EQ(down.size(), 1U);
  EXPECT_EQ(down[0].node.name, NodeId("old"));
  EXPECT_EQ(down[0].agent, nullptr);
}

TEST(NodeRegistryTest, HelloKeepsTheAdminsModesAndDrain) {
  FakeAgent agent;
  NodeRegistry nodes;
  Node stored = TestNode(3);
  stored.gpus[0].sharing = SharingMode::kShared;
  stored.gpus[1].sharing_next = SharingMode::kMps;
  stored.gpus[2].sharing = SharingMode::kMig;  // MIG since turned off on the card
  stored.state = NodeState::kDrained;
  stored.state_reason = "bad fan";
  nodes.Restore(stored);
  nodes.AttachAgent(NodeId("gpu01"), &agent);

  Node reported = TestNode(3);
  reported.cpus = 64;
  const NodeRegistry::HelloMerged merged = nodes.MergeHello(reported, kWall, kT0);
  EXPECT_FALSE(merged.was_down);
  EXPECT_TRUE(merged.changed);  // it reports CPUs the stored node did not have
  const NodeEntry& entry = nodes.At(NodeId("gpu01"));
  EXPECT_TRUE(entry.connected);
  EXPECT_EQ(entry.agent, &agent);
  EXPECT_EQ(entry.node.cpus, 64);
  EXPECT_EQ(entry.node.last_seen, kWall);
  EXPECT_EQ(entry.node.gpus[0].sharing, SharingMode::kShared);
  EXPECT_EQ(entry.node.gpus[1].sharing_next, SharingMode::kMps);
  EXPECT_EQ(entry.node.gpus[2].sharing, SharingMode::kExclusive);  // MIG follows the hardware
  // The hello brings the node up; the admin's drain comes back with RefreshState.
  EXPECT_EQ(entry.node.state, NodeState::kUp);
  const auto change = nodes.RefreshState(NodeId("gpu01"), /*busy=*/false);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->node.state, NodeState::kDrained);
  EXPECT_EQ(change->node.state_reason, "bad fan");
  EXPECT_FALSE(change->drained);  // it was up a moment, not draining
}

TEST(NodeRegistryTest, AHelloLikeTheLastIsNoChangeButADownNodeComesBack) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  EXPECT_FALSE(nodes.MergeHello(TestNode(2), kWall + seconds(5), kT0 + seconds(5)).changed);
  nodes.CheckLiveness(Millis(1000), kT0 + seconds(60));
  const auto merged = nodes.MergeHello(TestNode(2), kWall + seconds(70), kT0 + seconds(70));
  EXPECT_TRUE(merged.was_down);
  EXPECT_TRUE(merged.changed);
  EXPECT_EQ(nodes.At(NodeId("gpu01")).node.state, NodeState::kUp);
  EXPECT_FALSE(nodes.RefreshState(NodeId("gpu01"), false).has_value());
}

TEST(NodeRegistryTest, DrainWaitsForTheLastJobAndResumeEndsIt) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  const NodeId name("gpu01");
  EXPECT_EQ(nodes.SetDrain(NodeId("nope"), "x").error().code, ErrorCode::kNotFound);

  ASSERT_TRUE(nodes.SetDrain(name, "bad fan").ok());
  auto change = nodes.RefreshState(name, /*busy=*/true);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->node.state, NodeState::kDraining);
  EXPECT_EQ(nodes.Draining(), std::vector<NodeId>{name});
  EXPECT_FALSE(nodes.RefreshState(name, true).has_value());  // still busy: no change

  change = nodes.RefreshState(name, /*busy=*/false);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->node.state, NodeState::kDrained);
  EXPECT_TRUE(change->drained);
  EXPECT_TRUE(nodes.Draining().empty());

  ASSERT_TRUE(nodes.SetDrain(name, std::nullopt).ok());
  change = nodes.RefreshState(name, false);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->node.state, NodeState::kUp);
  EXPECT_EQ(change->node.state_reason, "");
}

TEST(NodeRegistryTest, ADownNodeStaysDownWhateverItsDrain) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  const NodeId name("gpu01");
  nodes.CheckLiveness(Millis(1000), kT0 + seconds(5));
  ASSERT_TRUE(nodes.SetDrain(name, "bad fan").ok());
  EXPECT_FALSE(nodes.RefreshState(name, false).has_value());
  // A restored drained node keeps its drain (its stored reason).
  NodeRegistry restored;
  Node stored = TestNode(1);
  stored.state = NodeState::kDraining;
  stored.state_reason = "maintenance";
  restored.Restore(stored);
  EXPECT_EQ(restored.At(name).drain, "maintenance");
}

TEST(NodeRegistryTest, AgentLookup) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  nodes.Restore(TestNode(1, "stored"));  // known from the store, no agent
  Job job;
  EXPECT_EQ(nodes.AgentFor(job), nullptr);  // not allocated
  job.allocation = Allocation{.node = NodeId("gpu01"), .gpus = {GpuUuid("GPU-0")}};
  EXPECT_EQ(nodes.AgentFor(job), &agent);
  job.allocation->node = NodeId("stored");
  EXPECT_EQ(nodes.AgentFor(job), nullptr);
  job.allocation->node = NodeId("unknown");
  EXPECT_EQ(nodes.AgentFor(job), nullptr);
  EXPECT_EQ(nodes.Find(NodeId("unknown")), nullptr);

  // GPUs by index or UUID; errors name what is missing.
  ASSERT_TRUE(nodes.FindGpu(NodeId("gpu01"), "1").ok());
  EXPECT_EQ((*nodes.FindGpu(NodeId("gpu01"), "GPU-0"))->index, 0);
  EXPECT_NE(nodes.FindGpu(NodeId("gpu01"), "7").error().message.find("GPU 7 not found"),
            std::string::npos);
  EXPECT_EQ(nodes.FindGpu(NodeId("nope"), "0").error().code, ErrorCode::kNotFound);
}

TEST(NodeRegistryTest, SnapshotShowsNodesWithoutAConnectedAgentDown) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  nodes.Restore(TestNode(1, "stored"));
  const ClusterSnapshot snapshot = nodes.Snapshot({{NodeId("gpu01"), {GpuUuid("GPU-1")}}}, nullptr);
  ASSERT_EQ(snapshot.nodes.size(), 2U);
  EXPECT_EQ(snapshot.nodes[0].node.name, NodeId("gpu01"));
  EXPECT_EQ(snapshot.nodes[0].node.state, NodeState::kUp);
  EXPECT_EQ(snapshot.nodes[0].allocated, std::set<GpuUuid>{GpuUuid("GPU-1")});
  EXPECT_EQ(snapshot.nodes[1].node.state, NodeState::kDown);
}

TEST(NodeRegistryTest, AWaitingModeAppliesOnceItsGpuIsEmpty) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  nodes.ApplyWaitingModes([](const NodeId&, const GpuUuid&) { return false; });  // the hello's
  (*nodes.FindGpu(NodeId("gpu01"), "0"))->sharing_next = SharingMode::kShared;
  // Not noted: nothing is walked.
  EXPECT_TRUE(
      nodes.ApplyWaitingModes([](const NodeId&, const GpuUuid&) { return false; }).applied.empty());
  nodes.NoteModeWaiting();
  bool busy = true;
  auto in_use = [&](const NodeId&, const GpuUuid&) {
    return busy;
  };
  EXPECT_TRUE(nodes.ApplyWaitingModes(in_use).applied.empty());
  busy = false;
  const NodeRegistry::WaitingModes waiting = nodes.ApplyWaitingModes(in_use);
  ASSERT_EQ(waiting.applied.size(), 1U);
  EXPECT_EQ(waiting.applied[0].from, SharingMode::kExclusive);
  EXPECT_EQ(waiting.applied[0].to, SharingMode::kShared);
  ASSERT_EQ(waiting.changed.size(), 1U);
  EXPECT_EQ(waiting.changed[0].gpus[0].sharing, SharingMode::kShared);
  EXPECT_FALSE(waiting.changed[0].gpus[0].sharing_next.has_value());
  EXPECT_TRUE(nodes.ApplyWaitingModes(in_use).applied.empty());
}

TEST(NodeRegistryTest, AWaitingMigLayoutIsSentOnceUntilForgottenOrAReconnect) {
  FakeAgent agent;
  NodeRegistry nodes = Connected(agent);
  Gpu* gpu = *nodes.FindGpu(NodeId("gpu01"), "0");
  gpu->mig_layout_next = std::vector<std::string>{"3g.40gb"};
  nodes.NoteModeWaiting();
  auto idle = [](const NodeId&, const GpuUuid&) {
    return false;
  };
  NodeRegistry::WaitingModes waiting = nodes.ApplyWaitingModes(idle);
  ASSERT_EQ(waiting.layouts.size(), 1U);
  EXPECT_EQ(waiting.layouts[0].agent, &agent);
  EXPECT_EQ(waiting.layouts[0].uuid, GpuUuid("GPU-0"));
  EXPECT_TRUE(nodes.ApplyWaitingModes(idle).layouts.empty());  // sent: waits for its outcome
  nodes.ForgetMigLayoutSent(GpuUuid("GPU-0"));
  EXPECT_EQ(nodes.ApplyWaitingModes(idle).layouts.size(), 1U);
  // The agent reconnects: the layout goes again, kept through the hello.
  nodes.MergeHello(TestNode(2), kWall, kT0 + seconds(1));
  waiting = nodes.ApplyWaitingModes(idle);
  ASSERT_EQ(waiting.layouts.size(), 1U);
  EXPECT_EQ(waiting.layouts[0].profiles, std::vector<std::string>{"3g.40gb"});
}

}  // namespace
}  // namespace gf
