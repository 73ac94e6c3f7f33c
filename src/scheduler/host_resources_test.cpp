// Host CPUs and memory (issue #24): counted like GPUs. A job fits a node only with enough free
// CPUs and memory there; reasons and CheckFeasible say which resource is short; nodes that do
// not report a capacity (0) do not count it.
#include <gtest/gtest.h>

#include "scheduler/explain.h"
#include "scheduler/incremental.h"
#include "scheduler/placement/whole_gpu_fit.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::RunningOn;

NodeSnapshot HostNode(const std::string& name, int gpus, int cpus, std::int64_t memory_mib) {
  NodeSnapshot node = MakeNode(name, gpus, "H100");
  node.node.cpus = cpus;
  node.node.memory_mib = memory_mib;
  return node;
}

QueuedJob HostJob(std::int64_t id, int gpus, int cpus, std::int64_t memory_mib) {
  QueuedJob job = MakeJob(id, gpus);
  job.request.cpus = cpus;
  job.request.memory_mib = memory_mib;
  return job;
}

Decisions DecideAll(const ClusterSnapshot& cluster, std::vector<QueuedJob> jobs) {
  return Decide(cluster, Queue{std::move(jobs)}, PolicyConfig{}, FromUnixMillis(0));
}

const PendingDecision* PendingOf(const Decisions& d, std::int64_t id) {
  for (const PendingDecision& p : d.pending) {
    if (p.job == JobId(id)) {
      return &p;
    }
  }
  return nullptr;
}

TEST(HostResourcesTest, StartsHoldTheirCpusAndMemoryAndLaterJobsSeeThem) {
  ClusterSnapshot cluster{{HostNode("a", 8, 32, 262'144)}};
  const Decisions d =
      DecideAll(cluster, {HostJob(1, 2, 24, 65'536), HostJob(2, 2, 16, 1024), HostJob(3, 2, 8, 0)});
  ASSERT_EQ(d.starts.size(), 2U);
  EXPECT_EQ(d.starts[0].job, JobId(1));
  EXPECT_EQ(d.starts[0].allocation.cpus, 24);
  EXPECT_EQ(d.starts[0].allocation.memory_mib, 65'536);
  EXPECT_EQ(d.starts[1].job, JobId(3));  // 24 + 8 = 32 CPUs: job 2's 16 do not fit
  const PendingDecision* two = PendingOf(d, 2);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->reason.code, PendingCode::kCpuMemBusy);
  EXPECT_TRUE(two->reason.can_ever_fit);
  EXPECT_EQ(two->reason.text,
            "needs 2 GPUs, 16 CPUs, 1 GiB memory; its GPUs are free but not with that many free "
            "host CPUs and that much memory on one node (most free: 8 CPUs on a, 192 GiB memory "
            "on a)");
}

TEST(HostResourcesTest, MemoryIsCountedLikeCpusAndGoesToTheNodeWithRoom) {
  ClusterSnapshot cluster{{HostNode("a", 4, 64, 16'384), HostNode("b", 8, 64, 524'288)}};
  const Decisions d = DecideAll(cluster, {HostJob(1, 1, 1, 131'072)});
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].allocation.node, NodeId("b"));  // a has the fewest GPUs, not the memory
}

TEST(HostResourcesTest, RunningJobsHoldTheirsAndCpuOnlyJobsToo) {
  ClusterSnapshot cluster{{HostNode("a", 2, 16, 65'536)}};
  RunningJob running = RunningOn(7, "a", {0});
  running.allocation.cpus = 12;
  running.allocation.memory_mib = 1024;
  cluster.running.push_back(running);
  cluster.nodes[0].allocated.insert(running.allocation.gpus[0]);
  RunningJob cpu_only = RunningOn(8, "a", {});
  cpu_only.allocation.cpus = 2;
  cluster.running.push_back(cpu_only);
  const Decisions d = DecideAll(cluster, {HostJob(1, 1, 4, 0), HostJob(2, 0, 2, 0)});
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].job, JobId(2));  // 12 + 2 held, 2 left: the CPU-only job's 2 fit
  EXPECT_EQ(PendingOf(d, 1)->reason.code, PendingCode::kCpuMemBusy);
}

TEST(HostResourcesTest, MoreThanAnyNodeHasNeverFitsAndIsRefusedAtSubmit) {
  ClusterSnapshot cluster{{HostNode("a", 8, 32, 65'536), HostNode("b", 8, 48, 32'768)}};
  const Decisions d = DecideAll(cluster, {HostJob(1, 1, 64, 0)});
  const PendingDecision* one = PendingOf(d, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->reason.code, PendingCode::kCpuMemTooLarge);
  EXPECT_FALSE(one->reason.can_ever_fit);
  EXPECT_EQ(one->reason.text,
            "needs 1 GPU, 64 CPUs; no up node that could take it has that many host CPUs and "
            "that much memory (the most: 48 CPUs on b, 64 GiB memory on a)");

  JobRequest cpus = HostJob(2, 1, 64, 0).request;
  Status s = CheckFeasible(cluster, cpus);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "cpus: 64 CPUs requested on one node, the largest node has 48 for jobs; ask for fewer");
  JobRequest mem = HostJob(3, 1, 0, 131'072).request;
  s = CheckFeasible(cluster, mem);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "mem: 128 GiB requested on one node, the largest node has 64 GiB for jobs; ask for "
            "less");
  JobRequest both = HostJob(4, 1, 40, 65'536).request;  // a has the memory, b the CPUs
  s = CheckFeasible(cluster, both);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.rfind("cpus, mem: 40 CPUs, 64 GiB memory requested", 0), 0U);
  EXPECT_TRUE(CheckFeasible(cluster, HostJob(5, 1, 48, 32'768).request).ok());
}

TEST(HostResourcesTest, NodesThatReportNoCapacityDoNotCountIt) {
  ClusterSnapshot cluster{{MakeNode("a", 2, "H100")}};  // cpus 0, memory 0: not reported
  const Decisions d = DecideAll(cluster, {HostJob(1, 1, 512, 1 << 20), HostJob(2, 1, 512, 0)});
  EXPECT_EQ(d.starts.size(), 2U);
  EXPECT_TRUE(CheckFeasible(cluster, HostJob(3, 1, 512, 0).request).ok());
}

TEST(HostResourcesTest, GangMembersEachNeedTheirCpusOnTheirNode) {
  ClusterSnapshot cluster{
      {HostNode("a", 4, 8, 65'536), HostNode("b", 4, 32, 65'536), HostNode("c", 4, 32, 65'536)}};
  std::vector<QueuedJob> members;
  for (int rank = 0; rank < 2; ++rank) {
    QueuedJob member = HostJob(10 + rank, 4, 16, 0);
    member.request.nodes = 2;
    member.gang = JobId(10);
    members.push_back(member);
  }
  const Decisions d = DecideAll(cluster, members);
  ASSERT_EQ(d.starts.size(), 2U);
  EXPECT_EQ(d.starts[0].allocation.node, NodeId("b"));
  EXPECT_EQ(d.starts[1].allocation.node, NodeId("c"));
  EXPECT_EQ(d.starts[0].allocation.cpus, 16);
}

TEST(HostResourcesTest, NoPreemptionWhoseVictimsWouldNotFreeTheCpus) {
  ClusterSnapshot cluster{{HostNode("a", 2, 8, 65'536)}};
  RunningJob low = RunningOn(7, "a", {0, 1});
  low.priority = PriorityClass::kLow;
  low.start_time = FromUnixMillis(0);
  cluster.running.push_back(low);
  RunningJob cpu_hog = RunningOn(8, "a", {});  // holds every CPU, no GPU
  cpu_hog.priority = PriorityClass::kHigh;
  cpu_hog.allocation.cpus = 8;
  cluster.running.push_back(cpu_hog);
  for (const GpuUuid& g : low.allocation.gpus) {
    cluster.nodes[0].allocated.insert(g);
  }
  QueuedJob high = HostJob(1, 2, 4, 0);
  high.priority = PriorityClass::kHigh;
  const Decisions d = Decide(cluster, Queue{{high}}, PolicyConfig{}, FromUnixMillis(3'600'000));
  EXPECT_TRUE(d.preemptions.empty());  // job 7's GPUs would not bring job 8's CPUs back
  EXPECT_TRUE(d.starts.empty());
}

TEST(HostResourcesTest, IncrementalSchedulerCountsThemAcrossArrivalsAndEnds) {
  IncrementalScheduler scheduler;
  ClusterSnapshot cluster{{HostNode("a", 8, 16, 65'536)}};
  Decisions first = scheduler.Full(cluster, Queue{}, PolicyConfig{}, FromUnixMillis(0));
  EXPECT_TRUE(first.starts.empty());
  IncrementalResult one = scheduler.OnArrival(HostJob(1, 1, 12, 0), FromUnixMillis(1000));
  ASSERT_EQ(one.decisions.starts.size(), 1U);
  IncrementalResult two = scheduler.OnArrival(HostJob(2, 1, 8, 0), FromUnixMillis(2000));
  EXPECT_TRUE(two.decisions.starts.empty());  // 12 of 16 CPUs held
  IncrementalResult ended = scheduler.OnCompletion(JobId(1), FromUnixMillis(3000));
  ASSERT_EQ(ended.decisions.starts.size(), 1U);
  EXPECT_EQ(ended.decisions.starts[0].job, JobId(2));
}

// Reservations (backfill) set host CPUs and memory aside too: a job short of CPUs reserves
// them from when they are expected back, later jobs take them only if they end by then, and a
// job short of GPUs starts no earlier than its node has the CPUs it asks.
constexpr std::int64_t kHourMs = 3'600'000;

RunningJob HoldingCpus(std::int64_t id, const std::string& node, int cpus, std::int64_t hours) {
  RunningJob job = RunningOn(id, node, {});
  job.allocation.cpus = cpus;
  job.start_time = FromUnixMillis(0);
  job.time_limit = std::chrono::hours(hours);
  return job;
}

QueuedJob Limited(QueuedJob job, std::chrono::seconds limit) {
  job.time_limit = limit;
  return job;
}

TEST(HostResourcesTest, AJobShortOfCpusReservesThemAndOnlyJobsEndingBeforeThenBackfill) {
  ClusterSnapshot cluster{{HostNode("a", 8, 32, 0)}};
  cluster.running.push_back(HoldingCpus(7, "a", 24, 1));  // 24 of 32 CPUs until 1h
  const Decisions d =
      DecideAll(cluster,
                {HostJob(1, 1, 28, 0),                                      // short of CPUs now
                 Limited(HostJob(2, 1, 8, 0), std::chrono::hours(2)),       // would still run at 1h
                 Limited(HostJob(3, 1, 8, 0), std::chrono::minutes(30))});  // ends before
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].job, JobId(3));
  const PendingDecision* one = PendingOf(d, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->reason.code, PendingCode::kGpusReserved);
  ASSERT_TRUE(one->estimated_start.has_value());
  EXPECT_EQ(ToUnixMillis(*one->estimated_start), kHourMs);
  ASSERT_TRUE(one->reservation.has_value());
  EXPECT_EQ(one->reservation->node, NodeId("a"));
  EXPECT_NE(one->reason.text.find("(GPUs, CPUs reserved; "), std::string::npos) << one->reason.text;
  const PendingDecision* two = PendingOf(d, 2);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->reason.code, PendingCode::kCpuMemBusy);
  EXPECT_EQ(two->reason.text,
            "needs 1 GPU, 8 CPUs; its GPUs and host CPUs and memory are free now, but those are "
            "reserved for a job ahead before this one would end");
}

TEST(HostResourcesTest, ExplainMarksANodeWhoseCpusAreReservedForAJobAhead) {
  ClusterSnapshot cluster{{HostNode("a", 8, 32, 0)}};
  cluster.running.push_back(HoldingCpus(7, "a", 24, 1));
  const Queue queue{{HostJob(1, 1, 28, 0), Limited(HostJob(2, 1, 8, 0), std::chrono::hours(2))}};
  const Result<Explanation> e =
      Explain(cluster, queue, PolicyConfig{}, FromUnixMillis(0), JobId(2));
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->nodes.size(), 1U);
  EXPECT_EQ(e->nodes[0].verdict, "reserved");
  EXPECT_NE(e->nodes[0].detail.find("host CPUs or memory are reserved for a job ahead"),
            std::string::npos)
      << e->nodes[0].detail;
}

TEST(HostResourcesTest, ACpuOnlyJobShortOfCpusGetsAReservationToo) {
  ClusterSnapshot cluster{{HostNode("a", 0, 16, 0)}};
  cluster.running.push_back(HoldingCpus(7, "a", 12, 2));
  const Decisions d =
      DecideAll(cluster, {HostJob(1, 0, 8, 0), HostJob(2, 0, 4, 0), HostJob(3, 0, 2, 0)});
  const PendingDecision* one = PendingOf(d, 1);
  ASSERT_NE(one, nullptr);
  ASSERT_TRUE(one->estimated_start.has_value());
  EXPECT_EQ(ToUnixMillis(*one->estimated_start), 2 * kHourMs);
  EXPECT_NE(one->reason.text.find("(CPUs reserved; "), std::string::npos) << one->reason.text;
  // 4 CPUs are free now, but jobs without a limit would still hold them at 2h, when job 1
  // needs 8 of the 16 (12 + 4 would leave it none): only one of them fits beside it.
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].job, JobId(2));
}

TEST(HostResourcesTest, AReservationWaitsForTheCpusAsWellAsTheGpus) {
  ClusterSnapshot cluster{{HostNode("a", 2, 32, 0)}};
  RunningJob gpus = RunningOn(7, "a", {0, 1});  // both GPUs until 1h
  gpus.start_time = FromUnixMillis(0);
  gpus.time_limit = std::chrono::hours(1);
  cluster.running.push_back(gpus);
  for (const GpuUuid& g : gpus.allocation.gpus) {
    cluster.nodes[0].allocated.insert(g);
  }
  cluster.running.push_back(HoldingCpus(8, "a", 30, 3));  // 30 CPUs until 3h
  const Decisions d = DecideAll(cluster, {HostJob(1, 2, 8, 0)});
  const PendingDecision* one = PendingOf(d, 1);
  ASSERT_NE(one, nullptr);
  ASSERT_TRUE(one->estimated_start.has_value());
  EXPECT_EQ(ToUnixMillis(*one->estimated_start), 3 * kHourMs);  // not 1h: 30 + 8 > 32 till 3h
}

TEST(HostResourcesTest, WithoutBackfillAJobShortOfCpusSetsNothingAside) {
  ClusterSnapshot cluster{{HostNode("a", 8, 32, 0)}};
  cluster.running.push_back(HoldingCpus(7, "a", 24, 1));
  PolicyConfig policy;
  policy.backfill.enabled = false;
  const Decisions d = Decide(
      cluster, Queue{{HostJob(1, 1, 28, 0), HostJob(2, 1, 8, 0)}}, policy, FromUnixMillis(0));
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].job, JobId(2));
  EXPECT_EQ(PendingOf(d, 1)->reason.code, PendingCode::kCpuMemBusy);
  EXPECT_FALSE(PendingOf(d, 1)->reservation.has_value());
}

TEST(HostResourcesTest, TheIncrementalSchedulerPlansHostHoldsAsAFullPassDoes) {
  // The pool kept between passes patches its host spans as jobs start, end and time passes:
  // each step's decisions equal a full pass over the same state.
  IncrementalScheduler scheduler;
  ClusterSnapshot cluster{{HostNode("a", 4, 32, 0)}};
  cluster.running.push_back(HoldingCpus(7, "a", 24, 1));
  PolicyConfig policy;
  Queue queue{{HostJob(1, 1, 28, 0), Limited(HostJob(2, 1, 8, 0), std::chrono::hours(2))}};
  const Decisions full = Decide(cluster, queue, policy, FromUnixMillis(1000));
  const Decisions first = scheduler.Full(cluster, queue, policy, FromUnixMillis(1000));
  EXPECT_EQ(first.starts.size(), full.starts.size());
  EXPECT_TRUE(first.starts.empty());
  IncrementalResult later = scheduler.OnArrival(
      Limited(HostJob(3, 1, 8, 0), std::chrono::minutes(30)), FromUnixMillis(2000));
  ASSERT_EQ(later.decisions.starts.size(), 1U);
  EXPECT_EQ(later.decisions.starts[0].job, JobId(3));
  // Job 7's 24 CPUs back: job 3's 8 + job 1's 28 are still too many; job 2 (2h) would hold 8
  // past job 3's end, when job 1's reservation begins: neither starts.
  IncrementalResult ended = scheduler.OnCompletion(JobId(7), FromUnixMillis(3000));
  EXPECT_TRUE(ended.decisions.starts.empty());
  ended = scheduler.OnCompletion(JobId(3), FromUnixMillis(4000));
  ASSERT_EQ(ended.decisions.starts.size(), 1U);
  EXPECT_EQ(ended.decisions.starts[0].job, JobId(1));  // its 28 CPUs, before job 2's 8
}

TEST(HostResourcesTest, RequestsDescribeTheirHostPart) {
  EXPECT_EQ(DescribeRequest(HostJob(1, 2, 8, 65'536).request), "2 GPUs, 8 CPUs, 64 GiB memory");
  EXPECT_EQ(DescribeRequest(HostJob(1, 0, 4, 0).request), "no GPU, 4 CPUs");
  EXPECT_EQ(DescribeRequest(HostJob(1, 1, 0, 0).request), "1 GPU");
}

}  // namespace
}  // namespace gf
