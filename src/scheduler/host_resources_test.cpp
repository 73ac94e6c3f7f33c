// Host CPUs and memory (issue #24): counted like GPUs. A job fits a node only with enough free
// CPUs and memory there; reasons and CheckFeasible say which resource is short; nodes that do
// not report a capacity (0) do not count it.
#include <gtest/gtest.h>

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

TEST(HostResourcesTest, RequestsDescribeTheirHostPart) {
  EXPECT_EQ(DescribeRequest(HostJob(1, 2, 8, 65'536).request), "2 GPUs, 8 CPUs, 64 GiB memory");
  EXPECT_EQ(DescribeRequest(HostJob(1, 0, 4, 0).request), "no GPU, 4 CPUs");
  EXPECT_EQ(DescribeRequest(HostJob(1, 1, 0, 0).request), "1 GPU");
}

}  // namespace
}  // namespace gf
