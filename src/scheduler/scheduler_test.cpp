#include "scheduler/scheduler.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Request;
using testing::Uuid;

Decisions DecideAll(const ClusterSnapshot& cluster, std::vector<QueuedJob> jobs) {
  return Decide(cluster, Queue{std::move(jobs)}, PolicyConfig{}, FromUnixMillis(0));
}

std::vector<std::int64_t> Started(const Decisions& d) {
  std::vector<std::int64_t> ids;
  for (const StartDecision& s : d.starts) {
    ids.push_back(s.job.value());
  }
  return ids;
}

std::string ReasonOf(const Decisions& d, std::int64_t id) {
  for (const PendingDecision& p : d.pending) {
    if (p.job == JobId(id)) {
      return p.reason.text;
    }
  }
  return "(not pending)";
}

TEST(SchedulerDecideTest, EmptyQueueDecidesNothing) {
  const Decisions d = DecideAll(ClusterSnapshot{{MakeNode("n", 8, "H100")}}, {});
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.pending.empty());
}

TEST(SchedulerDecideTest, StartsInPriorityOrderAndLaterJobsSeeEarlierStarts) {
  ClusterSnapshot cluster{{MakeNode("n", 4, "H100")}};
  const Decisions d = DecideAll(cluster,
                                {MakeJob(1, 4, std::nullopt, PriorityClass::kNormal, 0),
                                 MakeJob(2, 4, std::nullopt, PriorityClass::kHigh, 5)});
  EXPECT_EQ(Started(d), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(ReasonOf(d, 1), "needs 4 GPUs; 0 free");
}

TEST(SchedulerDecideTest, PacksJobsOntoFewestNodes) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100"), MakeNode("b", 4, "H100")}};
  const Decisions d = DecideAll(cluster, {MakeJob(1, 2), MakeJob(2, 2), MakeJob(3, 4)});
  ASSERT_EQ(Started(d), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(d.starts[0].allocation.node, NodeId("a"));
  EXPECT_EQ(d.starts[1].allocation.node, NodeId("a"));
  EXPECT_EQ(d.starts[1].allocation.gpus, (std::vector<GpuUuid>{Uuid("a", 2), Uuid("a", 3)}));
  EXPECT_EQ(d.starts[2].allocation.node, NodeId("b"));
}

TEST(SchedulerDecideTest, BlockedJobBlocksLaterJobsOfSameOrLowerPriority) {
  ClusterSnapshot cluster{{MakeNode("n", 8, "H100")}};
  for (int i = 0; i < 6; ++i) {
    cluster.nodes[0].allocated.insert(Uuid("n", i));
  }
  const Decisions d = DecideAll(cluster,
                                {MakeJob(1, 4, std::nullopt, PriorityClass::kNormal, 0),
                                 MakeJob(2, 1, std::nullopt, PriorityClass::kNormal, 1),
                                 MakeJob(3, 1, std::nullopt, PriorityClass::kLow, 0)});
  EXPECT_TRUE(d.starts.empty());
  EXPECT_EQ(ReasonOf(d, 1), "needs 4 GPUs on one node; at most 2 free on a node (n: 2 of 8 free)");
  EXPECT_EQ(ReasonOf(d, 2), "behind job 1 (normal priority, needs 4 GPUs)");
  EXPECT_EQ(ReasonOf(d, 3), "behind job 1 (normal priority, needs 4 GPUs)");
}

TEST(SchedulerDecideTest, BlockedJobDoesNotHoldBackWorkItCouldNotUse) {
  ClusterSnapshot cluster{
      {MakeNode("h", 8, "H100"), MakeNode("a", 2, "A100"), MakeNode("small", 2, "H100")}};
  cluster.nodes[0].allocated.insert(Uuid("h", 0));
  const Decisions d = DecideAll(cluster,
                                {MakeJob(1, 8, "H100", PriorityClass::kHigh),
                                 MakeJob(2, 2, "A100"),    // other model
                                 MakeJob(3, 0),            // CPU-only
                                 MakeJob(4, 2, "H100"),    // a node job 1 cannot use
                                 MakeJob(5, 1, "H100")});  // only h or small, small is full
  EXPECT_EQ(Started(d), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(ReasonOf(d, 5), "behind job 1 (high priority, needs 8 GPUs of type H100)");
}

TEST(SchedulerDecideTest, JobThatCanNeverStartOnUpNodesDoesNotBlock) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100"), MakeNode("b", 8, "H100", NodeState::kDown)}};
  const Decisions d = DecideAll(cluster, {MakeJob(1, 8), MakeJob(2, 4), MakeJob(3, 1, "V100")});
  EXPECT_EQ(Started(d), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(ReasonOf(d, 1), "needs 8 GPUs on one node; the largest up node has 4 usable");
  EXPECT_EQ(ReasonOf(d, 3), "needs 1 GPU of type V100; no up node has one (up: H100)");
}

TEST(SchedulerDecideTest, FailedGpusAndNodesNotUpAreSkipped) {
  ClusterSnapshot cluster{
      {MakeNode("a", 2, "H100"), MakeNode("b", 4, "H100", NodeState::kDraining)}};
  cluster.nodes[0].node.gpus[0].health = GpuHealth::kFailed;
  const Decisions d = DecideAll(cluster, {MakeJob(1, 1), MakeJob(2, 1)});
  ASSERT_EQ(Started(d), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(d.starts[0].allocation.gpus, (std::vector<GpuUuid>{Uuid("a", 1)}));
  EXPECT_EQ(ReasonOf(d, 2), "needs 1 GPU; 0 free");
}

TEST(SchedulerDecideTest, NoNodeUpAndInvalidRequestsGetReasons) {
  ClusterSnapshot cluster{{MakeNode("a", 2, "H100", NodeState::kDown)}};
  const Decisions d = DecideAll(cluster, {MakeJob(1, 1), MakeJob(2, 0), MakeJob(3, -1)});
  EXPECT_TRUE(d.starts.empty());
  EXPECT_EQ(ReasonOf(d, 1), "no node takes new work: node a is down");
  EXPECT_EQ(ReasonOf(d, 2), "no node takes new work: node a is down");
  EXPECT_EQ(ReasonOf(d, 3), "invalid request: gpus is -1, must be 0 or more");
  EXPECT_EQ(ReasonOf(DecideAll(ClusterSnapshot{}, {MakeJob(1, 1)}), 1), "no node is up");
}

// Issue #24: with its only node drained, a job said "no node is up" and the admin's reason was
// nowhere to be seen; the reason names each node that is not up, its state and why.
TEST(SchedulerDecideTest, NoNodeUpNamesTheDrainAndItsReason) {
  ClusterSnapshot cluster{{MakeNode("n2", 2, "H100", NodeState::kDown),
                           MakeNode("n1", 2, "H100", NodeState::kDraining)}};
  cluster.nodes[1].node.state_reason = "disk swap";
  const Decisions d = DecideAll(cluster, {MakeJob(1, 1)});
  EXPECT_EQ(ReasonOf(d, 1),
            "no node takes new work: node n1 is draining: disk swap; node n2 is down");
  for (const char* name : {"n3", "n4", "n5"}) {
    cluster.nodes.push_back(MakeNode(name, 2, "H100", NodeState::kDrained));
  }
  EXPECT_EQ(ReasonOf(DecideAll(cluster, {MakeJob(1, 1)}), 1),
            "no node takes new work: node n1 is draining: disk swap; node n2 is down; node n3 is "
            "drained; 2 more not up");
}

TEST(SchedulerDecideTest, SameInputInAnyQueueOrderGivesSameDecisions) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100"), MakeNode("b", 8, "A100")}};
  std::vector<QueuedJob> jobs = {MakeJob(1, 3),
                                 MakeJob(2, 2, "a100"),
                                 MakeJob(3, 4, std::nullopt, PriorityClass::kHigh, 9),
                                 MakeJob(4, 8),
                                 MakeJob(5, 1, std::nullopt, PriorityClass::kLow)};
  const Decisions first = DecideAll(cluster, jobs);
  std::reverse(jobs.begin(), jobs.end());
  const Decisions second = DecideAll(cluster, jobs);
  ASSERT_EQ(Started(first), Started(second));
  for (std::size_t i = 0; i < first.starts.size(); ++i) {
    EXPECT_EQ(first.starts[i].allocation, second.starts[i].allocation);
  }
  ASSERT_EQ(first.pending.size(), second.pending.size());
  for (std::size_t i = 0; i < first.pending.size(); ++i) {
    EXPECT_EQ(first.pending[i].job, second.pending[i].job);
    EXPECT_EQ(first.pending[i].reason, second.pending[i].reason);
  }
}

std::vector<std::int64_t> Listed(const Decisions& d) {
  std::vector<std::int64_t> ids;
  for (const PendingDecision& p : d.pending) {
    ids.push_back(p.job.value());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Two full nodes of 2 GPUs (their jobs end in an hour), backfill depth 1, no preemption.
// Job 1 reserves the first GPUs to come back; after it no job can set anything aside, so a
// job whose request is no smaller and ends no earlier than one that found no GPUs is passed
// over (2, and 3 which runs longer), while a smaller request (4) and the first gang (5, 6)
// are looked at; the second gang of the same shape (7, 8) is passed over too.
TEST(SchedulerDecideTest, ALookedAtListingPassesOverJobsThatSurelyWait) {
  ClusterSnapshot cluster{{MakeNode("n1", 2, "H100"), MakeNode("n2", 2, "H100")}};
  for (const auto& [id, node] : {std::pair{100, "n1"}, std::pair{101, "n2"}}) {
    RunningJob running = testing::RunningOn(id, node, {0, 1});
    running.start_time = FromUnixMillis(0);
    running.time_limit = std::chrono::hours(1);
    cluster.running.push_back(running);
    cluster.nodes[id - 100].allocated = {Uuid(node, 0), Uuid(node, 1)};
  }
  std::vector<QueuedJob> jobs;
  const auto add = [&](std::int64_t id,
                       int gpus,
                       std::chrono::seconds limit,
                       std::optional<std::int64_t> gang = std::nullopt) {
    QueuedJob job = MakeJob(id, gpus, std::nullopt, PriorityClass::kNormal, id);
    job.time_limit = limit;
    if (gang.has_value()) {
      job.gang = JobId(*gang);
      job.request.nodes = 2;
    }
    jobs.push_back(job);
  };
  add(1, 2, std::chrono::hours(1));
  add(2, 2, std::chrono::hours(1));
  add(3, 2, std::chrono::hours(2));
  add(4, 1, std::chrono::hours(1));
  add(5, 2, std::chrono::hours(1), 5);
  add(6, 2, std::chrono::hours(1), 5);
  add(7, 2, std::chrono::hours(1), 7);
  add(8, 2, std::chrono::hours(1), 7);
  PolicyConfig policy;
  policy.backfill.depth = 1;
  policy.preemption.enabled = false;
  policy.prediction.enabled = false;  // in submit order: no job moves up for being smaller
  const Queue queue{jobs};
  const Time now = FromUnixMillis(60'000);
  const Decisions every = Decide(cluster, queue, policy, now, Listing::kEveryJob);
  const Decisions looked = Decide(cluster, queue, policy, now, Listing::kLookedAt);
  EXPECT_TRUE(every.starts.empty());
  EXPECT_TRUE(looked.starts.empty());
  EXPECT_EQ(Listed(every), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(Listed(looked), (std::vector<std::int64_t>{1, 4, 5, 6}));
  EXPECT_EQ(ReasonOf(looked, 1), ReasonOf(every, 1));
  ASSERT_TRUE(looked.pending.front().estimated_start.has_value());  // its reservation
  EXPECT_EQ(ReasonOf(looked, 5), ReasonOf(every, 5));

  // With backfill off a waiting job claims what it could use; a later one is passed over only
  // once an earlier claim covers its own and a no smaller request found no GPUs: the 1-GPU
  // job 4 claims again, and the first gang has no failed gang before it.
  policy.backfill.enabled = false;
  const Decisions strict = Decide(cluster, queue, policy, now, Listing::kLookedAt);
  EXPECT_EQ(Listed(strict), (std::vector<std::int64_t>{1, 4, 5, 6}));
  EXPECT_EQ(Listed(Decide(cluster, queue, policy, now)),
            (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(SchedulerCheckFeasibleTest, AcceptsWhatFitsOnSomeNodeThatIsNotDown) {
  ClusterSnapshot cluster{
      {MakeNode("a", 4, "H100-80GB"), MakeNode("b", 8, "A100-40GB", NodeState::kDrained)}};
  cluster.nodes[0].allocated.insert(Uuid("a", 0));  // busy GPUs do not matter
  EXPECT_TRUE(CheckFeasible(cluster, Request(8)).ok());
  EXPECT_TRUE(CheckFeasible(cluster, Request(4, "h100-80gb")).ok());
  EXPECT_TRUE(CheckFeasible(cluster, Request(0)).ok());
  EXPECT_TRUE(CheckFeasible(ClusterSnapshot{}, Request(3, "V100")).ok());
}

TEST(SchedulerCheckFeasibleTest, MultiNodeJobNeedsThatManyNodesThatCouldTakeAMember) {
  ClusterSnapshot cluster{{MakeNode("a", 8, "H100-80GB"),
                           MakeNode("b", 4, "H100-80GB", NodeState::kDrained),
                           MakeNode("c", 8, "H100-80GB", NodeState::kDown)}};
  JobRequest two = Request(4);
  two.nodes = 2;
  EXPECT_TRUE(CheckFeasible(cluster, two).ok());  // a and b (drained nodes come back)
  JobRequest wide = Request(8);
  wide.nodes = 2;
  const Status too_wide = CheckFeasible(cluster, wide);
  ASSERT_FALSE(too_wide.ok());
  EXPECT_EQ(too_wide.error().message,
            "nodes: 8 GPUs on each of 2 nodes requested, only 1 node has that many; ask for "
            "fewer nodes or fewer GPUs per node");
  JobRequest cpus = Request(0);
  cpus.nodes = 3;
  EXPECT_EQ(CheckFeasible(cluster, cpus).error().message,
            "nodes: 3 nodes requested, this cluster has 2; ask for at most that many");
}

TEST(SchedulerCheckFeasibleTest, NamesTheFieldThatCannotBeMet) {
  ClusterSnapshot cluster{{MakeNode("a", 8, "H100-80GB"),
                           MakeNode("b", 4, "A100-40GB"),
                           MakeNode("c", 16, "H100-80GB", NodeState::kDown)}};
  cluster.nodes[1].node.gpus[3].health = GpuHealth::kFailed;

  const Status too_many = CheckFeasible(cluster, Request(9));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(too_many.error().message, "gpus: 9 GPUs requested on one node, the largest node has 8");

  const Status typed = CheckFeasible(cluster, Request(4, "A100-40GB"));
  ASSERT_FALSE(typed.ok());
  EXPECT_EQ(typed.error().message,
            "gpus: 4 GPUs of type A100-40GB requested on one node, the largest node has 3 of "
            "that type");

  const Status unknown = CheckFeasible(cluster, Request(1, "V100"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message,
            "gpu-type: no GPU of type 'V100' in this cluster; types: A100-40GB, H100-80GB");

  const Status negative = CheckFeasible(cluster, Request(-2));
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message, "gpus: must be 0 or more, got -2");
}

}  // namespace
}  // namespace gf
