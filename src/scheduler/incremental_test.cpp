// Unit tests of the IncrementalScheduler (incremental.h): each path, when it is taken, and that
// what it decides is Decide()'s. incremental_property_test.cpp checks the same over random
// event sequences.
#include "scheduler/incremental.h"

#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::MakeJob;
using testing::MakeNode;

constexpr std::int64_t kNowMs = std::int64_t{10} * 3'600'000;  // 10h

Time At(std::int64_t ms) {
  return FromUnixMillis(ms);
}

// A running job on `node` holding GPUs [first, first + count), ending `ends_in_ms` from now.
RunningJob Running(std::int64_t id,
                   const std::string& node,
                   int first,
                   int count,
                   std::int64_t ends_in_ms,
                   const std::string& team = "") {
  std::vector<int> gpus(static_cast<std::size_t>(count));
  std::iota(gpus.begin(), gpus.end(), first);
  RunningJob job = testing::RunningOn(id, node, gpus);
  job.team = team;
  job.user = "u";
  job.start_time = At(kNowMs - 3'600'000);
  job.time_limit = std::chrono::seconds((3'600'000 + ends_in_ms) / 1000);
  return job;
}

// Two nodes of 4 GPUs, every GPU held by a running job with a known end.
ClusterSnapshot FullCluster() {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100"), MakeNode("b", 4, "H100")}};
  cluster.running = {Running(901, "a", 0, 2, 600'000),
                     Running(902, "a", 2, 2, 1'200'000),
                     Running(903, "b", 0, 4, 1'800'000)};
  return cluster;
}

// One reservation a pass and no preemption: after the first waiting job only starts are left.
PolicyConfig ShallowPolicy() {
  PolicyConfig policy;
  policy.preemption.enabled = false;
  policy.backfill.depth = 1;
  return policy;
}

QueuedJob Job(std::int64_t id, int gpus, PriorityClass priority = PriorityClass::kNormal) {
  QueuedJob job = MakeJob(id, gpus, std::nullopt, std::move(priority), id);
  job.user = "u";
  job.time_limit = std::chrono::hours(1);
  return job;
}

// Job 3 is short (5 minutes): it may backfill on GPUs reserved from later than that.
Queue FiveJobs() {
  Queue queue{{Job(1, 4), Job(2, 2), Job(3, 1), Job(4, 2), Job(5, 1)}};
  queue.pending[2].time_limit = std::chrono::minutes(5);
  return queue;
}

// Every start and pending decision in `got` is Decide()'s on `cluster` and `queue`, and it has
// all of Decide()'s starts.
void ExpectAsDecide(const Decisions& got,
                    const ClusterSnapshot& cluster,
                    const Queue& queue,
                    const PolicyConfig& policy,
                    Time now) {
  const Decisions want = Decide(cluster, queue, policy, now);
  ASSERT_EQ(got.starts.size(), want.starts.size());
  for (std::size_t i = 0; i < want.starts.size(); ++i) {
    EXPECT_EQ(got.starts[i].job, want.starts[i].job);
    EXPECT_EQ(got.starts[i].allocation, want.starts[i].allocation);
  }
  for (const PendingDecision& p : got.pending) {
    const auto it = std::find_if(want.pending.begin(),
                                 want.pending.end(),
                                 [&](const PendingDecision& w) { return w.job == p.job; });
    ASSERT_NE(it, want.pending.end()) << p.job.value();
    EXPECT_EQ(p.reason, it->reason);
    EXPECT_EQ(p.estimated_start, it->estimated_start);
  }
}

std::string ReasonOf(const Decisions& d, std::int64_t id) {
  for (const PendingDecision& p : d.pending) {
    if (p.job == JobId(id)) {
      return p.reason.text;
    }
  }
  return "(not pending)";
}

TEST(IncrementalSchedulerTest, FullIsDecide) {
  IncrementalScheduler scheduler;
  const Decisions got = scheduler.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  ExpectAsDecide(got, FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  EXPECT_EQ(got.pending.size(), 5U);
  EXPECT_NE(ReasonOf(got, 1).find("(GPUs reserved; by time limits)"), std::string::npos);
}

TEST(IncrementalSchedulerTest, ArrivalAfterTheFrontierIsDecidedAgainstTheKeptPass) {
  IncrementalScheduler scheduler;
  scheduler.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  const IncrementalResult got = scheduler.OnArrival(Job(6, 1), At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kFast);
  EXPECT_EQ(got.considered, 1);
  ASSERT_EQ(got.decisions.pending.size(), 1U);
  Queue queue = FiveJobs();
  queue.pending.push_back(Job(6, 1));
  ExpectAsDecide(got.decisions, FullCluster(), queue, ShallowPolicy(), At(kNowMs));
  EXPECT_EQ(ReasonOf(got.decisions, 6), "behind job 1 (normal priority, needs 4 GPUs)");
}

TEST(IncrementalSchedulerTest, ArrivalAheadOfTheFrontierReplays) {
  IncrementalScheduler scheduler;
  scheduler.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  const IncrementalResult got = scheduler.OnArrival(Job(7, 2, PriorityClass::kHigh), At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kReplay);
  Queue queue = FiveJobs();
  queue.pending.push_back(Job(7, 2, PriorityClass::kHigh));
  ExpectAsDecide(got.decisions, FullCluster(), queue, ShallowPolicy(), At(kNowMs));
  // The high job took the one reservation; job 1 no longer holds one.
  EXPECT_NE(ReasonOf(got.decisions, 7).find("(GPUs reserved; by time limits)"), std::string::npos);
  EXPECT_EQ(ReasonOf(got.decisions, 1).find("(GPUs reserved"), std::string::npos);
}

TEST(IncrementalSchedulerTest, LaterArrivalReplaysUnlessWithinReuseWindow) {
  IncrementalScheduler exact;
  exact.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  EXPECT_EQ(exact.OnArrival(Job(6, 1), At(kNowMs + 1000)).path, IncrementalPath::kReplay);

  IncrementalScheduler lenient(IncrementalOptions{.reuse_within = std::chrono::seconds(5)});
  lenient.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  EXPECT_EQ(lenient.OnArrival(Job(6, 1), At(kNowMs + 1000)).path, IncrementalPath::kFast);
}

TEST(IncrementalSchedulerTest, AJobsEndStartsTheHeadOfTheQueueWhileItFits) {
  IncrementalScheduler scheduler;
  scheduler.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  // Job 903 ends: node b is free. Job 1 (4 GPUs) takes it; job 2 (2 GPUs) does not fit and
  // is the last job looked at.
  const IncrementalResult got = scheduler.OnCompletion(JobId(903), At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kHead);
  EXPECT_EQ(got.considered, 2);
  ClusterSnapshot cluster = FullCluster();
  cluster.running.erase(cluster.running.begin() + 2);
  ExpectAsDecide(got.decisions, cluster, FiveJobs(), ShallowPolicy(), At(kNowMs));
  ASSERT_EQ(got.decisions.starts.size(), 1U);
  EXPECT_EQ(got.decisions.starts[0].job, JobId(1));
  EXPECT_EQ(got.decisions.starts[0].allocation.node, NodeId("b"));
  ASSERT_EQ(got.decisions.pending.size(), 1U);
  EXPECT_EQ(got.decisions.pending[0].job, JobId(2));
}

TEST(IncrementalSchedulerTest, AJobsEndLeavesBackfillToTheNextPass) {
  IncrementalScheduler scheduler;
  scheduler.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  // Job 902 ends: a's GPUs 2 and 3 are free. Job 1 (4 GPUs), the head, cannot start: it alone
  // is decided (it reserves node a from when 901 ends, in 10 minutes), as Decide() would.
  const IncrementalResult got = scheduler.OnCompletion(JobId(902), At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kHead);
  EXPECT_EQ(got.considered, 1);
  EXPECT_TRUE(got.decisions.starts.empty());
  ASSERT_EQ(got.decisions.pending.size(), 1U);
  EXPECT_EQ(got.decisions.pending[0].job, JobId(1));
  EXPECT_NE(got.decisions.pending[0].reason.text.find("(GPUs reserved; by time limits)"),
            std::string::npos)
      << got.decisions.pending[0].reason.text;
  ClusterSnapshot cluster = FullCluster();
  cluster.running.erase(cluster.running.begin() + 1);
  const Decisions all = Decide(cluster, FiveJobs(), ShallowPolicy(), At(kNowMs));
  EXPECT_EQ(all.starts.size(), 1U);  // Decide() would also backfill job 3 ...
  EXPECT_EQ(scheduler.CurrentQueue().pending.size(), 5U);

  // ... which the next pass does (the controller's full pass follows within a second): job 3
  // ends before job 1's reservation, so it starts on a free reserved GPU.
  const IncrementalResult next = scheduler.Refresh(At(kNowMs));
  EXPECT_EQ(next.path, IncrementalPath::kReplay);
  ExpectAsDecide(next.decisions, cluster, FiveJobs(), ShallowPolicy(), At(kNowMs));
  ASSERT_EQ(next.decisions.starts.size(), 1U);
  const JobId started = next.decisions.starts[0].job;
  EXPECT_EQ(started, JobId(3));
  EXPECT_TRUE(std::any_of(scheduler.Cluster().running.begin(),
                          scheduler.Cluster().running.end(),
                          [&](const RunningJob& r) {
                            return r.id == started && r.start_time == At(kNowMs) &&
                                   r.time_limit == std::chrono::minutes(5);
                          }));
  const Queue left = scheduler.CurrentQueue();
  EXPECT_TRUE(std::none_of(left.pending.begin(), left.pending.end(), [&](const QueuedJob& j) {
    return j.id == started;
  }));
}

// Jobs that end at once free their GPUs together before the head of the queue is decided, as
// a full pass sees them: 901 frees node a (4 GPUs) and 902 one GPU of node b. Told one by one,
// 901's end would give job 1 (1 GPU, the head) a GPU of node a, and job 2 (4 GPUs) could then
// not start; together, job 1 takes b's freed GPU (the fullest node that fits) and job 2 node a.
TEST(IncrementalSchedulerTest, JobsEndingAtOnceFreeTheirGpusBeforeTheHeadIsDecided) {
  ClusterSnapshot cluster{{MakeNode("a", 4, "H100"), MakeNode("b", 4, "H100")}};
  cluster.running = {Running(901, "a", 0, 4, 600'000),
                     Running(902, "b", 0, 1, 600'000),
                     Running(903, "b", 1, 3, 1'800'000)};
  const Queue queue{{Job(1, 1), Job(2, 4)}};
  IncrementalScheduler together;
  together.Full(cluster, queue, ShallowPolicy(), At(kNowMs));
  const IncrementalResult got = together.OnCompletions({JobId(901), JobId(902)}, At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kHead);
  ClusterSnapshot after = cluster;
  after.running.erase(after.running.begin(), after.running.begin() + 2);
  ExpectAsDecide(got.decisions, after, queue, ShallowPolicy(), At(kNowMs));
  ASSERT_EQ(got.decisions.starts.size(), 2U);
  EXPECT_EQ(got.decisions.starts[0].allocation.node, NodeId("b"));
  EXPECT_EQ(got.decisions.starts[1].allocation.node, NodeId("a"));

  IncrementalScheduler one_by_one;
  one_by_one.Full(cluster, queue, ShallowPolicy(), At(kNowMs));
  const IncrementalResult first = one_by_one.OnCompletion(JobId(901), At(kNowMs));
  ASSERT_EQ(first.decisions.starts.size(), 1U);
  EXPECT_EQ(first.decisions.starts[0].allocation.node, NodeId("a"));
  EXPECT_TRUE(one_by_one.OnCompletion(JobId(902), At(kNowMs)).decisions.starts.empty());
}

TEST(IncrementalSchedulerTest, AStartMakesTheNextArrivalReplay) {
  IncrementalScheduler scheduler;
  scheduler.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  ASSERT_FALSE(scheduler.OnCompletion(JobId(903), At(kNowMs)).decisions.starts.empty());
  // A job's end keeps no pass to reuse: the next arrival replays, the one after reuses that.
  EXPECT_EQ(scheduler.OnArrival(Job(6, 1), At(kNowMs)).path, IncrementalPath::kReplay);
  EXPECT_EQ(scheduler.OnArrival(Job(8, 1), At(kNowMs)).path, IncrementalPath::kFast);
}

TEST(IncrementalSchedulerTest, CancelBeyondTheFrontierChangesNothing) {
  IncrementalScheduler scheduler;
  scheduler.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  const IncrementalResult got = scheduler.OnCompletion(JobId(5), At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kFast);
  EXPECT_TRUE(got.decisions.pending.empty());
  EXPECT_EQ(scheduler.CurrentQueue().pending.size(), 4U);
  // Job 1 set a reservation aside: cancelling it changes what the others get.
  EXPECT_EQ(scheduler.OnCompletion(JobId(1), At(kNowMs)).path, IncrementalPath::kReplay);
}

TEST(IncrementalSchedulerTest, UnknownIdChangesNothing) {
  IncrementalScheduler scheduler;
  scheduler.Full(FullCluster(), FiveJobs(), ShallowPolicy(), At(kNowMs));
  const IncrementalResult got = scheduler.OnCompletion(JobId(12345), At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kFast);
  EXPECT_EQ(scheduler.CurrentQueue().pending.size(), 5U);
}

TEST(IncrementalSchedulerTest, ATeamCrossingItsGuaranteeSortsTheQueueAgain) {
  // Team a is guaranteed 4 GPUs and holds exactly 4 (job 903), so it is not below its
  // guarantee; when 903 ends it is, and the order puts its jobs first: the queue is sorted again.
  PolicyConfig policy = ShallowPolicy();
  policy.teams = {TeamPolicy{.name = "a", .guaranteed_gpus = 4},
                  TeamPolicy{.name = "b", .guaranteed_gpus = 4}};
  ClusterSnapshot cluster = FullCluster();
  cluster.running[2].team = "a";  // 903: 4 GPUs of team a
  Queue queue{{Job(1, 4), Job(2, 2)}};
  queue.pending[0].team = "b";
  queue.pending[1].team = "a";
  IncrementalScheduler scheduler;
  scheduler.Full(cluster, queue, policy, At(kNowMs));
  const IncrementalResult got = scheduler.OnCompletion(JobId(903), At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kFull);
  cluster.running.erase(cluster.running.begin() + 2);
  ExpectAsDecide(got.decisions, cluster, queue, policy, At(kNowMs));
  EXPECT_EQ(got.decisions.starts.size() + got.decisions.pending.size(), 2U);
}

TEST(IncrementalSchedulerTest, ArrivalBeforeAnyFullPassDecidesAnEmptyCluster) {
  IncrementalScheduler scheduler;
  const IncrementalResult got = scheduler.OnArrival(Job(1, 1), At(kNowMs));
  EXPECT_EQ(got.path, IncrementalPath::kFull);
  EXPECT_EQ(ReasonOf(got.decisions, 1), "no node is up");
}

}  // namespace
}  // namespace gf
