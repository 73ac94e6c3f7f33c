#include "sim/engine.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  PolicyConfig policy;
  for (PriorityClassPolicy& cls : policy.classes) {
    cls.default_time_limit = seconds(100);
  }
  const std::vector<TraceJob> jobs = {Job("a", 0, 1, 100), Job("b", 0, 2, 50), Job("c", 0, 1, 10)};
  EXPECT_EQ(Spans(Simulated("1x2xV100", jobs, SimOptions{.policy = policy})),
            (std::vector<std::pair<double, double>>{{0, 100}, {100, 150}, {0, 10}}));
  PolicyConfig fifo = Fifo();
  fifo.classes = policy.classes;
  EXPECT_EQ(Spans(Simulated("1x2xV100", jobs, SimOptions{.policy = fifo})),
            (std::vector<std::pair<double, double>>{{0, 100}, {100, 150}, {150, 160}}));
}

TEST(EngineTest, TimeLimitStopsARun) {
  PolicyConfig policy;
  for (PriorityClassPolicy& cls : policy.classes) {
    cls.default_time_limit = seconds(60);
  }
  const SimResult result = Simulated(
      "1x1xV100", {Job("a", 0, 1, 100), Job("b", 5, 1, 10)}, SimOptions{.policy = policy});
  EXPECT_EQ(result.jobs[0].fate, JobFate::kTimeout);
  EXPECT_EQ(Spans(result), (std::vector<std::pair<double, double>>{{0, 60}, {60, 70}}));
  EXPECT_EQ(Summarize(result).timeouts, 1);
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

TEST(EngineTest, JobLargerThanEveryNodeIsRejectedWithTheReason) {
  const SimResult result = Simulated("2x2xV100", {Job("big", 0, 4, 10), Job("ok", 0, 2, 10)});
  EXPECT_EQ(result.jobs[0].fate, JobFate::kRejected);
  EXPECT_THAT(result.jobs[0].reason, HasSubstr("4 GPUs"));
  EXPECT_EQ(result.jobs[1].fate, JobFate::kCompleted);
  EXPECT_EQ(Summarize(result).rejected, 1);
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

}  // namespace
}  // namespace gf::sim
