#include "tune/candidates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"

namespace gf::tune {
namespace {

std::vector<std::string> Names(const std::vector<Candidate>& candidates) {
  std::vector<std::string> names;
  names.reserve(candidates.size());
  for (const Candidate& c : candidates) {
    names.push_back(c.name);
  }
  return names;
}

TEST(CandidatesTest, StockPolicyGetsOneChangeAtATime) {
  const std::vector<Candidate> candidates = CandidatesFrom(PolicyConfig{});
  EXPECT_EQ(Names(candidates),
            (std::vector<std::string>{"current",
                                      "preemption = false",
                                      "min_run_time = \"5m\"",
                                      "min_run_time = \"20m\"",
                                      "backfill = false",
                                      "prediction = false",
                                      "fair_share_band = 1",
                                      "fair_share_band = 4",
                                      "size_preemption = false",
                                      "prediction_max_delay = \"1d\"",
                                      "fair_share_half_life = \"1d\""}));
  EXPECT_TRUE(candidates[0].changes.empty());
  EXPECT_EQ(candidates[2].policy.preemption.min_run_time, std::chrono::minutes(5));
  EXPECT_EQ(candidates[2].changes, (std::vector<Change>{{"min_run_time", "\"5m\""}}));
}

TEST(CandidatesTest, VariantsFollowTheCurrentPolicy) {
  PolicyConfig fifo;
  fifo.ordering.order = QueueOrder::kFifo;
  fifo.preemption.enabled = false;
  fifo.backfill.enabled = false;
  fifo.fair_share.half_life = std::chrono::hours(24);
  EXPECT_EQ(Names(CandidatesFrom(fifo)),
            (std::vector<std::string>{"current",
                                      "order = \"priority\"",
                                      "preemption = true",
                                      "backfill = true",
                                      "fair_share_half_life = \"7d\""}));
}

TEST(CandidatesTest, SchedulerTomlLoadsBackToTheSamePolicy) {
  PolicyConfig policy;
  policy.preemption.min_run_time = std::chrono::seconds(0);
  policy.prediction.fair_share_band = 1.5;
  policy.prediction.max_delay = std::chrono::hours(36);
  policy.prediction.user_fair_share = PredictionPolicy::UserFairShare::kBand;
  policy.prediction.size_preemption = false;
  policy.prediction.size_preemption_ratio = 3.5;
  policy.fair_share.user_weights = {{"alice", 2}, {"bob \"b\"", 0.5}};
  policy.fair_share.model_weights = {{"H100-80GB", 2}};
  policy.ordering.las_thresholds = {100, 2500.5};
  auto config = ParseConfig(SchedulerToml(policy), "fragment.toml");
  ASSERT_TRUE(config.ok()) << config.error().message << "\n" << SchedulerToml(policy);
  EXPECT_EQ(SchedulerToml(config->policy), SchedulerToml(policy));
  EXPECT_EQ(config->policy.preemption.min_run_time, std::chrono::seconds(0));
  EXPECT_EQ(config->policy.prediction.max_delay, std::chrono::hours(36));
  EXPECT_EQ(config->policy.fair_share.user_weights, policy.fair_share.user_weights);
  for (const Candidate& c : CandidatesFrom(PolicyConfig{})) {
    auto loaded = ParseConfig(SchedulerToml(c.policy), c.name);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(SchedulerToml(loaded->policy), SchedulerToml(c.policy)) << c.name;
  }
}

}  // namespace
}  // namespace gf::tune
