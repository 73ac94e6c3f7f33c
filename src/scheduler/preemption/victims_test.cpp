#include "scheduler/preemption/victims.h"

#include <gtest/gtest.h>

#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using std::chrono::minutes;
using testing::MakeNode;

const Time kNow = FromUnixMillis(std::int64_t{10} * 3'600'000);

RunningJob Running(std::int64_t id,
                   const std::string& node,
                   const std::vector<int>& gpus,
                   const PriorityClass& priority,
                   minutes ran) {
  RunningJob job = testing::RunningOn(id, node, gpus);
  job.team = "other";
  job.priority = priority;
  job.start_time = kNow - ran;
  return job;
}

class VictimsTest : public ::testing::Test {
 protected:
  std::optional<VictimChoice> Choose(int gpus,
                                     const PriorityClass& priority,
                                     bool guarantee_right,
                                     bool ignore_min_run_time = false) {
    const GpuPool pool(cluster_, kNow);
    classes_.emplace(policy_, cluster_);
    Preemptor preemptor = MakePreemptor(pool.ShapeOf(testing::Request(gpus)),
                                        *classes_,
                                        classes_->IndexOf(priority),
                                        "mine",
                                        guarantee_right);
    preemptor.ignore_min_run_time = ignore_min_run_time;
    return ChooseVictims(pool, cluster_, preemptor, policy_, kNow);
  }
  std::vector<std::int64_t> VictimIds(const VictimChoice& choice) const {
    std::vector<std::int64_t> ids;
    for (const int r : choice.victims) {
      ids.push_back(cluster_.running[static_cast<std::size_t>(r)].id.value());
    }
    return ids;
  }

  ClusterSnapshot cluster_{{MakeNode("a", 4, "H100"), MakeNode("b", 4, "H100")}};
  PolicyConfig policy_;
  std::optional<ClassTable> classes_;
};

TEST_F(VictimsTest, LeastWorkLostSinceStartOrCheckpoint) {
  cluster_.running = {Running(1, "a", {0, 1, 2, 3}, PriorityClass::kLow, minutes(60)),
                      Running(2, "b", {0, 1, 2, 3}, PriorityClass::kLow, minutes(30))};
  std::optional<VictimChoice> choice = Choose(4, PriorityClass::kHigh, false);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(VictimIds(*choice), (std::vector<std::int64_t>{2}));
  cluster_.running[0].last_checkpoint = kNow - minutes(5);  // job 1 would lose only 5 minutes
  choice = Choose(4, PriorityClass::kHigh, false);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(VictimIds(*choice), (std::vector<std::int64_t>{1}));
}

TEST_F(VictimsTest, BorrowedBeforeGuaranteedAndOnlyAsManyAsNeeded) {
  cluster_.running = {Running(1, "a", {0, 1}, PriorityClass::kLow, minutes(20)),
                      Running(2, "a", {2}, PriorityClass::kLow, minutes(90)),
                      Running(3, "a", {3}, PriorityClass::kLow, minutes(60))};
  cluster_.running[1].preemptible = true;
  cluster_.running[2].preemptible = true;
  const std::optional<VictimChoice> choice = Choose(2, PriorityClass::kHigh, false);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(VictimIds(*choice), (std::vector<std::int64_t>{3, 2}));  // borrowed, least lost first
  EXPECT_EQ(choice->fit.gpus.size(), 2U);
}

TEST_F(VictimsTest, NeverBeforeTheMinimumRunTimeNorWithoutARight) {
  policy_.preemption.min_run_time = minutes(15);
  cluster_.running = {Running(1, "a", {0, 1, 2, 3}, PriorityClass::kLow, minutes(10)),
                      Running(2, "b", {0, 1, 2, 3}, PriorityClass::kNormal, minutes(60))};
  std::optional<VictimChoice> choice = Choose(4, PriorityClass::kNormal, false);
  EXPECT_FALSE(choice.has_value());  // normal may preempt only low, and job 1 is too young
  choice = Choose(4, PriorityClass::kHigh, false);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(VictimIds(*choice), (std::vector<std::int64_t>{2}));
  EXPECT_FALSE(Choose(4, PriorityClass::kLow, false).has_value());
  // A plan for later counts the young job: normal may preempt it once it is old enough.
  choice = Choose(4, PriorityClass::kNormal, false, /*ignore_min_run_time=*/true);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(VictimIds(*choice), (std::vector<std::int64_t>{1}));
}

TEST_F(VictimsTest, AdminDefinedClassesPreemptOnlyWhatTheyNameLowestTierFirst) {
  policy_.classes = {
      PriorityClassPolicy{.name = "urgent", .rank = 0, .preempts = {"normal", "batch"}},
      PriorityClassPolicy{.name = "normal", .rank = 1},
      PriorityClassPolicy{.name = "batch", .rank = 2}};
  const PriorityClass urgent{.name = "urgent"};
  cluster_.running = {Running(1, "a", {0, 1, 2, 3}, PriorityClass{.name = "batch"}, minutes(60)),
                      Running(2, "b", {0, 1, 2, 3}, PriorityClass::kNormal, minutes(20))};
  std::optional<VictimChoice> choice = Choose(4, urgent, false);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(VictimIds(*choice), (std::vector<std::int64_t>{1}));  // batch before normal
  // A running job whose class is no longer configured is nobody's to preempt by class.
  cluster_.running[0].priority = PriorityClass::kLow;
  choice = Choose(4, urgent, false);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(VictimIds(*choice), (std::vector<std::int64_t>{2}));
  EXPECT_FALSE(Choose(4, PriorityClass::kLow, false).has_value());  // nor does it preempt
}

TEST_F(VictimsTest, AGuaranteeTakesBackOnlyOtherTeamsBorrowedWork) {
  cluster_.running = {Running(1, "a", {0, 1, 2, 3}, PriorityClass::kNormal, minutes(60)),
                      Running(2, "b", {0, 1, 2, 3}, PriorityClass::kNormal, minutes(60))};
  cluster_.running[1].preemptible = true;
  EXPECT_FALSE(Choose(4, PriorityClass::kNormal, false).has_value());
  std::optional<VictimChoice> choice = Choose(4, PriorityClass::kNormal, true);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(VictimIds(*choice), (std::vector<std::int64_t>{2}));
  cluster_.running[1].team = "mine";  // its own borrowed work is not taken back
  EXPECT_FALSE(Choose(4, PriorityClass::kNormal, true).has_value());
}

TEST_F(VictimsTest, AStoppingJobIsWaitedForBeforeAnythingIsPreempted) {
  cluster_.running = {Running(1, "a", {0, 1, 2, 3}, PriorityClass::kLow, minutes(60)),
                      Running(2, "b", {0, 1, 2, 3}, PriorityClass::kLow, minutes(1))};
  cluster_.running[1].stopping = true;
  const std::optional<VictimChoice> choice = Choose(4, PriorityClass::kHigh, false);
  ASSERT_TRUE(choice.has_value());
  EXPECT_TRUE(choice->victims.empty());
  EXPECT_EQ(choice->stopping, (std::vector<int>{1}));
}

// What a search with a VictimCache gives, for every GPU count the cache is shared by, and
// after a node changed (its results must be weighed again), is what a search without one gives.
TEST_F(VictimsTest, ACacheSharedByAlikePreemptorsOfAnySizeGivesWhatAFreshSearchGives) {
  cluster_ = ClusterSnapshot{
      {MakeNode("a", 4, "H100"), MakeNode("b", 4, "H100"), MakeNode("c", 4, "H100")}};
  cluster_.running = {Running(1, "a", {0, 1}, PriorityClass::kLow, minutes(60)),
                      Running(2, "a", {2}, PriorityClass::kLow, minutes(5)),
                      Running(3, "b", {0}, PriorityClass::kNormal, minutes(10)),
                      Running(4, "b", {1, 2, 3}, PriorityClass::kLow, minutes(90)),
                      Running(5, "c", {0, 1, 2, 3}, PriorityClass::kLow, minutes(20))};
  cluster_.running[3].preemptible = true;
  GpuPool pool(cluster_, kNow);
  const ClassTable classes(policy_, cluster_);
  const auto preemptor = [&](int gpus) {
    return MakePreemptor(pool.ShapeOf(testing::Request(gpus)),
                         classes,
                         classes.IndexOf(PriorityClass::kHigh),
                         "mine",
                         false);
  };
  // Compared as (node, GPUs, victims, stopping): what the pass acts on.
  const auto same = [](const std::optional<VictimChoice>& got,
                       const std::optional<VictimChoice>& want) {
    ASSERT_EQ(got.has_value(), want.has_value());
    if (want.has_value()) {
      EXPECT_EQ(got->fit.node, want->fit.node);
      EXPECT_EQ(got->fit.gpus, want->fit.gpus);
      EXPECT_EQ(got->victims, want->victims);
      EXPECT_EQ(got->stopping, want->stopping);
    }
  };
  VictimCache cache;
  // Each size's choice through the cache is the one a fresh search makes.
  const auto all_same = [&](std::initializer_list<int> sizes) {
    for (const int gpus : sizes) {
      SCOPED_TRACE(gpus);
      same(ChooseVictims(pool, cluster_, preemptor(gpus), policy_, kNow, &cache),
           ChooseVictims(pool, cluster_, preemptor(gpus), policy_, kNow));
    }
  };
  all_same({1, 2, 4, 3, 1, 5});
  // One GPU goes on a (its GPU 3 is open: no victim). Claim a's GPUs 0 and 1 (job 1's): a 4-GPU
  // job could use a before (GPU 3, jobs 2 and 1) and cannot now; the cache must see that.
  const std::optional<VictimChoice> before =
      ChooseVictims(pool, cluster_, preemptor(1), policy_, kNow, &cache);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(pool.Nodes()[static_cast<std::size_t>(before->fit.node)].name, NodeId("a"));
  pool.ClaimGpus({0, 1}, /*waiter=*/0);
  all_same({1, 2, 4});
  // Job 1's GPUs are claimed, so job 1 is no victim any more; a 3-GPU job cannot use a.
  const std::optional<VictimChoice> three =
      ChooseVictims(pool, cluster_, preemptor(3), policy_, kNow, &cache);
  ASSERT_TRUE(three.has_value());
  EXPECT_NE(pool.Nodes()[static_cast<std::size_t>(three->fit.node)].name, NodeId("a"));
}

TEST_F(VictimsTest, CausesSayWhy) {
  const RunningJob victim = Running(7, "a", {0}, PriorityClass::kLow, minutes(60));
  const ClassTable classes(policy_);
  const Preemptor preemptor =
      MakePreemptor(Shape{}, classes, classes.IndexOf(PriorityClass::kHigh), "ml", true);
  EXPECT_EQ(PreemptionCause(PreemptionRight::kHigherClass, victim, preemptor, policy_, kNow),
            "high priority beats low");
  EXPECT_EQ(PreemptionCause(PreemptionRight::kGuarantee, victim, preemptor, policy_, kNow),
            "team ml is within its guarantee and job 7 ran on borrowed GPUs");
}

// Under srtf and las the ranks say why: work left, or the 2D-LAS queue.
TEST_F(VictimsTest, OrderCausesGiveRanks) {
  RunningJob victim = Running(7, "a", {0, 1}, PriorityClass::kNormal, minutes(60));
  victim.expected_duration = std::chrono::hours(3);
  const ClassTable classes(policy_);
  Preemptor preemptor =
      MakePreemptor(Shape{}, classes, classes.IndexOf(PriorityClass::kNormal), "ml", false);
  preemptor.rank = Millis(minutes(10)).count();
  policy_.ordering.order = QueueOrder::kSrtf;
  EXPECT_EQ(PreemptionCause(PreemptionRight::kOrder, victim, preemptor, policy_, kNow),
            "srtf: 10m left against 2h left");
  // 2 GPUs for an hour: 7,200 GPU-seconds, queue 2 with the default thresholds 3250, 7200.
  policy_.ordering.order = QueueOrder::kLas;
  preemptor.rank = 0;
  EXPECT_EQ(PreemptionCause(PreemptionRight::kOrder, victim, preemptor, policy_, kNow),
            "las: queue 0 against queue 2");
}

// The stock policy preempts by size (scheduler/estimates.h): a job of its class tier and team,
// with at least twice its own predicted remaining GPU-time, that may be requeued and would go
// after it in the queue. Remaining work: max(expected - ran, ran).
TEST_F(VictimsTest, BySizeOnlyForMuchLessWorkAlongFairShareAndAheadInTheQueue) {
  const auto victim_of = [&](minutes ran) {
    // 4 GPUs, predicted 30 minutes: after 60 it is expected to run 60 more, 240 GPU-minutes.
    RunningJob job = Running(1, "a", {0, 1, 2, 3}, PriorityClass::kNormal, ran);
    job.team = "mine";
    job.submit_time = job.start_time;
    job.last_checkpoint = kNow;  // it would lose nothing
    job.estimate = RunEstimate{.expected = Millis(minutes(30)), .high = Millis(minutes(90))};
    return job;
  };
  const auto right = [&](const RunningJob& victim, minutes expected) {
    cluster_.running = {victim};
    QueuedJob job;
    job.id = JobId(2);
    job.team = "mine";
    job.submit_time = kNow;
    job.request = testing::Request(1);
    job.estimate = RunEstimate{.expected = Millis(expected), .high = Millis(expected * 3)};
    const GpuPool pool(cluster_, kNow, true);
    const ClassTable classes(policy_, cluster_);
    const Ledger ledger(policy_, cluster_, classes);
    const Preemptor preemptor = JobPreemptor(job,
                                             pool.ShapeOf(job.request),
                                             classes,
                                             classes.IndexOf(PriorityClass::kNormal),
                                             false,
                                             policy_,
                                             std::nullopt,
                                             ledger);
    return RightToPreempt(pool, cluster_, 0, preemptor, policy_, kNow);
  };
  const RunningJob victim = victim_of(minutes(60));
  EXPECT_EQ(right(victim, minutes(10)), PreemptionRight::kOrder);
  EXPECT_EQ(right(victim, minutes(120)), PreemptionRight::kOrder);  // 240 = 2 x 120
  EXPECT_EQ(right(victim, minutes(121)), PreemptionRight::kNone);   // not half of it
  // Before half its estimate a job's remaining work falls: at 12 minutes, 18 more, 72 GPU-min.
  EXPECT_EQ(right(victim_of(minutes(12)), minutes(36)), PreemptionRight::kOrder);
  EXPECT_EQ(right(victim_of(minutes(12)), minutes(37)), PreemptionRight::kNone);
  // Not before the minimum run time (10 minutes), nor a job that must not run twice.
  EXPECT_EQ(right(victim_of(minutes(9)), minutes(1)), PreemptionRight::kNone);
  RunningJob once = victim;
  once.requeue = false;
  EXPECT_EQ(right(once, minutes(10)), PreemptionRight::kNone);
  // A job of another team only where that team does not go before the waiting job's in fair
  // share: it has used as much or more (for its weight), never less.
  RunningJob other = victim;
  other.team = "other";
  cluster_.team_usage = {{"mine", TeamUsage{.decayed_gpu_seconds = 100}},
                         {"other", TeamUsage{.decayed_gpu_seconds = 50}}};
  EXPECT_EQ(right(other, minutes(10)), PreemptionRight::kNone);
  cluster_.team_usage["other"].decayed_gpu_seconds = 100;
  EXPECT_EQ(right(other, minutes(10)), PreemptionRight::kOrder);
  cluster_.team_usage["other"].decayed_gpu_seconds = 200;
  EXPECT_EQ(right(other, minutes(10)), PreemptionRight::kOrder);
  // With quotas, a guarantee holds against it: only a job on borrowed GPUs is taken.
  policy_.teams = {TeamPolicy{.name = "mine"}, TeamPolicy{.name = "other"}};
  EXPECT_EQ(right(other, minutes(10)), PreemptionRight::kNone);
  other.preemptible = true;
  EXPECT_EQ(right(other, minutes(10)), PreemptionRight::kOrder);
  policy_.teams.clear();
  cluster_.team_usage.clear();
  // Only a job that would go before it in the queue: its place is its submit time + its
  // remaining 4 GPU-hours (at most prediction_max_delay, 7 days, later: the anti-starvation
  // bound). Submitted 5 hours before the waiting job (placed 10 minutes after its submit), it
  // has waited long enough to keep its GPUs; 3 hours before, not yet.
  RunningJob old = victim;
  old.submit_time = kNow - std::chrono::hours(5);
  EXPECT_EQ(right(old, minutes(10)), PreemptionRight::kNone);
  old.submit_time = kNow - std::chrono::hours(3);
  EXPECT_EQ(right(old, minutes(10)), PreemptionRight::kOrder);
  // However large the remaining work, 7 days after its submit time nothing passes it.
  old.submit_time = kNow - std::chrono::hours(24 * 7);
  old.estimate->expected = Millis(std::chrono::hours(24 * 365));
  EXPECT_EQ(right(old, minutes(10)), PreemptionRight::kNone);
  // The work it would lose counts against the gain: with its last checkpoint 50 minutes ago
  // (200 GPU-minutes), 240 >= 2 x (10 + 200) fails; 10 minutes ago (40), 240 >= 2 x (10 + 40).
  RunningJob unsaved = victim;
  unsaved.last_checkpoint = kNow - minutes(50);
  EXPECT_EQ(right(unsaved, minutes(10)), PreemptionRight::kNone);
  unsaved.last_checkpoint = kNow - minutes(10);
  EXPECT_EQ(right(unsaved, minutes(10)), PreemptionRight::kOrder);
  EXPECT_EQ(right(unsaved, minutes(81)), PreemptionRight::kNone);  // 2 x (81 + 40) > 240
  // Off: only classes and guarantees preempt.
  policy_.prediction.size_preemption = false;
  EXPECT_EQ(right(victim, minutes(10)), PreemptionRight::kNone);
}

}  // namespace
}  // namespace gf
