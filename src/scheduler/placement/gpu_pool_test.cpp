#include "scheduler/placement/gpu_pool.h"

#include <algorithm>
#include <tuple>

#include <gtest/gtest.h>

#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::MakeNode;
using testing::Request;
using testing::Uuid;

constexpr std::int64_t kNow = 1'000'000;
constexpr std::int64_t kHour = 3'600'000;

RunningJob Running(std::int64_t id,
                   const std::string& node,
                   const std::vector<int>& gpus,
                   std::optional<std::chrono::seconds> limit) {
  RunningJob job = testing::RunningOn(id, node, gpus);
  job.start_time = FromUnixMillis(kNow);
  job.time_limit = limit;
  return job;
}

std::vector<int> Indexes(const GpuPool& pool, const PoolFit& fit) {
  std::vector<int> indexes;
  for (const int g : fit.gpus) {
    indexes.push_back(pool.Gpus()[static_cast<std::size_t>(g)].index);
  }
  return indexes;
}

TEST(GpuPoolTest, BestFitLeavesTheFewestFreeGpusTiesByName) {
  ClusterSnapshot cluster{
      {MakeNode("b", 4, "H100"), MakeNode("a", 4, "H100"), MakeNode("c", 8, "H100")}};
  cluster.nodes[0].allocated = {Uuid("b", 0), Uuid("b", 1)};
  GpuPool pool(cluster, FromUnixMillis(kNow));
  std::optional<PoolFit> fit = pool.FindFit(pool.ShapeOf(Request(2)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(fit->node)].name, NodeId("b"));
  EXPECT_EQ(Indexes(pool, *fit), (std::vector<int>{2, 3}));
  pool.Take(*fit, kNever);
  fit = pool.FindFit(pool.ShapeOf(Request(3)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(fit->node)].name, NodeId("a"));  // a < c
  EXPECT_FALSE(pool.FindFit(pool.ShapeOf(Request(9)), kNever).has_value());
  EXPECT_FALSE(pool.FindFit(pool.ShapeOf(Request(1, "V100")), kNever).has_value());
}

TEST(GpuPoolTest, ARunningJobsGpusAreBusyEvenWhenNotListedAsAllocated) {
  ClusterSnapshot cluster{{MakeNode("a", 2, "H100")}};
  cluster.running = {Running(1, "a", {0, 1}, std::nullopt)};
  const GpuPool pool(cluster, FromUnixMillis(kNow));
  EXPECT_FALSE(pool.FindFit(pool.ShapeOf(Request(1)), kNever).has_value());
}

TEST(GpuPoolTest, ARunningJobsGpusAreFoundWhereverItsNodeNameSaysOtherwise) {
  ClusterSnapshot cluster{{MakeNode("a", 2, "H100"), MakeNode("b", 2, "H100")}};
  cluster.running = {Running(1, "a", {0, 1}, std::nullopt)};
  cluster.running[0].allocation.node = NodeId("b");  // stale name: the UUIDs are a's
  cluster.running.push_back(Running(2, "b", {0}, std::nullopt));
  cluster.running[1].allocation.node = NodeId("gone");  // not an up node
  const GpuPool pool(cluster, FromUnixMillis(kNow));
  EXPECT_EQ(pool.RunningGpus(0).size(), 2U);
  EXPECT_EQ(pool.Gpus()[static_cast<std::size_t>(pool.RunningGpus(1).at(0))].uuid, Uuid("b", 0));
  EXPECT_EQ(pool.GpuPosition(Uuid("b", 1)), 3);
  EXPECT_EQ(pool.GpuPosition(Uuid("c", 0)), -1);
  const std::optional<PoolFit> fit = pool.FindFit(pool.ShapeOf(Request(1)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(Indexes(pool, *fit), (std::vector<int>{1}));  // b's GPU 1: the only free one
}

// A patched pool must be the pool a pass would build on the changed snapshot, GPU for GPU.
void ExpectSameAsBuilt(const GpuPool& patched,
                       const ClusterSnapshot& cluster,
                       std::int64_t now_ms = kNow) {
  const GpuPool built(cluster, FromUnixMillis(now_ms));
  ASSERT_EQ(patched.Gpus().size(), built.Gpus().size());
  for (std::size_t g = 0; g < built.Gpus().size(); ++g) {
    SCOPED_TRACE(g);
    const PoolGpu& a = patched.Gpus()[g];
    const PoolGpu& b = built.Gpus()[g];
    EXPECT_EQ(std::tie(a.node, a.index, a.model, a.uuid, a.free, a.claimed, a.holder),
              std::tie(b.node, b.index, b.model, b.uuid, b.free, b.claimed, b.holder));
    EXPECT_EQ(a.available_at, b.available_at);
    EXPECT_EQ(a.reserved_from, b.reserved_from);
  }
  ASSERT_EQ(patched.Nodes().size(), built.Nodes().size());
  for (std::size_t n = 0; n < built.Nodes().size(); ++n) {
    SCOPED_TRACE(n);
    const PoolNode& a = patched.Nodes()[n];
    const PoolNode& b = built.Nodes()[n];
    EXPECT_EQ(std::tie(a.free_total, a.open_total, a.reserved_free, a.holders),
              std::tie(b.free_total, b.open_total, b.reserved_free, b.holders));
  }
  for (std::size_t r = 0; r < cluster.running.size(); ++r) {
    EXPECT_EQ(patched.RunningGpus(static_cast<int>(r)), built.RunningGpus(static_cast<int>(r)));
  }
  for (int gpus = 1; gpus <= 4; ++gpus) {
    SCOPED_TRACE(gpus);
    const Shape shape = built.ShapeOf(Request(gpus));
    const std::optional<PoolFit> a = patched.FindFit(shape, kNever);
    const std::optional<PoolFit> b = built.FindFit(shape, kNever);
    ASSERT_EQ(a.has_value(), b.has_value());
    if (b.has_value()) {
      EXPECT_EQ(std::tie(a->node, a->gpus), std::tie(b->node, b->gpus));
    }
    const std::optional<PoolReservation> c = patched.EarliestStart(shape);
    const std::optional<PoolReservation> d = built.EarliestStart(shape);
    ASSERT_EQ(c.has_value(), d.has_value());
    if (d.has_value()) {
      EXPECT_EQ(std::tie(c->fit.node, c->fit.gpus, c->start_ms),
                std::tie(d->fit.node, d->fit.gpus, d->start_ms));
    }
  }
}

TEST(GpuPoolTest, PatchesForRunningJobsLeaveThePoolAsBuiltOnTheChangedSnapshot) {
  ClusterSnapshot cluster{
      {MakeNode("b", 4, "H100"), MakeNode("a", 4, "H100"), MakeNode("c", 2, "A100")}};
  cluster.nodes[1].node.gpus[3].health = GpuHealth::kFailed;
  cluster.running = {Running(1, "a", {0, 1}, std::chrono::hours(1)),
                     Running(2, "b", {0}, std::nullopt),
                     Running(3, "a", {2, 3}, std::chrono::hours(2)),  // GPU 3 failed
                     Running(4, "b", {2, 3}, std::chrono::hours(3)),
                     Running(5, "c", {0, 1}, std::chrono::hours(4))};
  for (const RunningJob& job : cluster.running) {
    NodeSnapshot& node = *std::find_if(cluster.nodes.begin(), cluster.nodes.end(), [&](auto& n) {
      return n.node.name == job.allocation.node;
    });
    node.allocated.insert(job.allocation.gpus.begin(), job.allocation.gpus.end());
  }
  GpuPool pool(cluster, FromUnixMillis(kNow));
  // Job 2 ends: its GPU is free, and jobs 3..5 move down by one.
  cluster.nodes[0].allocated.erase(Uuid("b", 0));
  cluster.running.erase(cluster.running.begin() + 1);
  pool.RunningRemoved(cluster, 1);
  ExpectSameAsBuilt(pool, cluster);
  // Job 6 starts where job 2 was, and on b's GPU 1.
  cluster.running.push_back(Running(6, "b", {0, 1}, std::chrono::minutes(30)));
  pool.RunningAdded(cluster);
  ExpectSameAsBuilt(pool, cluster);
  // Job 4 (now index 2) is told to stop: its GPUs are expected back now.
  cluster.running[2].stopping = true;
  pool.RunningChanged(cluster, 2);
  ExpectSameAsBuilt(pool, cluster);
  // The job on the failed GPU ends: only its usable GPU comes back.
  cluster.nodes[1].allocated.erase(Uuid("a", 2));
  cluster.nodes[1].allocated.erase(Uuid("a", 3));
  cluster.running.erase(cluster.running.begin() + 1);
  pool.RunningRemoved(cluster, 1);
  ExpectSameAsBuilt(pool, cluster);
}

// A new controller turn: the same snapshot later. Free GPUs, a stopping job's and one past its
// limit by then are available from the new now; the others keep their holders' ends.
TEST(GpuPoolTest, AdvancedToALaterNowThePoolIsAsBuiltThen) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100"), MakeNode("b", 4, "H100")}};
  cluster.running = {Running(1, "a", {0}, std::chrono::minutes(30)),  // over its limit by then
                     Running(2, "a", {1}, std::chrono::hours(3)),
                     Running(3, "b", {0, 1}, std::nullopt),  // no limit: never
                     Running(4, "b", {2}, std::chrono::hours(3))};
  cluster.running[3].stopping = true;  // back within its grace
  for (const RunningJob& job : cluster.running) {
    NodeSnapshot& node = *std::find_if(cluster.nodes.begin(), cluster.nodes.end(), [&](auto& n) {
      return n.node.name == job.allocation.node;
    });
    node.allocated.insert(job.allocation.gpus.begin(), job.allocation.gpus.end());
  }
  GpuPool pool(cluster, FromUnixMillis(kNow));
  const std::int64_t later = kNow + 3'600'000;
  pool.AdvanceTo(cluster, FromUnixMillis(later));
  ExpectSameAsBuilt(pool, cluster, later);
  EXPECT_EQ(pool.Gpus()[0].available_at, later);  // job 1's, past its limit
  EXPECT_EQ(pool.Gpus()[1].available_at, kNow + std::int64_t{3} * 3'600'000);  // job 2's end
  pool.AdvanceTo(cluster, FromUnixMillis(later));  // the same now again: nothing changes
  ExpectSameAsBuilt(pool, cluster, later);
}

TEST(GpuPoolTest, NodeSetKeepsNodesOnceInOrder) {
  NodeSet set;
  EXPECT_TRUE(set.Empty());
  for (const int n : {5, 1, 3, 5, 0}) {
    set.Insert(n);
  }
  EXPECT_EQ(std::vector<int>(set.begin(), set.end()), (std::vector<int>{0, 1, 3, 5}));
  set.Erase(3);
  set.Erase(4);  // not there: nothing
  EXPECT_TRUE(set.Contains(5));
  EXPECT_FALSE(set.Contains(3));
  EXPECT_EQ(std::vector<int>(set.begin(), set.end()), (std::vector<int>{0, 1, 5}));
}

TEST(GpuPoolTest, EarliestStartTiesGoToTheFirstNodeByNameAsNodesChange) {
  ClusterSnapshot cluster{
      {MakeNode("c", 1, "H100"), MakeNode("a", 1, "H100"), MakeNode("b", 1, "H100")}};
  cluster.running = {Running(1, "a", {0}, std::chrono::hours(1)),
                     Running(2, "b", {0}, std::chrono::hours(1)),
                     Running(3, "c", {0}, std::chrono::hours(1))};
  GpuPool pool(cluster, FromUnixMillis(kNow));
  const Shape one = pool.ShapeOf(Request(1));
  for (const char* name : {"a", "b", "c"}) {
    const std::optional<PoolReservation> start = pool.EarliestStart(one);
    ASSERT_TRUE(start.has_value());
    EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(start->fit.node)].name, NodeId(name));
    EXPECT_EQ(start->start_ms, kNow + kHour);
    pool.Reserve(*start, /*waiter=*/0, kNow + 2 * kHour);  // later: the next node ties first
  }
  const std::optional<PoolReservation> start = pool.EarliestStart(one);
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(start->fit.node)].name, NodeId("a"));
  EXPECT_EQ(start->start_ms, kNow + 2 * kHour);
}

TEST(GpuPoolTest, EarliestStartComesFromTheRunningJobsExpectedEnds) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100"), MakeNode("b", 4, "H100")}};
  cluster.running = {Running(1, "a", {0, 1, 2}, std::chrono::hours(2)),
                     Running(2, "b", {0, 1}, std::chrono::hours(1)),
                     Running(3, "b", {2, 3}, std::nullopt)};  // never foreseeable
  GpuPool pool(cluster, FromUnixMillis(kNow));
  std::optional<PoolReservation> reservation = pool.EarliestStart(pool.ShapeOf(Request(2)));
  ASSERT_TRUE(reservation.has_value());
  // a: GPU 3 now, 0..2 at 2h → 2 GPUs at 2h; b: 0,1 at 1h → the earliest.
  EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(reservation->fit.node)].name, NodeId("b"));
  EXPECT_EQ(reservation->start_ms, kNow + kHour);
  EXPECT_EQ(Indexes(pool, reservation->fit), (std::vector<int>{0, 1}));
  // 4 GPUs: only a can say (b's job 3 has no limit).
  reservation = pool.EarliestStart(pool.ShapeOf(Request(4)));
  ASSERT_TRUE(reservation.has_value());
  EXPECT_EQ(reservation->start_ms, kNow + 2 * kHour);
  EXPECT_FALSE(pool.EarliestStart(pool.ShapeOf(Request(5))).has_value());
}

TEST(GpuPoolTest, EarliestStartFollowsWhatThePassTookAndReserved) {
  ClusterSnapshot cluster{{MakeNode("a", 2, "H100"), MakeNode("b", 2, "H100")}};
  cluster.running = {Running(1, "a", {0, 1}, std::chrono::hours(1))};
  GpuPool pool(cluster, FromUnixMillis(kNow));
  const Shape two = pool.ShapeOf(Request(2));
  std::optional<PoolReservation> start = pool.EarliestStart(two);
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(start->start_ms, kNow);  // b is idle
  const std::optional<PoolFit> fit = pool.FindFit(two, kNow + 3 * kHour);
  ASSERT_TRUE(fit.has_value());
  pool.Take(*fit, kNow + 3 * kHour);  // b is busy for 3h now
  start = pool.EarliestStart(two);
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(start->fit.node)].name, NodeId("a"));
  EXPECT_EQ(start->start_ms, kNow + kHour);
  pool.Reserve(*start, /*waiter=*/0, kNow + 5 * kHour);  // a is set aside from 1h to 5h
  start = pool.EarliestStart(two);
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(start->fit.node)].name, NodeId("b"));
  EXPECT_EQ(start->start_ms, kNow + 3 * kHour);
  pool.ClaimGpus(start->fit.gpus, /*waiter=*/1);  // claimed: never free again in this pass
  start = pool.EarliestStart(two);
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(start->start_ms, kNow + 5 * kHour);
}

TEST(GpuPoolTest, AReservedFreeGpuGoesOnlyToAJobThatGivesItBackInTime) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100")}};
  cluster.running = {Running(1, "a", {0, 1, 2}, std::chrono::hours(1))};
  GpuPool pool(cluster, FromUnixMillis(kNow));
  const std::optional<PoolReservation> reservation = pool.EarliestStart(pool.ShapeOf(Request(4)));
  ASSERT_TRUE(reservation.has_value());
  pool.Reserve(*reservation, /*waiter=*/0, reservation->start_ms + kHour);
  const Shape one = pool.ShapeOf(Request(1));
  EXPECT_FALSE(pool.FindFit(one, kNever).has_value());                 // no limit: never
  EXPECT_FALSE(pool.FindFit(one, kNow + kHour + 1).has_value());       // a millisecond late
  const std::optional<PoolFit> fit = pool.FindFit(one, kNow + kHour);  // just in time
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(Indexes(pool, *fit), (std::vector<int>{3}));
  // Who is in the way of a job that does not fit: the waiter that reserved.
  EXPECT_EQ(pool.WhoIsInTheWay(one).first_waiter, std::optional<int>(0));
}

TEST(GpuPoolTest, AClaimKeepsEveryMatchingGpuOfLargeEnoughNodesFromLaterJobs) {
  ClusterSnapshot cluster{{MakeNode("big", 8, "H100"), MakeNode("small", 2, "H100")}};
  cluster.nodes[0].allocated = {
      Uuid("big", 0), Uuid("big", 1), Uuid("big", 2), Uuid("big", 3), Uuid("big", 4)};
  GpuPool pool(cluster, FromUnixMillis(kNow));
  EXPECT_TRUE(pool.Claim(pool.ShapeOf(Request(4)), /*waiter=*/7));
  EXPECT_FALSE(pool.Claim(pool.ShapeOf(Request(6)), 8));  // covered by the first claim
  const std::optional<PoolFit> fit = pool.FindFit(pool.ShapeOf(Request(2)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(fit->node)].name, NodeId("small"));
  EXPECT_FALSE(pool.FindFit(pool.ShapeOf(Request(3)), kNever).has_value());
  EXPECT_EQ(pool.WhoIsInTheWay(pool.ShapeOf(Request(3))).first_waiter, std::optional<int>(7));
}

// An 8-GPU node with two NVLink quads (0-3, 4-7) on NUMA nodes 0 and 1.
NodeSnapshot TwoQuadNode(const std::string& name) {
  NodeSnapshot node = MakeNode(name, 8, "H100");
  for (Gpu& gpu : node.node.gpus) {
    const int quad = gpu.index / 4;
    gpu.numa_node = quad;
    for (int peer = quad * 4; peer < quad * 4 + 4; ++peer) {
      if (peer != gpu.index) {
        gpu.nvlink_peers.push_back(peer);
      }
    }
  }
  return node;
}

TEST(GpuPoolTest, ChoosesGpusOnTheNodeByTopologyThenLoad) {
  ClusterSnapshot cluster{{TwoQuadNode("a")}};
  // 0, 1 and 4 busy: free are 2, 3 (quad 0) and 5, 6, 7 (quad 1).
  cluster.nodes[0].allocated = {Uuid("a", 0), Uuid("a", 1), Uuid("a", 4)};
  GpuPool pool(cluster, FromUnixMillis(kNow));
  // Index order would give 2, 3 — also an NVLink pair, and the one that keeps quad 1's three
  // together; a 3-GPU job must take quad 1's three, not 2, 3, 5 across the sockets.
  std::optional<PoolFit> fit = pool.FindFit(pool.ShapeOf(Request(3)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(Indexes(pool, *fit), (std::vector<int>{5, 6, 7}));
  fit = pool.FindFit(pool.ShapeOf(Request(2)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(Indexes(pool, *fit), (std::vector<int>{2, 3}));

  // A 1-GPU job takes from the pair 2, 3 so that quad 1's three stay together; between 2 and
  // 3 (equally good) the one a process gpufleet does not manage loads less wins.
  cluster.nodes[0].load = {{Uuid("a", 2), GpuLoad{.util_pct = 80, .memory_used_mib = 0}},
                           {Uuid("a", 5), GpuLoad{.util_pct = 0, .memory_used_mib = 0}}};
  GpuPool loaded(cluster, FromUnixMillis(kNow));
  fit = loaded.FindFit(loaded.ShapeOf(Request(1)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(Indexes(loaded, *fit), (std::vector<int>{3}));
  // Topology before load: even with 2 and 3 both busy elsewhere, the trio stays whole.
  cluster.nodes[0].load[Uuid("a", 3)] = GpuLoad{.util_pct = 95, .memory_used_mib = 70'000};
  GpuPool busier(cluster, FromUnixMillis(kNow));
  fit = busier.FindFit(busier.ShapeOf(Request(1)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(Indexes(busier, *fit), (std::vector<int>{2}));
}

TEST(GpuPoolTest, WithoutTopologyOrLoadGpusGoInIndexOrder) {
  ClusterSnapshot cluster{{MakeNode("a", 8, "H100")}};
  cluster.nodes[0].allocated = {Uuid("a", 0)};
  GpuPool pool(cluster, FromUnixMillis(kNow));
  const std::optional<PoolFit> fit = pool.FindFit(pool.ShapeOf(Request(3)), kNever);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(Indexes(pool, *fit), (std::vector<int>{1, 2, 3}));
}

TEST(GpuPoolTest, ModelsMatchIgnoringCaseAndLargestUsableIsPerModel) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100-80GB"), MakeNode("b", 2, "A100")}};
  const GpuPool pool(cluster, FromUnixMillis(kNow));
  EXPECT_EQ(pool.ShapeOf(Request(1, "h100-80gb")), pool.ShapeOf(Request(1, "H100-80GB")));
  EXPECT_EQ(pool.ShapeOf(Request(1, "V100")).model, kNoSuchModel);
  EXPECT_EQ(pool.LargestUsable(pool.ShapeOf(Request(1, "a100"))), 2);
  EXPECT_EQ(pool.LargestUsable(pool.ShapeOf(Request(1))), 4);
  EXPECT_EQ(pool.UsableModels(), "A100, H100-80GB");
}

}  // namespace
}  // namespace gf
