#include "scheduler/ordering/fair_share.h"

#include <algorithm>
#include <array>
#include <random>

#include <gtest/gtest.h>

#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::Ids;

QueuedJob Job(std::int64_t id,
              const std::string& team,
              const std::string& user,
              const PriorityClass& priority = PriorityClass::kNormal,
              std::int64_t submit_s = 0) {
  QueuedJob job;
  job.id = JobId(id);
  job.team = team;
  job.user = user;
  job.priority = priority;
  job.submit_time = FromUnixMillis(submit_s * 1000);
  return job;
}

std::vector<std::int64_t> OrderOf(const Queue& queue,
                                  const ClusterSnapshot& cluster,
                                  const PolicyConfig& policy) {
  const ClassTable classes(policy, cluster);
  const Ledger ledger(policy, cluster, classes);
  return Ids(FairShareOrder(queue, cluster, policy, ledger));
}

TEST(FairShareOrderTest, WithoutUsageItIsClassThenSubmitTimeThenId) {
  const Queue queue{{Job(3, "a", "x", PriorityClass::kNormal, 5),
                     Job(1, "b", "y", PriorityClass::kLow, 0),
                     Job(2, "a", "y", PriorityClass::kNormal, 5),
                     Job(4, "c", "z", PriorityClass::kHigh, 9)}};
  EXPECT_EQ(OrderOf(queue, ClusterSnapshot{}, PolicyConfig{}),
            (std::vector<std::int64_t>{4, 2, 3, 1}));
}

TEST(FairShareOrderTest, AdminDefinedTiersThenUnconfiguredClassesLast) {
  PolicyConfig policy;
  policy.classes = {PriorityClassPolicy{.name = "urgent", .rank = -5},
                    PriorityClassPolicy{.name = "batch", .rank = 7},
                    PriorityClassPolicy{.name = "interactive", .rank = 7},
                    PriorityClassPolicy{.name = "normal", .rank = 3}};
  const Queue queue{{Job(1, "a", "x", PriorityClass::kHigh, 0),  // high: not configured
                     Job(2, "a", "x", PriorityClass{.name = "batch"}, 4),
                     Job(3, "a", "x", PriorityClass{.name = "interactive"}, 2),
                     Job(4, "a", "x", PriorityClass::kNormal, 9),
                     Job(5, "a", "x", PriorityClass{.name = "urgent"}, 9)}};
  // urgent, normal, then batch and interactive (one tier: submit time), then the unknown.
  EXPECT_EQ(OrderOf(queue, ClusterSnapshot{}, policy), (std::vector<std::int64_t>{5, 4, 3, 2, 1}));
}

TEST(FairShareOrderTest, TeamsThenUsersByUsageOverWeight) {
  ClusterSnapshot cluster;
  cluster.team_usage["a"].decayed_gpu_seconds = 100;
  cluster.team_usage["b"].decayed_gpu_seconds = 10;
  cluster.user_decayed_gpu_seconds["x"] = 50;
  cluster.user_decayed_gpu_seconds["y"] = 30;
  const Queue queue{{Job(1, "a", "y", PriorityClass::kNormal, 0),
                     Job(2, "b", "x", PriorityClass::kNormal, 1),
                     Job(3, "b", "y", PriorityClass::kNormal, 2),
                     Job(4, "a", "y", PriorityClass::kHigh, 3)}};
  PolicyConfig policy;
  // Users ordered by their share's band (the stock policy weighs sizes by it instead:
  // UsersFairShareWeighsTheirJobsSizes).
  policy.prediction.user_fair_share = PredictionPolicy::UserFairShare::kBand;
  EXPECT_EQ(OrderOf(queue, cluster, policy), (std::vector<std::int64_t>{4, 3, 2, 1}));
  // Weights divide usage: a's 100 / 20 = 5 is now below b's 10.
  policy.teams = {TeamPolicy{.name = "a", .fair_share_weight = 20}};
  EXPECT_EQ(OrderOf(queue, cluster, policy), (std::vector<std::int64_t>{4, 1, 3, 2}));
  // A user weight: x's 50 / 100 = 0.5 is now below y's 30, so x goes first within team b.
  policy.fair_share.user_weights["x"] = 100;
  EXPECT_EQ(OrderOf(queue, cluster, policy), (std::vector<std::int64_t>{4, 1, 2, 3}));
}

TEST(FairShareOrderTest, TeamsBelowTheirGuaranteeGoFirstWithinAClass) {
  ClusterSnapshot cluster;
  cluster.team_usage["a"].decayed_gpu_seconds = 1'000'000;  // used a lot, but is owed GPUs
  PolicyConfig policy;
  policy.teams = {TeamPolicy{.name = "a", .guaranteed_gpus = 4}};
  const Queue queue{{Job(1, "b", "x", PriorityClass::kNormal, 0),
                     Job(2, "a", "x", PriorityClass::kNormal, 1),
                     Job(3, "b", "x", PriorityClass::kHigh, 2)}};
  EXPECT_EQ(OrderOf(queue, cluster, policy), (std::vector<std::int64_t>{3, 2, 1}));
}

TEST(FairShareOrderTest, TheListOrderDoesNotMatter) {
  ClusterSnapshot cluster;
  cluster.team_usage["a"].decayed_gpu_seconds = 7;
  Queue queue;
  for (int i = 0; i < 200; ++i) {
    queue.pending.push_back(Job(i + 1,
                                i % 3 == 0 ? "a" : "b",
                                "u" + std::to_string(i % 5),
                                std::array{PriorityClass::kHigh,
                                           PriorityClass::kNormal,
                                           PriorityClass::kLow}[static_cast<std::size_t>(i % 3)],
                                i / 7));
  }
  const std::vector<std::int64_t> in_submit_order = OrderOf(queue, cluster, PolicyConfig{});
  std::shuffle(queue.pending.begin(), queue.pending.end(), std::mt19937(7));
  EXPECT_EQ(OrderOf(queue, cluster, PolicyConfig{}), in_submit_order);
}

// Predicted run times (scheduler/estimates.h): within a group a job's place is its submit time
// plus its predicted GPU-time, at most max_delay; without an estimate, its submit time.
QueuedJob Estimated(std::int64_t id, std::int64_t submit_s, std::int64_t expected_s, int gpus) {
  QueuedJob job = Job(id, "", "", PriorityClass::kNormal, submit_s);
  job.request.gpus = gpus;
  job.estimate =
      RunEstimate{.expected = Millis(expected_s * 1000), .high = Millis(expected_s * 2000)};
  return job;
}

TEST(FairShareOrderTest, PredictedGpuTimeMovesAJobsPlaceBackUpToMaxDelay) {
  PolicyConfig policy;
  policy.prediction.max_delay = std::chrono::hours(1);
  const Queue queue{{
      Estimated(1, 0, 7200, 1),   // 2 h on 1 GPU: place 0 + 1 h (capped)
      Estimated(2, 600, 300, 1),  // 5 min on 1 GPU: place 10 + 5 = 15 min
      Estimated(3, 900, 300, 4),  // 5 min on 4 GPUs: 20 GPU-min, place 15 + 20 = 35 min
      Estimated(4, 7200, 60, 1),  // submitted 2 h in: behind job 1 although shorter
      Job(5, "", "", PriorityClass::kNormal, 1800),  // no estimate: place = submit, 30 min
  }};
  EXPECT_EQ(OrderOf(queue, ClusterSnapshot{}, policy), (std::vector<std::int64_t>{2, 5, 3, 1, 4}));
  policy.prediction.enabled = false;  // submit order
  EXPECT_EQ(OrderOf(queue, ClusterSnapshot{}, policy), (std::vector<std::int64_t>{1, 2, 3, 5, 4}));
  policy.prediction.enabled = true;
  policy.ordering.order = QueueOrder::kFifo;  // a baseline ignores estimates
  EXPECT_EQ(OrderOf(queue, ClusterSnapshot{}, policy), (std::vector<std::int64_t>{1, 2, 3, 5, 4}));
}

TEST(FairShareOrderTest, EstimatesOrderWithinAGroupNeverAcrossClassesOrShares) {
  PolicyConfig policy;
  QueuedJob low_short = Estimated(1, 0, 10, 1);
  low_short.priority = PriorityClass::kLow;
  QueuedJob normal_long = Estimated(2, 0, 72'000, 8);  // 20 h
  const Queue queue{{low_short, normal_long}};
  EXPECT_EQ(OrderOf(queue, ClusterSnapshot{}, policy), (std::vector<std::int64_t>{2, 1}));
}

// Fair-share bands (PredictionPolicy::fair_share_band): a band spans a factor of the share
// relative to the mean share of those that used GPUs; nothing used is below every band.
TEST(FairShareOrderTest, StandingKeysAreBandsOfTheShareAgainstTheMean) {
  EXPECT_EQ(StandingKey(100, 100, 2), 0);
  EXPECT_EQ(StandingKey(190, 100, 2), 0);
  EXPECT_EQ(StandingKey(200, 100, 2), 1);
  EXPECT_EQ(StandingKey(70, 100, 2), -1);
  EXPECT_EQ(StandingKey(20, 100, 4), -2);
  EXPECT_LT(StandingKey(0, 100, 2), StandingKey(1e-9, 100, 2));
  EXPECT_EQ(StandingKey(37.5, 100, 1), 37.5);  // no bands: the share itself
  EXPECT_EQ(StandingKey(5, 0, 2), 0);          // no mean to compare with
}

// Users whose shares fall in one band compare equal, so the predicted size decides across
// them; a user far above the mean stays a band behind whatever the size.
TEST(FairShareOrderTest, WithinAFairShareBandThePredictedSizeDecidesAcrossUsers) {
  ClusterSnapshot cluster;
  // Mean 4,000: x at 0.15 and y at 0.225 of it share band -3; z at 2.6 is in band 1.
  cluster.user_decayed_gpu_seconds = {{"x", 600}, {"y", 900}, {"z", 10'500}};
  QueuedJob long_x = Estimated(1, 0, 7200, 1);  // place 2 h
  long_x.user = "x";
  QueuedJob short_y = Estimated(2, 60, 300, 1);  // place 6 min
  short_y.user = "y";
  QueuedJob tiny_z = Estimated(3, 0, 60, 1);  // place 1 min, but z used the most
  tiny_z.user = "z";
  const Queue queue{{long_x, short_y, tiny_z}};
  PolicyConfig policy;
  policy.prediction.user_fair_share = PredictionPolicy::UserFairShare::kBand;
  EXPECT_EQ(OrderOf(queue, cluster, policy), (std::vector<std::int64_t>{2, 1, 3}));
  policy.prediction.fair_share_band = 1;  // exact shares: x, then y, then z
  EXPECT_EQ(OrderOf(queue, cluster, policy), (std::vector<std::int64_t>{1, 2, 3}));
  policy.prediction.fair_share_band = 2;
  policy.prediction.enabled = false;  // without prediction, exact shares too
  EXPECT_EQ(OrderOf(queue, cluster, policy), (std::vector<std::int64_t>{1, 2, 3}));
}

// The stock rule (user_fair_share = "size"): users compare equal, and a job's predicted
// GPU-time counts band factor ^ band in its place (Smith's rule with fair-share weights): x and
// y in band -3 count 1/8, z in band 1 counts 2. Places: long_x 7200 / 8 = 900 s, short_y
// 60 + 300 / 8 = 97.5 s, tiny_z 60 x 2 = 120 s: the heavy user's tiny job goes before the light
// user's long one, after the light user's short one.
TEST(FairShareOrderTest, UsersFairShareWeighsTheirJobsSizes) {
  ClusterSnapshot cluster;
  cluster.user_decayed_gpu_seconds = {{"x", 600}, {"y", 900}, {"z", 10'500}};
  QueuedJob long_x = Estimated(1, 0, 7200, 1);
  long_x.user = "x";
  QueuedJob short_y = Estimated(2, 60, 300, 1);
  short_y.user = "y";
  QueuedJob tiny_z = Estimated(3, 0, 60, 1);
  tiny_z.user = "z";
  QueuedJob unknown = Job(4, "", "z", PriorityClass::kNormal, 100);  // no estimate: place 100
  const Queue queue{{long_x, short_y, tiny_z, unknown}};
  EXPECT_EQ(OrderOf(queue, cluster, PolicyConfig{}), (std::vector<std::int64_t>{2, 4, 3, 1}));
  // Below 1/8 of the mean, or nothing used, still counts 1/8: a user who used nothing does
  // not jump the queue with a long job (w: 7200 / 8 = 900 s, after tiny_z).
  QueuedJob long_w = Estimated(5, 0, 7200, 1);
  long_w.user = "w";
  const Queue more{{tiny_z, long_w}};
  EXPECT_EQ(OrderOf(more, cluster, PolicyConfig{}), (std::vector<std::int64_t>{3, 5}));
}

// The anti-starvation rule as a property: over random queues of one group, a job ordered
// before another was never submitted more than max_delay after it, whatever the estimates.
TEST(FairShareOrderTest, NoJobIsPassedByOneSubmittedMoreThanMaxDelayAfterIt) {
  std::mt19937 random(22);
  for (int round = 0; round < 200; ++round) {
    PolicyConfig policy;
    policy.prediction.max_delay = std::chrono::seconds(random() % 7200);
    Queue queue;
    for (int id = 1; id <= 40; ++id) {
      QueuedJob job =
          Job(id, "", "", PriorityClass::kNormal, static_cast<std::int64_t>(random() % 20'000));
      job.request.gpus = static_cast<int>(random() % 9);
      if (random() % 4 != 0) {
        const auto expected = Millis(static_cast<std::int64_t>(random() % 100'000'000));
        job.estimate = RunEstimate{.expected = expected, .high = expected * 2};
      }
      queue.pending.push_back(job);
    }
    const std::vector<std::int64_t> order = OrderOf(queue, ClusterSnapshot{}, policy);
    for (std::size_t a = 0; a < order.size(); ++a) {
      for (std::size_t b = a + 1; b < order.size(); ++b) {
        const Time first = queue.pending[static_cast<std::size_t>(order[a] - 1)].submit_time;
        const Time later = queue.pending[static_cast<std::size_t>(order[b] - 1)].submit_time;
        ASSERT_LE(first, later + policy.prediction.max_delay)
            << "job " << order[a] << " passed job " << order[b] << " in round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace gf
