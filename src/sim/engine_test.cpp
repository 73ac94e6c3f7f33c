#include "sim/engine.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "sim/cluster.h"
#include "sim/metrics.h"
#include "sim/synthetic.h"

namespace gf::sim {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

TraceJob Job(std::string id, int submit_s, int gpus, int duration_s, std::string team = "") {
  return TraceJob{.id = std::move(id),
                  .submit = seconds(submit_s),
                  .duration = seconds(duration_s),
                  .gpus = gpus,
                  .user = "",
                  .team = std::move(team)};
}

// A share of one GPU: 0.46 is Share("x", 0, 460, 100).
TraceJob Share(std::string id, int submit_s, int milli, int duration_s) {
  TraceJob job = Job(std::move(id), submit_s, 1, duration_s);
  job.gpu_milli = milli;
  return job;
}

SimResult Simulated(const std::string& cluster,
                    const std::vector<TraceJob>& jobs,
                    const SimOptions& options = {}) {
  auto nodes = ParseClusterSpec(cluster);
  EXPECT_TRUE(nodes.ok());
  auto result = Simulate(*nodes, jobs, options);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return *result;
}

// Start and end, in seconds, of every job.
std::vector<std::pair<double, double>> Spans(const SimResult& result) {
  std::vector<std::pair<double, double>> out;
  for (const JobOutcome& job : result.jobs) {
    out.emplace_back(std::chrono::duration<double>(job.first_start.value_or(Millis(-1000))).count(),
                     std::chrono::duration<double>(job.end.value_or(Millis(-1000))).count());
  }
  return out;
}

PolicyConfig Fifo() {
  PolicyConfig policy;
  policy.backfill.enabled = false;
  policy.preemption.enabled = false;
  return policy;
}

// The stock policy with every class's default time limit `limit`.
PolicyConfig LimitedTo(std::chrono::seconds limit) {
  PolicyConfig policy;
  for (PriorityClassPolicy& cls : policy.classes) {
    cls.default_time_limit = limit;
  }
  return policy;
}

TEST(EngineTest, ThreeJobsOnTwoGpusHaveExactTimes) {
  // a holds both GPUs 0-100; b and c then start together.
  const SimResult result =
      Simulated("1x2xV100", {Job("a", 0, 2, 100), Job("b", 10, 1, 50), Job("c", 20, 1, 30)});
  EXPECT_EQ(Spans(result),
            (std::vector<std::pair<double, double>>{{0, 100}, {100, 150}, {100, 130}}));
  const Summary s = Summarize(result);
  EXPECT_EQ(s.finished, 3);
  EXPECT_DOUBLE_EQ(s.jct_s.avg, (100 + 140 + 110) / 3.0);
  EXPECT_DOUBLE_EQ(s.jct_s.median, 110);
  EXPECT_DOUBLE_EQ(s.queueing_s.avg, (0 + 90 + 80) / 3.0);
  EXPECT_DOUBLE_EQ(s.makespan_s, 150);
  EXPECT_DOUBLE_EQ(s.utilisation, (200 + 50 + 30) / (2 * 150.0));
}

TEST(EngineTest, FifoBlocksTheQueueBehindAWaitingHead) {
  // b (2 GPUs) waits for a; c (1 GPU) could start on the free GPU but must not pass b.
  const SimResult result =
      Simulated("1x2xV100",
                {Job("a", 0, 1, 100), Job("b", 10, 2, 50), Job("c", 20, 1, 10)},
                SimOptions{.policy = Fifo()});
  EXPECT_EQ(Spans(result),
            (std::vector<std::pair<double, double>>{{0, 100}, {100, 150}, {150, 160}}));
}

TEST(EngineTest, BackfillLetsAJobPassOnlyWhenItEndsBeforeTheReservation) {
  // Every end is known (a class time limit of 100 s): b gets the GPUs a holds from 100, and c,
  // whose run ends by 100 at the latest, takes the free GPU meanwhile. FIFO keeps c behind b.
  const PolicyConfig policy = LimitedTo(seconds(100));
  const std::vector<TraceJob> jobs = {Job("a", 0, 1, 100), Job("b", 0, 2, 50), Job("c", 0, 1, 10)};
  EXPECT_EQ(Spans(Simulated("1x2xV100", jobs, SimOptions{.policy = policy})),
            (std::vector<std::pair<double, double>>{{0, 100}, {100, 150}, {0, 10}}));
  PolicyConfig fifo = Fifo();
  fifo.classes = policy.classes;
  EXPECT_EQ(Spans(Simulated("1x2xV100", jobs, SimOptions{.policy = fifo})),
            (std::vector<std::pair<double, double>>{{0, 100}, {100, 150}, {150, 160}}));
}

TEST(EngineTest, TimeLimitStopsARun) {
  const PolicyConfig policy = LimitedTo(seconds(60));
  const SimResult result = Simulated(
      "1x1xV100", {Job("a", 0, 1, 100), Job("b", 5, 1, 10)}, SimOptions{.policy = policy});
  EXPECT_EQ(result.jobs[0].fate, JobFate::kTimeout);
  EXPECT_EQ(Spans(result), (std::vector<std::pair<double, double>>{{0, 60}, {60, 70}}));
  EXPECT_EQ(Summarize(result).timeouts, 1);
}

TraceJob After(TraceJob job, std::vector<TraceDependency> after) {
  job.after = std::move(after);
  return job;
}

// Dependencies by the controller's rules: b waits for a to complete and c for a to end, both
// held out of the queue meanwhile (d, submitted later, takes the free GPU first); a times out,
// which breaks b's :ok (cancelled, and e, which waited for b to complete, with it) and meets
// c's; f waits for d to complete and starts at its end.
TEST(EngineTest, DependenciesHoldJobsUntilMetAndCancelThemWhenBroken) {
  const PolicyConfig policy = LimitedTo(seconds(100));
  const SimResult result =
      Simulated("1x2xV100",
                {Job("a", 0, 1, 150),
                 After(Job("b", 0, 1, 20), {{.job = "a", .kind = DependencyKind::kOk}}),
                 After(Job("c", 0, 1, 30), {{.job = "a", .kind = DependencyKind::kAny}}),
                 Job("d", 10, 1, 40),
                 After(Job("e", 20, 1, 10), {{.job = "b", .kind = DependencyKind::kOk}}),
                 After(Job("f", 20, 1, 10), {{.job = "d", .kind = DependencyKind::kOk}})},
                SimOptions{.policy = policy});
  EXPECT_EQ(Spans(result),
            (std::vector<std::pair<double, double>>{
                {0, 100}, {-1, -1}, {100, 130}, {10, 50}, {-1, -1}, {50, 60}}));
  EXPECT_EQ(result.jobs[1].fate, JobFate::kCancelled);
  EXPECT_EQ(result.jobs[1].reason, "dependency job 'a' timed out");
  EXPECT_EQ(result.jobs[4].fate, JobFate::kCancelled);
  EXPECT_EQ(result.jobs[4].reason, "dependency job 'b' was cancelled");
  EXPECT_TRUE(result.jobs[1].runs.empty());
  const Summary s = Summarize(result);
  EXPECT_EQ(s.cancelled, 2);
  EXPECT_EQ(s.finished, 4);
  EXPECT_THAT(FormatSummary(s), HasSubstr("2 cancelled (a dependency broke)"));
}

// A job submitted after its :ok dependency failed is refused, as the controller refuses it; one
// waiting for a job that never starts never starts either, and says what it waits for.
TEST(EngineTest, ADependencyThatEndedBrokenRefusesTheJobAndOneNeverMetIsReported) {
  const PolicyConfig policy = LimitedTo(seconds(10));
  const SimResult result =
      Simulated("1x1xV100",
                {Job("a", 0, 1, 50),
                 After(Job("b", 20, 1, 5), {{.job = "a", .kind = DependencyKind::kOk}}),
                 Job("big", 20, 4, 5),
                 After(Job("c", 30, 1, 5), {{.job = "big", .kind = DependencyKind::kAny}})},
                SimOptions{.policy = policy});
  EXPECT_EQ(result.jobs[1].fate, JobFate::kRejected);
  EXPECT_EQ(result.jobs[1].reason,
            "after: dependency job 'a' timed out before this job was submitted");
  EXPECT_EQ(result.jobs[2].fate, JobFate::kRejected);  // more GPUs than any node has
  EXPECT_EQ(result.jobs[3].fate, JobFate::kRejected);
  EXPECT_EQ(result.jobs[3].reason, "after: job 'big' was rejected");

  const SimResult waiting =
      Simulated("1x1xV100",
                {Job("long", 0, 1, 1000),
                 After(Job("w", 0, 1, 5), {{.job = "long", .kind = DependencyKind::kOk}})},
                SimOptions{.policy = policy, .no_departures = true});
  EXPECT_EQ(waiting.jobs[1].fate, JobFate::kNeverStarted);
  EXPECT_EQ(waiting.jobs[1].reason, "waiting for job 'long' to complete successfully");
}

// Team a is guaranteed both GPUs; b's job runs on borrowed GPUs and is preempted once it has
// run the minimum run time (10 minutes).
PolicyConfig GuaranteeForA() {
  PolicyConfig policy;
  policy.teams = {TeamPolicy{.name = "a", .guaranteed_gpus = 2}};
  return policy;
}

TEST(EngineTest, PreemptedJobRestartsFromScratch) {
  const SimResult result = Simulated("1x2xV100",
                                     {Job("b1", 0, 2, 1000, "b"), Job("a1", 700, 2, 100, "a")},
                                     SimOptions{.policy = GuaranteeForA()});
  EXPECT_EQ(result.jobs[0].preemptions, 1);
  // a1 starts at once on b1's GPUs; b1 runs its whole 1000 s again from 800.
  EXPECT_EQ(Spans(result), (std::vector<std::pair<double, double>>{{0, 1800}, {700, 800}}));
  EXPECT_DOUBLE_EQ(result.jobs[0].gpu_seconds, 2 * (700 + 1000.0));
  EXPECT_EQ(Summarize(result).preemptions, 1);
}

TEST(EngineTest, TraceClassesPreemptByRankAndTraceLimitsStopRuns) {
  // The stock classes: a high job preempts a low one once it has run the minimum run time (600
  // s); the low one restarts from scratch after it.
  TraceJob low = Job("low", 0, 1, 3600);
  low.priority = "low";
  TraceJob high = Job("high", 60, 1, 600);
  high.priority = "high";
  TraceJob plain = Job("plain", 7200, 1, 10);
  const SimResult result = Simulated("1x1xV100", {low, high, plain});
  EXPECT_EQ(Spans(result),
            (std::vector<std::pair<double, double>>{{0, 1200 + 3600}, {600, 1200}, {7200, 7210}}));
  EXPECT_EQ(result.jobs[0].priority, "low");
  EXPECT_EQ(result.jobs[2].priority, "normal");  // none given: the default class
  const Summary s = Summarize(result);
  ASSERT_EQ(s.classes.size(), 3U);
  EXPECT_EQ(s.classes[0].name, "high");
  EXPECT_DOUBLE_EQ(s.classes[0].queueing_s.p95, 540);
  EXPECT_DOUBLE_EQ(s.classes[1].jct_s.avg, 4800);
  EXPECT_EQ(s.classes[2].finished, 1);

  // A job's own limit stops it, as under the controller.
  TraceJob limited = Job("limited", 0, 1, 1000);
  limited.time_limit = seconds(300);
  const SimResult stopped = Simulated("1x1xV100", {limited});
  EXPECT_EQ(stopped.jobs[0].fate, JobFate::kTimeout);
  EXPECT_EQ(Spans(stopped), (std::vector<std::pair<double, double>>{{0, 300}}));
}

TEST(EngineTest, PreemptionWaitsForMinimumRunTimeThenKeepsCheckpointedWork) {
  // a1 arrives at 100, before b1 may be preempted (600): a wake-up pass at 600 preempts it.
  // With a 250 s checkpoint interval b1 keeps 500 s of its 600 s: 500 s left from 700.
  const SimResult result =
      Simulated("1x2xV100",
                {Job("b1", 0, 2, 1000, "b"), Job("a1", 100, 2, 100, "a")},
                SimOptions{.policy = GuaranteeForA(), .checkpoint_interval = seconds(250)});
  EXPECT_EQ(Spans(result), (std::vector<std::pair<double, double>>{{0, 1200}, {600, 700}}));
  EXPECT_EQ(result.jobs[0].preemptions, 1);
}

TEST(EngineTest, JobNeedingMoreNodesThanTheClusterHasIsRejectedWithTheReason) {
  // 6 GPUs on 2-GPU nodes is a gang of 3 members: 2 nodes are too few.
  const SimResult result = Simulated("2x2xV100", {Job("big", 0, 6, 10), Job("ok", 0, 2, 10)});
  EXPECT_EQ(result.jobs[0].fate, JobFate::kRejected);
  EXPECT_THAT(result.jobs[0].reason, HasSubstr("3 nodes"));
  EXPECT_EQ(result.jobs[1].fate, JobFate::kCompleted);
  EXPECT_EQ(Summarize(result).rejected, 1);
}

TEST(EngineTest, JobLargerThanTheLargestNodeSplitsIntoTheFewestMembers) {
  const auto split = [](int gpus, int largest) {
    const GangSplit s = SplitAcrossNodes(gpus, largest);
    return std::pair(s.members, s.gpus_per_member);
  };
  EXPECT_EQ(split(8, 8), std::pair(1, 8));
  EXPECT_EQ(split(16, 8), std::pair(2, 8));
  EXPECT_EQ(split(12, 8), std::pair(2, 6));
  EXPECT_EQ(split(9, 8), std::pair(2, 5));   // 10 held: one more than asked
  EXPECT_EQ(split(20, 8), std::pair(3, 7));  // 21 held
  EXPECT_EQ(split(64, 8), std::pair(8, 8));
}

TEST(EngineTest, GangRunsItsMembersOnTwoNodesTogetherAsOneJob) {
  // big (16 GPUs) takes two of the four 8-GPU nodes at 0, a and b the other two; c waits for
  // the first node freed (a's, at 50). big is one job: one run, 16 GPUs for 100 s.
  const SimResult result = Simulated(
      "4x8xH100",
      {Job("big", 0, 16, 100), Job("a", 0, 8, 50), Job("b", 0, 8, 200), Job("c", 0, 8, 10)},
      SimOptions{.policy = Fifo()});
  ASSERT_EQ(result.jobs.size(), 4U);
  EXPECT_EQ(Spans(result),
            (std::vector<std::pair<double, double>>{{0, 100}, {0, 50}, {0, 200}, {50, 60}}));
  EXPECT_EQ(result.jobs[0].gpus, 16);
  EXPECT_EQ(result.jobs[0].runs,
            (std::vector<std::pair<Millis, Millis>>{{seconds(0), seconds(100)}}));
  EXPECT_DOUBLE_EQ(result.jobs[0].gpu_seconds, 16 * 100.0);
  const Summary s = Summarize(result);
  EXPECT_EQ(s.finished, 4);
  EXPECT_DOUBLE_EQ(s.jct_s.avg, (100 + 50 + 200 + 60) / 4.0);
  EXPECT_DOUBLE_EQ(s.utilisation, (1600 + 400 + 1600 + 80) / (32 * 200.0));
  EXPECT_NE(JobsCsv(result).find("big,"), std::string::npos);
}

TEST(EngineTest, GangWaitsUntilTwoNodesAreFreeAtOnce) {
  // a and b hold two of the three nodes; big needs two: it starts when a ends, at 50.
  const SimResult result =
      Simulated("3x8xH100",
                {Job("a", 0, 8, 50), Job("b", 0, 8, 80), Job("big", 1, 16, 100)},
                SimOptions{.policy = Fifo()});
  EXPECT_EQ(Spans(result), (std::vector<std::pair<double, double>>{{0, 50}, {0, 80}, {50, 150}}));
  EXPECT_DOUBLE_EQ(Summarize(result).queueing_s.avg, (0 + 0 + 49) / 3.0);
}

TEST(EngineTest, PreemptedMemberTakesItsGangBackToTheQueue) {
  // b1, a gang of 2 x 8 on borrowed GPUs, loses one member to a1 (team a, guaranteed 16) at
  // 700: both members stop, and b1 waits for both nodes (a1 ends at 800), then runs its
  // 1000 s again. Had the other member kept running, b1 would hold GPUs 700-1000 more.
  PolicyConfig policy;
  policy.teams = {TeamPolicy{.name = "a", .guaranteed_gpus = 16}};
  const SimResult result = Simulated("2x8xH100",
                                     {Job("b1", 0, 16, 1000, "b"), Job("a1", 700, 8, 100, "a")},
                                     SimOptions{.policy = policy});
  EXPECT_EQ(result.jobs[0].preemptions, 1);
  EXPECT_EQ(Spans(result), (std::vector<std::pair<double, double>>{{0, 1800}, {700, 800}}));
  EXPECT_EQ(result.jobs[0].runs,
            (std::vector<std::pair<Millis, Millis>>{{seconds(0), seconds(700)},
                                                    {seconds(800), seconds(1800)}}));
  EXPECT_DOUBLE_EQ(result.jobs[0].gpu_seconds, 16 * (700 + 1000.0));
  EXPECT_EQ(Summarize(result).preemptions, 1);
}

TEST(EngineTest, NodeFailureUnderOneMemberRequeuesTheWholeGang) {
  // The gang holds both nodes; n00000 fails at 30 s for 50 s: both members stop, and the gang
  // waits for two nodes (80 s), then runs its 100 s again (70 s with resume).
  const std::vector<NodeFailure> failure = {
      NodeFailure{.node = 0, .at = seconds(30), .repair = seconds(50)}};
  const SimResult restart =
      Simulated("2x8xH100", {Job("big", 0, 16, 100)}, SimOptions{.node_failures = failure});
  EXPECT_EQ(restart.jobs[0].failures, 1);
  EXPECT_EQ(restart.jobs[0].runs,
            (std::vector<std::pair<Millis, Millis>>{{seconds(0), seconds(30)},
                                                    {seconds(80), seconds(180)}}));
  EXPECT_DOUBLE_EQ(restart.jobs[0].gpu_seconds, 16 * (30 + 100.0));
  const SimResult resume =
      Simulated("2x8xH100",
                {Job("big", 0, 16, 100)},
                SimOptions{.checkpoint_interval = Millis(0), .node_failures = failure});
  EXPECT_EQ(Spans(resume), (std::vector<std::pair<double, double>>{{0, 150}}));
}

// With a kill grace, the member on the failed node is lost at once and the other is stopped with
// the grace (the book's gang rules, as the controller stops it): the gang goes back to the queue
// whole only once neither holds GPUs (the admission rule, GangHoldReason), at 40 s, and runs
// again on the two nodes still up.
TEST(EngineTest, ARequeuedGangWaitsForItsLastMemberToStopBeforeItRunsAgain) {
  const SimResult result = Simulated(
      "3x8xH100",
      {Job("big", 0, 16, 100)},
      SimOptions{
          .node_failures = {NodeFailure{.node = 0, .at = seconds(30), .repair = seconds(500)}},
          .kill_grace = seconds(10)});
  EXPECT_EQ(result.jobs[0].failures, 1);
  EXPECT_EQ(result.jobs[0].runs,
            (std::vector<std::pair<Millis, Millis>>{{seconds(0), seconds(30)},
                                                    {seconds(40), seconds(140)}}));
}

TEST(EngineTest, GangsWithNodeFailuresGiveTheSameOutputForASeed) {
  auto nodes = ParseClusterSpec("4x8xA100");
  ASSERT_TRUE(nodes.ok());
  auto once = [&](std::uint64_t seed) {
    auto jobs = GenerateSynthetic(SyntheticOptions{.jobs = 100, .seed = seed, .cluster_gpus = 32});
    for (std::size_t k = 0; k < jobs.size(); k += 10) {
      jobs[k].gpus = k % 20 == 0 ? 16 : 12;  // gangs of 2 x 8 and 2 x 6
    }
    const SimOptions options{.node_failures = GenerateNodeFailures(
                                 4, seconds(200'000), seconds(3'600), seconds(10'000'000), seed)};
    auto result = Simulate(*nodes, jobs, options);
    EXPECT_TRUE(result.ok());
    EXPECT_EQ(result->jobs[0].gpus, 16);
    EXPECT_EQ(Summarize(*result).rejected, 0);
    return JobsCsv(*result) + SummaryJson(Summarize(*result));
  };
  EXPECT_EQ(once(7), once(7));
  EXPECT_NE(once(7), once(8));
}

TEST(EngineTest, CpuOnlyJobStartsAtOnceOnAFullCluster) {
  const SimResult result = Simulated("1x1xV100", {Job("gpu", 0, 1, 100), Job("cpu", 5, 0, 10)});
  EXPECT_EQ(Spans(result), (std::vector<std::pair<double, double>>{{0, 100}, {5, 15}}));
  EXPECT_DOUBLE_EQ(result.jobs[1].gpu_seconds, 0);
}

TEST(EngineTest, JobAClassNeverAdmitsIsReportedNeverStarted) {
  PolicyConfig policy;
  for (PriorityClassPolicy& cls : policy.classes) {
    cls.allowed_users = {"alice"};
  }
  TraceJob job = Job("x", 0, 1, 10);
  job.user = "bob";
  const SimResult result = Simulated("1x2xV100", {job}, SimOptions{.policy = policy});
  EXPECT_EQ(result.jobs[0].fate, JobFate::kNeverStarted);
  EXPECT_THAT(result.jobs[0].reason, HasSubstr("bob"));
}

TEST(EngineTest, FairShareLetsTheTeamThatUsedLessGoFirst) {
  // Team x used the cluster 0-1000; at 1000 both teams have a job waiting since 500 (x's
  // submitted first). With fair share y goes first; without, submit order wins.
  const std::vector<TraceJob> jobs = {
      Job("x0", 0, 1, 1000, "x"), Job("x1", 500, 1, 10, "x"), Job("y1", 501, 1, 10, "y")};
  const SimResult fair = Simulated("1x1xV100", jobs);
  EXPECT_EQ(Spans(fair)[2], (std::pair<double, double>{1000, 1010}));
  EXPECT_EQ(Spans(fair)[1], (std::pair<double, double>{1010, 1020}));
  const SimResult plain = Simulated("1x1xV100", jobs, SimOptions{.fair_share = false});
  EXPECT_EQ(Spans(plain)[1], (std::pair<double, double>{1000, 1010}));
}

TEST(EngineTest, SameSeedSameOutputAndAnotherSeedAnother) {
  auto nodes = ParseClusterSpec("4x8xA100");
  ASSERT_TRUE(nodes.ok());
  auto once = [&](std::uint64_t seed) {
    const auto jobs =
        GenerateSynthetic(SyntheticOptions{.jobs = 300, .seed = seed, .cluster_gpus = 32});
    auto result = Simulate(*nodes, jobs, SimOptions{});
    EXPECT_TRUE(result.ok());
    return JobsCsv(*result) + SummaryJson(Summarize(*result));
  };
  EXPECT_EQ(once(7), once(7));
  EXPECT_NE(once(7), once(8));
}

// The baseline orders (PolicyConfig::ordering) on one GPU, with exact times.
PolicyConfig Ordered(QueueOrder order, std::chrono::seconds min_run = seconds(0)) {
  PolicyConfig policy;
  policy.ordering.order = order;
  policy.preemption.min_run_time = min_run;
  return policy;
}

TEST(EngineTest, SjfRunsTheShortestWaitingJobNextWithoutPreempting) {
  // a holds the GPU 0-100; then c (10 s) before b (50 s). SJF never preempts a.
  const std::vector<TraceJob> jobs = {
      Job("a", 0, 1, 100), Job("b", 10, 1, 50), Job("c", 20, 1, 10)};
  const SimResult sjf =
      Simulated("1x1xV100", jobs, SimOptions{.policy = Ordered(QueueOrder::kSjf)});
  EXPECT_EQ(Spans(sjf), (std::vector<std::pair<double, double>>{{0, 100}, {110, 160}, {100, 110}}));
  EXPECT_DOUBLE_EQ(Summarize(sjf).jct_s.avg, (100 + 150 + 90) / 3.0);
  const SimResult fifo =
      Simulated("1x1xV100", jobs, SimOptions{.policy = Ordered(QueueOrder::kFifo)});
  EXPECT_EQ(Spans(fifo),
            (std::vector<std::pair<double, double>>{{0, 100}, {100, 150}, {150, 160}}));
}

TEST(EngineTest, SrtfPreemptsTheJobWithMoreWorkLeft) {
  // At 10 s a has 90 s left, b 20 s: b preempts a. Restarting from scratch, a runs 30-130;
  // suspended and resumed (checkpoint interval 0), it has 90 s left at 30: ends at 120.
  const std::vector<TraceJob> jobs = {Job("a", 0, 1, 100), Job("b", 10, 1, 20)};
  const SimResult restart =
      Simulated("1x1xV100", jobs, SimOptions{.policy = Ordered(QueueOrder::kSrtf)});
  EXPECT_EQ(Spans(restart), (std::vector<std::pair<double, double>>{{0, 130}, {10, 30}}));
  EXPECT_EQ(restart.jobs[0].preemptions, 1);
  const SimResult resumed =
      Simulated("1x1xV100",
                jobs,
                SimOptions{.policy = Ordered(QueueOrder::kSrtf), .checkpoint_interval = Millis(0)});
  EXPECT_EQ(Spans(resumed), (std::vector<std::pair<double, double>>{{0, 120}, {10, 30}}));
  // A 60 s minimum run time: b preempts a at 60 (40 s left against 20), a resumes at 80.
  const SimResult waited = Simulated("1x1xV100",
                                     jobs,
                                     SimOptions{.policy = Ordered(QueueOrder::kSrtf, seconds(60)),
                                                .checkpoint_interval = Millis(0)});
  EXPECT_EQ(Spans(waited), (std::vector<std::pair<double, double>>{{0, 120}, {60, 80}}));
}

TEST(EngineTest, LasPreemptsOnceTheRunningJobReachesALaterQueue) {
  // One threshold, 50 GPU-seconds. At 10 s a (10 GPU-s) and b are both in queue 0: b waits.
  // At 50 s a reaches queue 1 and b preempts it; at 100 s b reaches queue 1 too, and keeps
  // the GPU (equal queues: no preemption) until it ends at 150; a resumes with 150 s left.
  PolicyConfig policy = Ordered(QueueOrder::kLas);
  policy.ordering.las_thresholds = {50};
  const SimResult las = Simulated("1x1xV100",
                                  {Job("a", 0, 1, 200), Job("b", 10, 1, 100)},
                                  SimOptions{.policy = policy, .checkpoint_interval = Millis(0)});
  EXPECT_EQ(Spans(las), (std::vector<std::pair<double, double>>{{0, 300}, {50, 150}}));
  EXPECT_EQ(las.jobs[0].preemptions, 1);
  EXPECT_EQ(las.jobs[1].preemptions, 0);
  EXPECT_DOUBLE_EQ(Summarize(las).jct_s.avg, (300 + 140) / 2.0);
}

TEST(EngineTest, EveryBaselineFinishesEveryJobOfASyntheticTrace) {
  auto nodes = ParseClusterSpec("2x4xA100");
  ASSERT_TRUE(nodes.ok());
  const auto jobs = GenerateSynthetic(
      SyntheticOptions{.jobs = 300, .seed = 5, .cluster_gpus = 8, .max_gpus_per_job = 4});
  std::map<QueueOrder, double> avg_jct;
  for (const QueueOrder order : {QueueOrder::kPriority,
                                 QueueOrder::kFifo,
                                 QueueOrder::kSjf,
                                 QueueOrder::kSrtf,
                                 QueueOrder::kLas}) {
    auto result = Simulate(*nodes, jobs, SimOptions{.policy = Ordered(order)});
    ASSERT_TRUE(result.ok()) << ToString(order);
    const Summary summary = Summarize(*result);
    EXPECT_EQ(summary.finished, 300) << ToString(order);
    avg_jct[order] = summary.jct_s.avg;
  }
  // Knowing the durations pays on a heavy-tailed mix.
  EXPECT_LT(avg_jct[QueueOrder::kSjf], avg_jct[QueueOrder::kFifo]);
  EXPECT_LT(avg_jct[QueueOrder::kSrtf], avg_jct[QueueOrder::kFifo]);
}

// The replay schedules by the controller's pass rule (lifecycle/pass_planner.h), staleness
// included: a job's end starts the head of the queue at once (the incremental scheduler's
// head-of-queue path) and leaves backfill to the full pass that follows within
// full_pass_interval (1 s). Here x's end at 30 frees the V100; h, the head, needs both A100s
// (held by y until 100), so the end's pass stops at h; s, behind it, is backfilled onto the
// V100 by the full pass at 31 (on another node than h's reservation). A Decide() call at every
// instant starts s at 30.
TEST(EngineTest, BackfillOntoAFreedGpuWaitsForTheFullPassThatFollowsAnEnd) {
  const PolicyConfig policy = LimitedTo(seconds(100));
  const std::vector<TraceJob> jobs = {
      Job("y", 0, 2, 100), Job("x", 0, 1, 30), Job("h", 1, 2, 10), Job("s", 2, 1, 10)};
  const SimResult product = Simulated("1x2xA100,1x1xV100", jobs, SimOptions{.policy = policy});
  EXPECT_EQ(Spans(product),
            (std::vector<std::pair<double, double>>{{0, 100}, {0, 30}, {100, 110}, {31, 41}}));
  const SimResult reference =
      Simulated("1x2xA100,1x1xV100", jobs, SimOptions{.policy = policy, .full_passes_only = true});
  EXPECT_EQ(Spans(reference),
            (std::vector<std::pair<double, double>>{{0, 100}, {0, 30}, {100, 110}, {30, 40}}));
  EXPECT_LT(product.full_passes, product.decide_calls);  // the arrivals and ends were told
  EXPECT_EQ(reference.full_passes, reference.decide_calls);
}

// Where the product's passes cannot be stale, the replay gives job by job the results of a
// Decide() call at every instant, with fewer full passes. Not stale: no backfill and one kind
// of node (a waiting job keeps every later one off every GPU, so a job's end decides exactly
// what a full pass would: the head of the queue while jobs start), no preemption, no fair
// share (the order sorted at the last full pass is the order of now) and no prediction. Times on
// whole minutes make many arrivals and ends share an instant; each instant's incremental pass is
// followed by the full pass the rule owes a second later, which finds nothing more to do.
TEST(EngineTest, WithoutStalenessTheProductsPassesGiveTheResultsOfFullPasses) {
  auto nodes = ParseClusterSpec("6x8xA100");
  ASSERT_TRUE(nodes.ok());
  for (const std::uint64_t seed : {1, 2}) {
    std::vector<TraceJob> jobs = GenerateSynthetic(SyntheticOptions{
        .jobs = 250, .seed = seed, .cluster_gpus = 48, .max_gpus_per_job = 8, .load = 1.2});
    for (TraceJob& job : jobs) {
      job.submit = std::chrono::duration_cast<std::chrono::minutes>(job.submit);
      job.duration =
          std::max(Millis(std::chrono::minutes(1)),
                   Millis(std::chrono::duration_cast<std::chrono::minutes>(job.duration)));
    }
    SimOptions options{.policy = Fifo(), .fair_share = false};
    // Nor prediction: an estimate can place an arrival before jobs already waiting, and the
    // product decides an instant's ends (the head of the queue) before its arrivals.
    options.policy.prediction.enabled = false;
    auto product = Simulate(*nodes, jobs, options);
    options.full_passes_only = true;
    auto reference = Simulate(*nodes, jobs, options);
    ASSERT_TRUE(product.ok() && reference.ok());
    EXPECT_EQ(reference->full_passes, reference->decide_calls);
    EXPECT_LT(product->full_passes, product->decide_calls) << "seed " << seed;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const JobOutcome& a = product->jobs[i];
      const JobOutcome& b = reference->jobs[i];
      ASSERT_EQ(a.runs, b.runs) << "seed " << seed << " job " << a.id;
      ASSERT_EQ(a.fate, b.fate) << "seed " << seed << " job " << a.id;
    }
  }
}

TEST(EngineTest, ConfinedTeamsRunOnlyOnTheirOwnNodes) {
  // n00000 is team a's, n00001 team b's. Confined, a2 waits for a1 although b's GPU is idle
  // until 50, and team c, with no node, is rejected; pooled, a2 takes that GPU and b1 waits.
  auto nodes = ParseClusterSpec("2x1xV100");
  ASSERT_TRUE(nodes.ok());
  (*nodes)[0].labels["vc"] = "a";
  (*nodes)[1].labels["vc"] = "b";
  const std::vector<TraceJob> jobs = {
      Job("a1", 0, 1, 100, "a"), Job("a2", 0, 1, 100, "a"), Job("b1", 50, 1, 10, "b")};
  auto confined = Simulate(*nodes, jobs, SimOptions{.team_label = "vc"});
  ASSERT_TRUE(confined.ok());
  EXPECT_EQ(Spans(*confined),
            (std::vector<std::pair<double, double>>{{0, 100}, {100, 200}, {50, 60}}));
  auto pooled = Simulate(*nodes, jobs, SimOptions{});
  ASSERT_TRUE(pooled.ok());
  EXPECT_EQ(Spans(*pooled),
            (std::vector<std::pair<double, double>>{{0, 100}, {0, 100}, {100, 110}}));
  auto homeless = Simulate(*nodes, {Job("c1", 0, 1, 10, "c")}, SimOptions{.team_label = "vc"});
  ASSERT_TRUE(homeless.ok());
  EXPECT_EQ(homeless->jobs[0].fate, JobFate::kRejected);
  EXPECT_THAT(homeless->jobs[0].reason, HasSubstr("vc"));
}

TEST(EngineTest, NodeFailureRequeuesItsJobsUntilTheNodeIsBack) {
  // a runs on n00000 (the first by name), b on n00001. n00000 fails at 30 s for 50 s: a is
  // requeued, waits for a free node (n00000 is back at 80) and runs its 100 s again; with a
  // checkpoint interval of 0 it keeps its 30 s and needs 70 more. c, arriving at 40 while
  // n00000 is down, waits for b's GPU: the feasibility of a job does not depend on failures.
  const std::vector<TraceJob> jobs = {
      Job("a", 0, 1, 100), Job("b", 0, 1, 100), Job("c", 40, 1, 10)};
  const std::vector<NodeFailure> failure = {
      NodeFailure{.node = 0, .at = seconds(30), .repair = seconds(50)}};
  const SimResult restart = Simulated("2x1xV100", jobs, SimOptions{.node_failures = failure});
  EXPECT_EQ(Spans(restart),
            (std::vector<std::pair<double, double>>{{0, 180}, {0, 100}, {100, 110}}));
  EXPECT_EQ(restart.jobs[0].failures, 1);
  EXPECT_EQ(restart.jobs[0].preemptions, 0);
  EXPECT_EQ(restart.jobs[0].runs,
            (std::vector<std::pair<Millis, Millis>>{{seconds(0), seconds(30)},
                                                    {seconds(80), seconds(180)}}));
  EXPECT_EQ(Summarize(restart).node_failures, 1);
  const SimResult resume = Simulated(
      "2x1xV100", jobs, SimOptions{.checkpoint_interval = Millis(0), .node_failures = failure});
  EXPECT_EQ(Spans(resume),
            (std::vector<std::pair<double, double>>{{0, 150}, {0, 100}, {100, 110}}));
}

TEST(EngineTest, GeneratedNodeFailuresAreTheSameForASeedAndSpacedByTheMtbf) {
  const auto times = [](std::uint64_t seed) {
    std::vector<std::pair<std::size_t, Millis>> out;
    for (const NodeFailure& f :
         GenerateNodeFailures(3, seconds(100), seconds(10), seconds(300'000), seed)) {
      out.emplace_back(f.node, f.at);
    }
    return out;
  };
  EXPECT_EQ(times(7), times(7));
  EXPECT_NE(times(7), times(8));
  const auto one = GenerateNodeFailures(3, seconds(100), seconds(10), seconds(300'000), 7);
  std::map<std::size_t, Millis> back;  // per node: when it is up again
  for (std::size_t k = 0; k < one.size(); ++k) {
    EXPECT_EQ(one[k].repair, seconds(10));
    EXPECT_GE(one[k].at, back[one[k].node]);  // a node fails only while up
    back[one[k].node] = one[k].at + one[k].repair;
    if (k > 0) {
      EXPECT_LE(one[k - 1].at, one[k].at);
    }
  }
  // 3 nodes x 300,000 s / (100 s up + 10 s down) ~ 8,182 failures.
  EXPECT_NEAR(static_cast<double>(one.size()), 8182, 8182 * 0.05);
}

TEST(EngineTest, InvalidPolicyIsRefused) {
  PolicyConfig policy;
  policy.default_class = "nope";
  auto nodes = ParseClusterSpec("1x1xV100");
  auto result = Simulate(*nodes, {}, SimOptions{.policy = policy});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error().message, HasSubstr("nope"));
}

TEST(SyntheticTest, FollowsTheMixSortedAndWithinTheLargestNode) {
  const auto jobs = GenerateSynthetic(
      SyntheticOptions{.jobs = 2000, .seed = 3, .cluster_gpus = 64, .max_gpus_per_job = 4});
  ASSERT_EQ(jobs.size(), 2000u);
  int singles = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_TRUE(jobs[i].gpus == 1 || jobs[i].gpus == 2 || jobs[i].gpus == 4);
    EXPECT_GE(jobs[i].duration, seconds(1));
    if (i > 0) {
      EXPECT_GE(jobs[i].submit, jobs[i - 1].submit);
    }
    singles += jobs[i].gpus == 1 ? 1 : 0;
  }
  EXPECT_NEAR(singles / 2000.0, 0.70, 0.04);
  EXPECT_EQ(jobs[0].team + "-u", jobs[0].user.substr(0, jobs[0].team.size() + 2));
}

TEST(EngineTest, SharesRunSideBySideAndCountTheirFraction) {
  // Two halves share the GPU from 0; the third waits for one of them to end.
  const SimResult result = Simulated(
      "1x1xT4:shared", {Share("a", 0, 500, 100), Share("b", 0, 500, 100), Share("c", 10, 500, 50)});
  EXPECT_EQ(Spans(result),
            (std::vector<std::pair<double, double>>{{0, 100}, {0, 100}, {100, 150}}));
  EXPECT_DOUBLE_EQ(result.jobs[0].gpu_seconds, 50);  // 0.5 GPU for 100 s
  const Summary s = Summarize(result);
  EXPECT_DOUBLE_EQ(s.utilisation, (50 + 50 + 25) / (1 * 150.0));
  EXPECT_DOUBLE_EQ(s.series.utilisation.front(), 1.0);  // two halves: the whole GPU
  EXPECT_THAT(JobsCsv(result), HasSubstr("\nc,,,0.5,10.000,100.000,150.000,"));
}

TEST(EngineTest, OnAFullySharedClusterOneGpuJobsTakeAWholeSharedGpu) {
  // a (1 GPU) becomes a share of 1.0 and takes GPU 0 whole; b's half goes to GPU 1. c needs
  // two exclusive GPUs, which this cluster has not: it never starts, and says why.
  const SimResult result = Simulated(
      "1x2xT4:shared", {Job("a", 0, 1, 100), Share("b", 0, 500, 100), Job("c", 0, 2, 10)});
  EXPECT_EQ(result.jobs[0].fate, JobFate::kCompleted);
  EXPECT_EQ(result.jobs[1].fate, JobFate::kCompleted);
  EXPECT_EQ(result.jobs[2].fate, JobFate::kNeverStarted);
  EXPECT_THAT(result.jobs[2].reason, HasSubstr("GPU"));
  EXPECT_DOUBLE_EQ(Summarize(result).utilisation, (100 + 50) / (2 * 100.0));
  // Without departures c is dropped, and its demand counted apart: of the 3.5 GPUs arrived,
  // 1.5 were placed, all of what the cluster could hold.
  const SimResult inflated =
      Simulated("1x2xT4:shared",
                {Job("a", 0, 1, 100), Share("b", 0, 500, 100), Job("c", 0, 2, 10)},
                SimOptions{.no_departures = true});
  ASSERT_EQ(inflated.inflation.size(), 1u);
  EXPECT_EQ(inflated.inflation[0].arrived_milli, 3500);
  EXPECT_EQ(inflated.inflation[0].arrived_unplaceable_milli, 2000);
  EXPECT_EQ(inflated.inflation[0].allocated_milli, 1500);
  const Summary s = Summarize(inflated);
  EXPECT_EQ(s.never_started_multi_gpu, 1);
  EXPECT_DOUBLE_EQ(s.inflation.back().placeable_rate, 1);
  // With an exclusive node beside the shared one, a 1-GPU job stays a whole-GPU job there.
  const SimResult mixed =
      Simulated("1x2xT4,1x2xT4:shared", {Job("a", 0, 2, 100), Job("b", 0, 1, 100)});
  EXPECT_EQ(Spans(mixed), (std::vector<std::pair<double, double>>{{0, 100}, {100, 200}}));
}

// Jobs of 0.3, 0.8, 0.2 and 0.7 on two shared GPUs, one a second, never leaving (FGD's
// inflation). Fullest-fit puts 0.2 on the GPU with 0.2 free and all four fit; first-fit puts
// it on GPU 0 (0.5 left), and 0.7 fits nowhere (tests/scenarios/scheduler/
// share_placement_*.scn check the placements themselves).
std::vector<TraceJob> FourShares() {
  return {
      Share("a", 0, 300, 0), Share("b", 1, 800, 0), Share("c", 2, 200, 0), Share("d", 3, 700, 0)};
}

TEST(EngineTest, InflationFollowsAllocationAndFragmentationAsDemandArrives) {
  SimOptions fullest{.no_departures = true};
  SimOptions first_fit{.no_departures = true};
  first_fit.policy.share_placement = SharePlacement::kFirstFit;
  using Point = std::tuple<std::int64_t, std::int64_t, std::int64_t, double>;
  const auto points = [](const SimResult& r) {
    std::vector<Point> out;
    for (const SimResult::InflationPoint& p : r.inflation) {
      out.emplace_back(p.arrived_milli, p.allocated_milli, p.free_milli, p.fragmented_milli);
    }
    return out;
  };
  // Fragmented: the mean over the four shapes of the free compute each cannot use. After b
  // (0.7 and 0.2 free): 0.3 cannot use the 0.2 (200), 0.8 nothing (900), 0.2 all (0), 0.7 the
  // 0.2 (200): 1300 / 4.
  const SimResult a = Simulated("1x2xT4:shared", FourShares(), fullest);
  EXPECT_EQ(points(a),
            (std::vector<Point>{{300, 300, 1700, 175},
                                {1100, 1100, 900, 325},
                                {1300, 1300, 700, 175},
                                {2000, 2000, 0, 0}}));
  const SimResult b = Simulated("1x2xT4:shared", FourShares(), first_fit);
  EXPECT_EQ(points(b),
            (std::vector<Point>{{300, 300, 1700, 175},
                                {1100, 1100, 900, 325},
                                {1300, 1300, 700, 400},
                                {2000, 1300, 700, 400}}));
  EXPECT_EQ(a.jobs[3].fate, JobFate::kRunning);  // nothing ends
  EXPECT_EQ(b.jobs[3].fate, JobFate::kNeverStarted);
  EXPECT_THAT(b.jobs[3].reason, HasSubstr("not placed at its arrival (no departures): needs 0.7"));
  // The rows: at 100 % of capacity arrived, first-fit left 35 % unallocated, placed 65 % of
  // the demand, and 20 % of the capacity is fragmented.
  const Summary s = Summarize(b);
  EXPECT_EQ(s.running, 3);
  ASSERT_EQ(s.inflation.size(), 100u);
  EXPECT_EQ(s.inflation[14].step_pct, 15);  // 0.3 of 2 GPUs: steps 1..15
  EXPECT_DOUBLE_EQ(s.inflation[15].arrived_pct, 55);
  const InflationRow& last = s.inflation.back();
  EXPECT_EQ(last.step_pct, 100);
  EXPECT_DOUBLE_EQ(last.unallocated_pct, 35);
  EXPECT_DOUBLE_EQ(last.allocation_rate, 0.65);
  EXPECT_DOUBLE_EQ(last.fragmented_pct, 20);
  const std::string table =
      FormatInflation({NamedSummary{.policy = "fullest", .summary = Summarize(a)},
                       NamedSummary{.policy = "first-fit", .summary = s}});
  EXPECT_THAT(table,
              HasSubstr("| 100 % | 0.0 % | 100.0 % (100.0 %) | 0.0 % | 35.0 % | 65.0 % "
                        "(65.0 %) | 20.0 % |"));
}

TEST(EngineTest, PolicyFileSetsTheSharePlacement) {
  auto config = ParseConfig("[sharing]\nplacement = \"first-fit\"\n", "p.toml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->policy.share_placement, SharePlacement::kFirstFit);
  auto stock = ParseConfig("", "p.toml");
  ASSERT_TRUE(stock.ok()) << stock.error().message;
  EXPECT_EQ(stock->policy.share_placement, SharePlacement::kFullest);
  auto bad = ParseConfig("[sharing]\nplacement = \"best-fit\"\n", "p.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message,
              HasSubstr("[sharing] placement: 'best-fit' is not a placement; use fullest or "
                        "first-fit"));
}

TEST(EngineTest, ResamplingReachesTheDemandTheSameWayForASeed) {
  std::vector<TraceJob> jobs = {Share("a", 0, 500, 10), Job("b", 5, 2, 10)};
  std::vector<TraceJob> again = jobs;
  ResampleTo(jobs, 10, 7);
  ResampleTo(again, 10, 7);
  double demand = 0;
  for (const TraceJob& job : jobs) {
    demand += GpusHeld(job);
  }
  EXPECT_GE(demand, 10);
  EXPECT_LT(demand - GpusHeld(jobs.back()), 10);  // it stops once there
  ASSERT_EQ(jobs.size(), again.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i].id, again[i].id);
  }
  EXPECT_EQ(jobs[2].submit, seconds(6));  // a second after the last
  EXPECT_THAT(jobs[2].id, ::testing::EndsWith("~r0"));
}

}  // namespace
}  // namespace gf::sim

namespace gf::sim {
namespace {

TraceJob ByUser(std::string id, int submit_s, int duration_s, std::string user) {
  TraceJob job = Job(std::move(id), submit_s, 1, duration_s);
  job.user = std::move(user);
  return job;
}

// Issue #22: the predictor learns online and never reads a job's own run: each estimate at
// arrival comes from the runs that had ended by then. On 2 GPUs: a (0-100 s) and b (10-1010 s)
// start at once; c arrives at 50 s, before any run ended (nothing to go by), and runs 100-130 s;
// d arrives at 200 s, after a and c: the predictor's geometric mean of the last two,
// sqrt(100 x 30) = 54.77 s, the baseline's mean 65 s. e arrives at 2000 s, after d (200-230 s)
// and b ended: the last two are d and b: sqrt(30 x 1000) = 173.2 s and 515 s. f, of no user,
// gets the cluster's runs (the same last two) and no baseline.
TEST(EngineTest, EstimatesComeOnlyFromRunsThatEndedBefore) {
  const SimResult r = Simulated("1x2xH100-80GB",
                                {ByUser("a", 0, 100, "ann"),
                                 ByUser("b", 10, 1000, "ann"),
                                 ByUser("c", 50, 30, "ann"),
                                 ByUser("d", 200, 30, "ann"),
                                 ByUser("e", 2000, 30, "ann"),
                                 Job("f", 2001, 1, 30)});
  ASSERT_EQ(r.jobs.size(), 6U);
  for (std::size_t i : {0U, 1U, 2U}) {
    EXPECT_FALSE(r.jobs[i].predicted.has_value()) << r.jobs[i].id;
    EXPECT_FALSE(r.jobs[i].last_two.has_value()) << r.jobs[i].id;
  }
  ASSERT_EQ(r.jobs[2].first_start, seconds(100));
  ASSERT_TRUE(r.jobs[3].predicted.has_value() && r.jobs[3].last_two.has_value());
  EXPECT_NEAR(static_cast<double>(r.jobs[3].predicted->count()), 54'772, 1);
  EXPECT_EQ(*r.jobs[3].last_two, seconds(65));
  ASSERT_TRUE(r.jobs[4].predicted.has_value() && r.jobs[4].last_two.has_value());
  EXPECT_NEAR(static_cast<double>(r.jobs[4].predicted->count()), 173'205, 1);
  EXPECT_EQ(*r.jobs[4].last_two, seconds(515));
  EXPECT_FALSE(r.jobs[5].last_two.has_value());
  EXPECT_EQ(r.jobs[5].predicted, r.jobs[4].predicted);
  const Summary s = Summarize(r);
  EXPECT_EQ(s.prediction.of, 6);
  EXPECT_EQ(s.prediction.jobs, 3);  // d, e, f
  EXPECT_EQ(s.last_two.jobs, 2);    // d, e
  // d: |65 - 30| / 30, e: |515 - 30| / 30; the median of two is their mean.
  EXPECT_NEAR(s.last_two.median, (35.0 / 30 + 485.0 / 30) / 2, 1e-9);
}

TraceJob Named(std::string id, int submit_s, int duration_s, std::string name) {
  TraceJob job = Job(std::move(id), submit_s, 1, duration_s);
  job.name = std::move(name);
  return job;
}

// The stock policy orders by predicted GPU-time (scheduler/estimates.h), learned online. On one
// GPU: "long" (0-1000 s) and "short" (1000-1010 s) teach the predictor; "blocker" holds the GPU
// 1020-1520 s while long2 (submitted at 1030 s, predicted 1000 s: place 2030 s) and short2
// (1040 s, predicted 10 s: place 1050 s) wait. short2 goes first; without prediction, long2.
TEST(EngineTest, StockPolicyRunsAShortPredictedJobBeforeALongerOneSubmittedFirst) {
  const std::vector<TraceJob> trace = {Named("long", 0, 1000, "long"),
                                       Named("short", 1, 10, "short"),
                                       Named("blocker", 1020, 500, "blocker"),
                                       Named("long2", 1030, 1000, "long"),
                                       Named("short2", 1040, 10, "short")};
  const SimResult predicted = Simulated("1x1xV100", trace);
  EXPECT_EQ(predicted.jobs[4].first_start, seconds(1520));
  EXPECT_EQ(predicted.jobs[3].first_start, seconds(1530));
  ASSERT_TRUE(predicted.jobs[3].predicted.has_value());
  EXPECT_EQ(*predicted.jobs[3].predicted, seconds(1000));
  SimOptions plain;
  plain.policy.prediction.enabled = false;
  const SimResult fifo = Simulated("1x1xV100", trace, plain);
  EXPECT_EQ(fifo.jobs[3].first_start, seconds(1520));
  EXPECT_EQ(fifo.jobs[4].first_start, seconds(2520));
}

// Backfill on predicted ends: no job gives a time limit. On 2 GPUs, "long" (0-1000 s, 1 GPU)
// teaches the predictor that such a run takes 1000 s; "long2" then holds one GPU from 1000 s,
// "wide" (2 GPUs) waits for it and gets a reservation at long2's high estimate, and "short"
// (predicted from its earlier run: 10 s) starts on the free GPU at once, since it gives it back
// long before. Without prediction, wide claims both GPUs and short waits behind it.
TEST(EngineTest, BackfillPlansWithPredictedEndsWhereNoJobHasALimit) {
  TraceJob wide = Named("wide", 1010, 100, "wide");
  wide.gpus = 2;
  const std::vector<TraceJob> trace = {Named("long", 0, 1000, "long"),
                                       Named("short", 1, 10, "short"),
                                       Named("long2", 1000, 1000, "long"),
                                       wide,
                                       Named("short2", 1020, 10, "short")};
  const SimResult predicted = Simulated("1x2xV100", trace);
  EXPECT_EQ(predicted.jobs[4].first_start, seconds(1020));  // backfilled
  EXPECT_EQ(predicted.jobs[3].first_start, seconds(2000));  // not delayed by it
  // wide was told its reservation: long2's high estimate, one run's 1000 s times e^1.2816 (the
  // prior spread of one run at the 90th percentile): 1000 + 3602 s.
  EXPECT_TRUE(predicted.jobs[3].waited_at_arrival);
  ASSERT_TRUE(predicted.jobs[3].estimated_start.has_value());
  EXPECT_NEAR(std::chrono::duration<double>(*predicted.jobs[3].estimated_start).count(), 4602, 1);
  const StartError told = Summarize(predicted).start_estimate;
  EXPECT_EQ(told.of, 1);  // wide; short2 started at once
  EXPECT_EQ(told.jobs, 1);
  EXPECT_NEAR(told.median_s, 2602, 1);
  SimOptions plain;
  plain.policy.prediction.enabled = false;
  const SimResult fifo = Simulated("1x2xV100", trace, plain);
  EXPECT_EQ(fifo.jobs[3].first_start, seconds(2000));
  EXPECT_EQ(fifo.jobs[4].first_start, seconds(2100));      // behind wide
  EXPECT_FALSE(fifo.jobs[3].estimated_start.has_value());  // no end known: no reservation
  EXPECT_EQ(Summarize(fifo).start_estimate.jobs, 0);
  EXPECT_EQ(Summarize(fifo).start_estimate.of, 2);
}

// The anti-starvation rule: a job is never passed by a job submitted more than max_delay after
// it. On one GPU, "big2" (predicted 10 h from an earlier run) waits from 40,000 s behind
// "blk" while 400 "tiny" jobs (6 s each, predicted 6 s) arrive every 5 s from 40,001 s on: the
// GPU is overloaded and the tiny jobs' queue grows. With max_delay 10 minutes, big2's place is
// 40,600 s, so the tiny jobs submitted after 40,594 s (place = submit + 6 s) go behind it: it
// starts once the 119 submitted before are done (714 s of work from 40,090 s). With no cap it
// waits for all 400 (2,400 s of work); with max_delay 0, for none.
TEST(EngineTest, MaxDelayBoundsHowLongShorterWorkMayPassAJob) {
  std::vector<TraceJob> trace = {Named("big", 0, 36'000, "big"),
                                 Named("tiny0", 1, 6, "tiny"),
                                 Named("blk", 39'990, 100, "blk"),
                                 Named("big2", 40'000, 36'000, "big")};
  for (int k = 0; k < 400; ++k) {
    trace.push_back(Named("tiny" + std::to_string(k + 1), 40'001 + 5 * k, 6, "tiny"));
  }
  const auto big2_start = [&](std::chrono::seconds max_delay) {
    SimOptions options;
    options.policy.prediction.max_delay = max_delay;
    const SimResult r = Simulated("1x1xV100", trace, options);
    EXPECT_EQ(r.jobs[3].id, "big2");
    return std::chrono::duration_cast<seconds>(r.jobs[3].first_start.value_or(Millis(-1))).count();
  };
  EXPECT_EQ(big2_start(std::chrono::minutes(10)), 40'090 + 119 * 6);
  EXPECT_EQ(big2_start(std::chrono::hours(1000)), 40'090 + 400 * 6);
  EXPECT_EQ(big2_start(std::chrono::seconds(0)), 40'090);
}

}  // namespace
}  // namespace gf::sim
