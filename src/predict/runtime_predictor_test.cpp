#include "predict/runtime_predictor.h"

#include <cmath>

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

RunKey Key(std::string user, std::string family, int gpus, std::string team = "cv") {
  return RunKey{
      .user = std::move(user), .team = std::move(team), .family = std::move(family), .gpus = gpus};
}

double Seconds(Millis m) {
  return std::chrono::duration<double>(m).count();
}

TEST(RuntimePredictorTest, NothingBeforeTheFirstEnd) {
  const RuntimePredictor predictor;
  EXPECT_FALSE(predictor.Predict(Key("alice", "train.py", 4)).has_value());
}

TEST(RuntimePredictorTest, OneRunPredictsItselfWithThePriorSpread) {
  RuntimePredictor predictor;
  predictor.Learn(Key("alice", "python train.py", 4), seconds(3600), RunEnd::kCompleted);
  const auto p = predictor.Predict(Key("alice", "python train.py", 4));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->expected, seconds(3600));
  EXPECT_EQ(p->basis, PredictionBasis::kUserFamilyGpus);
  EXPECT_EQ(p->runs, 1);
  EXPECT_DOUBLE_EQ(p->log_spread, 1.0);
  // 3600 s x e^(1.2816 x 1.0) = 12,967.5 s.
  EXPECT_NEAR(Seconds(p->high), 3600 * std::exp(1.2816), 1);
  EXPECT_EQ(p->explanation, "as long as alice's 1 run of python train.py with 4 GPUs");
}

TEST(RuntimePredictorTest, TwoRunsGiveTheirGeometricMean) {
  RuntimePredictor predictor;
  predictor.Learn(Key("alice", "eval.sh", 1), seconds(100), RunEnd::kCompleted);
  predictor.Learn(Key("alice", "eval.sh", 1), seconds(400), RunEnd::kCompleted);
  const auto p = predictor.Predict(Key("alice", "eval.sh", 1));
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(Seconds(p->expected), 200, 0.001);  // sqrt(100 x 400)
  EXPECT_GT(p->high, p->expected);
  EXPECT_EQ(p->explanation, "mean of the last 2 of alice's 2 runs of eval.sh with 1 GPU");
}

TEST(RuntimePredictorTest, ManyRunsGiveTheirMedian) {
  RuntimePredictor predictor;
  // 21 runs of 1..21 minutes, in a scrambled order: the median is 11 minutes.
  for (int i = 0; i < 21; ++i) {
    const int m = 1 + (i * 8) % 21;
    predictor.Learn(Key("bob", "train.py", 8), minutes(m), RunEnd::kCompleted);
  }
  const auto p = predictor.Predict(Key("bob", "train.py", 8));
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(Seconds(p->expected), 11 * 60, 90);
  EXPECT_GT(Seconds(p->high), 15 * 60);  // the 90th percentile is 19 minutes
  EXPECT_EQ(p->explanation, "median of bob's 21 runs of train.py with 8 GPUs");
}

TEST(RuntimePredictorTest, FallsBackFromTheJobToTheUserTeamAndCluster) {
  RuntimePredictor predictor;
  predictor.Learn(Key("alice", "train.py", 4), minutes(60), RunEnd::kCompleted);
  predictor.Learn(Key("carol", "prep.sh", 1, "nlp"), minutes(2), RunEnd::kCompleted);
  // Another family, the same GPU count: alice with 4 GPUs.
  auto p = predictor.Predict(Key("alice", "other.py", 4));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->basis, PredictionBasis::kUserGpus);
  EXPECT_EQ(p->expected, minutes(60));
  // Another GPU count: alice.
  p = predictor.Predict(Key("alice", "train.py", 1));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->basis, PredictionBasis::kUser);
  EXPECT_EQ(p->explanation, "as long as alice's 1 run");
  // A new user of team cv: the team's.
  p = predictor.Predict(Key("dave", "x", 1, "cv"));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->basis, PredictionBasis::kTeam);
  EXPECT_EQ(p->expected, minutes(60));
  // Anyone's runs of the same program with as many GPUs (a job of no user, or a new one).
  p = predictor.Predict(Key("frank", "train.py", 4, ""));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->basis, PredictionBasis::kFamilyGpus);
  EXPECT_EQ(p->explanation, "as long as 1 run of train.py with 4 GPUs");
  // The team's runs with as many GPUs, before the team's runs of any size.
  p = predictor.Predict(Key("gina", "y", 1, "nlp"));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->basis, PredictionBasis::kTeamGpus);
  EXPECT_EQ(p->expected, minutes(2));
  // A new user of no team: the runs with as many GPUs on the cluster.
  p = predictor.Predict(Key("erin", "x", 1, ""));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->basis, PredictionBasis::kGpus);
  EXPECT_EQ(p->explanation, "as long as 1 run on this cluster with 1 GPU");
  // A GPU count nobody ran, of no user: the cluster's (the mean of the last two).
  p = predictor.Predict(Key("", "", 2, ""));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->basis, PredictionBasis::kCluster);
  EXPECT_NEAR(Seconds(p->expected), std::sqrt(3600.0 * 120.0), 0.01);
  EXPECT_EQ(p->explanation, "mean of the last 2 of 2 runs on this cluster");
}

TEST(RuntimePredictorTest, ErrorIsTheMedianOfEachPredictionAgainstTheRunThatFollowed) {
  RuntimePredictor predictor;
  const RunKey key = Key("alice", "train.py", 4);
  predictor.Learn(key, seconds(100), RunEnd::kCompleted);
  EXPECT_FALSE(predictor.Predict(key)->error.has_value());  // nothing predicted before it
  // It predicted 100 s (its one run); the run took 200: off by |100 - 200| / 200 = 0.5.
  predictor.Learn(key, seconds(200), RunEnd::kCompleted);
  auto p = predictor.Predict(key);
  ASSERT_TRUE(p->error.has_value());
  EXPECT_NEAR(p->error->median_relative, 0.5, 1e-6);
  EXPECT_EQ(p->error->runs, 1);
  // It predicted sqrt(100 x 200) = 141.42 s; the run took 400: off by 0.6464. The median of
  // two errors is their mean: 0.5732.
  predictor.Learn(key, seconds(400), RunEnd::kCompleted);
  p = predictor.Predict(key);
  EXPECT_NEAR(p->error->median_relative, (0.5 + (400 - std::sqrt(20000.0)) / 400) / 2, 1e-6);
  EXPECT_EQ(p->error->runs, 2);
  // Each level keeps its own: the user's runs with 4 GPUs made the same predictions here.
  EXPECT_NEAR(predictor.Predict(Key("alice", "other.py", 4))->error->median_relative,
              p->error->median_relative,
              1e-6);
}

TEST(RuntimePredictorTest, ErrorKeepsOnlyTheLatestPredictions) {
  RuntimePredictor predictor;
  const RunKey key = Key("bob", "eval.sh", 1);
  // One 600 s run, then 60 s runs: the 2nd run was predicted at 600 s (off by 9.0), the 3rd
  // at sqrt(600 x 60) = 189.7 s (off by 2.16), the 4th at 60 s (off by 0).
  predictor.Learn(key, seconds(600), RunEnd::kCompleted);
  for (int i = 0; i < 3; ++i) {
    predictor.Learn(key, seconds(60), RunEnd::kCompleted);
  }
  const auto p = predictor.Predict(key);
  EXPECT_EQ(p->error->runs, 3);
  EXPECT_NEAR(p->error->median_relative, (std::sqrt(36000.0) - 60) / 60, 1e-5);  // of 9, 2.16, 0
}

TEST(RuntimePredictorTest, ErrorForgetsPredictionsOlderThanItsWindow) {
  RuntimePredictor predictor;
  const RunKey key = Key("bob", "eval.sh", 1);
  // 21 runs of 60 s: each predicted exactly (20 errors of 0).
  for (int i = 0; i < 21; ++i) {
    predictor.Learn(key, seconds(60), RunEnd::kCompleted);
  }
  EXPECT_EQ(predictor.Predict(key)->error->runs, kErrorWindow);
  EXPECT_DOUBLE_EQ(predictor.Predict(key)->error->median_relative, 0);
  // Then 11 runs of 6000 s, each predicted near the median of the runs so far, 60 s: off by
  // about 0.99. The window holds them and the last 9 zeros: its median is among the 11.
  for (int i = 0; i < 11; ++i) {
    predictor.Learn(key, seconds(6000), RunEnd::kCompleted);
  }
  const auto p = predictor.Predict(key);
  EXPECT_EQ(p->error->runs, kErrorWindow);
  EXPECT_GT(p->error->median_relative, 0.5);
}

TEST(RuntimePredictorTest, CountsHowOftenSuchJobsFailFast) {
  RuntimePredictor predictor;
  for (int i = 0; i < 4; ++i) {
    predictor.Learn(Key("alice", "broken.py", 1), seconds(5), RunEnd::kFailed);
  }
  predictor.Learn(Key("alice", "ok.py", 1), minutes(30), RunEnd::kFailed);  // not fast
  predictor.Learn(Key("alice", "ok.py", 1), minutes(30), RunEnd::kCompleted);
  EXPECT_DOUBLE_EQ(predictor.Predict(Key("alice", "broken.py", 1))->fail_fast_rate, 1.0);
  EXPECT_DOUBLE_EQ(predictor.Predict(Key("alice", "ok.py", 1))->fail_fast_rate, 0.0);
}

TEST(RuntimePredictorTest, SpreadGrowsWithDisagreeingRuns) {
  RuntimePredictor steady;
  RuntimePredictor erratic;
  for (int i = 0; i < 10; ++i) {
    steady.Learn(Key("a", "f", 1), minutes(10), RunEnd::kCompleted);
    erratic.Learn(Key("a", "f", 1), minutes(i % 2 == 0 ? 1 : 100), RunEnd::kCompleted);
  }
  EXPECT_NEAR(steady.Predict(Key("a", "f", 1))->log_spread, 0, 1e-9);
  EXPECT_GT(erratic.Predict(Key("a", "f", 1))->log_spread, 1.5);
  EXPECT_EQ(steady.KeyCount(), 8U);  // the job's eight keys
}

TEST(RuntimePredictorTest, CommandFamilies) {
  EXPECT_EQ(CommandFamily("python3", {"python3", "/home/a/train.py", "--lr", "3"}),
            "python3 train.py");
  EXPECT_EQ(CommandFamily("nightly-eval", {"python3", "eval.py"}), "nightly-eval");  // --name
  EXPECT_EQ(CommandFamily("eval.sh", {"./eval.sh", "--fast"}), "eval.sh");
  EXPECT_EQ(CommandFamily("python", {"python", "-u", "-m", "torch.distributed.run", "x.py"}),
            "python -m torch.distributed.run");
  EXPECT_EQ(CommandFamily("torchrun", {"torchrun", "--nproc_per_node=4", "train.py"}),
            "torchrun train.py");
  EXPECT_EQ(CommandFamily("env", {"env", "A=1", "python3.11", "t.py"}), "python3.11 t.py");
  EXPECT_EQ(CommandFamily("sh", {"sh", "-c", "echo $X"}), "sh -c");
  EXPECT_EQ(CommandFamily("sleep", {"/bin/sleep", "600"}), "sleep");
  EXPECT_EQ(CommandFamily("pythonic", {"pythonic"}), "pythonic");  // not a launcher
}

}  // namespace
}  // namespace gf
