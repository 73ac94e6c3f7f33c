#include "scheduler/estimates.h"

#include <gtest/gtest.h>

#include "core/duration.h"
#include "scheduler/placement/gpu_pool.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const std::int64_t kNow = 1'780'000'000'000;

RunningJob Running(std::int64_t started_ms_ago,
                   std::optional<seconds> limit,
                   std::optional<Millis> high) {
  RunningJob job;
  job.start_time = FromUnixMillis(kNow - started_ms_ago);
  job.time_limit = limit;
  if (high) {
    job.estimate = RunEstimate{.expected = *high / 2, .high = *high};
  }
  return job;
}

TEST(EstimatesTest, ARunEndsAtItsLimitOrItsHighEstimateWhicheverComesFirst) {
  const std::int64_t hour = 3'600'000;
  // No limit, no estimate: never known.
  EXPECT_EQ(PlannedEndMs(Running(0, std::nullopt, std::nullopt), kNow, true), kNever);
  // No limit: its high estimate, with estimates on only.
  EXPECT_EQ(PlannedEndMs(Running(0, std::nullopt, Millis(hours(2))), kNow, true), kNow + 2 * hour);
  EXPECT_EQ(PlannedEndMs(Running(0, std::nullopt, Millis(hours(2))), kNow, false), kNever);
  // A limit shorter than the estimate wins: the job is killed then.
  EXPECT_EQ(PlannedEndMs(Running(0, hours(1), Millis(hours(2))), kNow, true), kNow + hour);
  // Stopping: at once.
  RunningJob stopping = Running(0, hours(1), Millis(hours(2)));
  stopping.stopping = true;
  EXPECT_EQ(PlannedEndMs(stopping, kNow, true), kNow);
}

TEST(EstimatesTest, ARunPastItsHighEstimateHasItDoubledUntilItLiesAhead) {
  const std::int64_t hour = 3'600'000;
  // Started 3 h ago with a 1 h high estimate: 2 h is past too, so 4 h from its start.
  EXPECT_EQ(PlannedEndMs(Running(3 * hour, std::nullopt, Millis(hours(1))), kNow, true),
            kNow + hour);
  // Exactly at 4 h: 8 h.
  EXPECT_EQ(PlannedEndMs(Running(4 * hour, std::nullopt, Millis(hours(1))), kNow, true),
            kNow + 4 * hour);
  // Its limit still caps the plan.
  EXPECT_EQ(PlannedEndMs(Running(3 * hour, hours(5), Millis(hours(1))), kNow, true), kNow + hour);
}

TEST(EstimatesTest, AStartIsPlannedWithTheShorterOfLimitAndHighEstimate) {
  PolicyConfig policy;
  QueuedJob job;
  EXPECT_EQ(PlannedLength(job, hours(1), policy), seconds(hours(1)));  // no estimate
  job.estimate = RunEstimate{.expected = Millis(minutes(10)), .high = Millis(1'500)};
  EXPECT_EQ(PlannedLength(job, hours(1), policy), seconds(2));  // rounded up
  EXPECT_EQ(PlannedLength(job, std::nullopt, policy), seconds(2));
  EXPECT_EQ(PlannedLength(job, seconds(1), policy), seconds(1));
  policy.prediction.enabled = false;
  EXPECT_EQ(PlannedLength(job, std::nullopt, policy), std::nullopt);
}

TEST(EstimatesTest, APlaceMovesBackByPredictedGpuTimeCappedAtMaxDelay) {
  PolicyConfig policy;
  policy.prediction.max_delay = hours(1);
  QueuedJob job;
  job.submit_time = FromUnixMillis(kNow);
  job.request.gpus = 2;
  EXPECT_EQ(PlaceMs(job, policy), kNow);
  job.estimate = RunEstimate{.expected = Millis(minutes(10)), .high = Millis(minutes(20))};
  EXPECT_EQ(PlaceMs(job, policy), kNow + std::int64_t{20} * 60'000);  // 10 min x 2 GPUs
  job.request.gpus = 0;
  job.request.gpu_milli = 250;  // a quarter of a GPU counts as one: never as no work
  EXPECT_EQ(PlaceMs(job, policy), kNow + std::int64_t{10} * 60'000);
  job.request.gpu_milli = 0;
  job.request.gpus = 16;
  EXPECT_EQ(PlaceMs(job, policy), kNow + 3'600'000);  // 160 GPU-min, capped at 1 h
}

// Estimated starts (issue #22): from time limits, a single time; from predictions, a range from
// the median estimates to the high ones; each says which.
class EstimatedStartTest : public ::testing::Test {
 protected:
  static constexpr std::int64_t kMinute = 60'000;

  // One node of 4 GPUs, all held by job 100, started `ran_min` minutes ago.
  static ClusterSnapshot Held(RunningJob holder, std::int64_t ran_min) {
    ClusterSnapshot cluster;
    cluster.nodes.push_back(testing::MakeNode("n1", 4, "H100"));
    holder.start_time = FromUnixMillis(kNow - ran_min * kMinute);
    for (int g = 0; g < 4; ++g) {
      cluster.nodes[0].allocated.insert(testing::Uuid("n1", g));
    }
    cluster.running.push_back(std::move(holder));
    return cluster;
  }
  static RunningJob Holder() { return testing::RunningOn(100, "n1", {0, 1, 2, 3}); }
  static QueuedJob Waiting(std::int64_t id, std::optional<RunEstimate> estimate = std::nullopt) {
    QueuedJob job = testing::MakeJob(id, 4);
    job.submit_time = FromUnixMillis(kNow - (10 - id) * 10'000);  // in id order, 10 s apart
    job.estimate = estimate;
    return job;
  }
  static const PendingDecision& Of(const Decisions& d, std::int64_t id) {
    for (const PendingDecision& p : d.pending) {
      if (p.job.value() == id) {
        return p;
      }
    }
    ADD_FAILURE() << "job " << id << " has no pending decision";
    return d.pending.front();
  }
  static Time In(std::int64_t at_min) { return FromUnixMillis(kNow + at_min * kMinute); }
};

TEST_F(EstimatedStartTest, FromATimeLimitTheStartIsOneTimeAndSaysSo) {
  RunningJob holder = Holder();
  holder.time_limit = hours(1);
  const Decisions d = Decide(
      Held(holder, 10), Queue{.pending = {Waiting(1)}}, PolicyConfig{}, FromUnixMillis(kNow));
  const PendingDecision& p = Of(d, 1);
  ASSERT_TRUE(p.start_estimate.has_value());
  EXPECT_EQ(p.start_estimate->basis, StartBasis::kTimeLimits);
  EXPECT_EQ(p.start_estimate->earliest, In(50));  // 60 minutes from a start 10 minutes ago
  EXPECT_EQ(p.start_estimate->latest, In(50));
  EXPECT_EQ(p.estimated_start, In(50));
  EXPECT_NE(p.reason.text.find("expected to start at " + FormatUtcSeconds(In(50)) +
                               " on n1 (GPUs reserved; by time limits)"),
            std::string::npos)
      << p.reason.text;
}

TEST_F(EstimatedStartTest, FromPredictionsItIsARangeFromTheMedianToTheHighEstimate) {
  RunningJob holder = Holder();  // no limit: predicted 30 minutes, high 60
  holder.estimate = RunEstimate{.expected = Millis(minutes(30)), .high = Millis(minutes(60))};
  // Job 2 waits behind job 1 for its end: 1 is predicted 10 minutes, high 20.
  const Queue queue{
      .pending = {
          Waiting(1, RunEstimate{.expected = Millis(minutes(10)), .high = Millis(minutes(20))}),
          Waiting(2)}};
  PolicyConfig policy;
  policy.prediction.max_delay = seconds(1);  // keep the submit order
  const Decisions d = Decide(Held(holder, 10), queue, policy, FromUnixMillis(kNow));
  const PendingDecision& first = Of(d, 1);
  ASSERT_TRUE(first.start_estimate.has_value());
  EXPECT_EQ(first.start_estimate->basis, StartBasis::kPredictions);
  EXPECT_EQ(first.start_estimate->earliest, In(20));  // 30 - 10
  EXPECT_EQ(first.start_estimate->latest, In(50));    // 60 - 10
  EXPECT_NE(first.reason.text.find("expected to start between " + FormatUtcSeconds(In(20)) +
                                   " and " + FormatUtcSeconds(In(50)) +
                                   " on n1 (GPUs reserved; by predicted run times)"),
            std::string::npos)
      << first.reason.text;
  // Job 2 starts when job 1 ends: at the earliest 20 + 10, at the latest 50 + 20.
  const PendingDecision& second = Of(d, 2);
  ASSERT_TRUE(second.start_estimate.has_value());
  EXPECT_EQ(second.start_estimate->basis, StartBasis::kPredictions);
  EXPECT_EQ(second.start_estimate->earliest, In(30));
  EXPECT_EQ(second.start_estimate->latest, In(70));
}

TEST_F(EstimatedStartTest, ARunPastItsMedianMayEndAnyTime) {
  RunningJob holder = Holder();
  holder.estimate = RunEstimate{.expected = Millis(minutes(30)), .high = Millis(minutes(60))};
  const Decisions d = Decide(
      Held(holder, 40), Queue{.pending = {Waiting(1)}}, PolicyConfig{}, FromUnixMillis(kNow));
  const PendingDecision& p = Of(d, 1);
  ASSERT_TRUE(p.start_estimate.has_value());
  EXPECT_EQ(p.start_estimate->earliest, In(0));
  EXPECT_EQ(p.start_estimate->latest, In(20));
  // A limit shorter than the high estimate plans the start: the limits' basis, one time.
  holder.time_limit = minutes(45);
  const Decisions limited = Decide(
      Held(holder, 40), Queue{.pending = {Waiting(1)}}, PolicyConfig{}, FromUnixMillis(kNow));
  EXPECT_EQ(Of(limited, 1).start_estimate->basis, StartBasis::kTimeLimits);
  EXPECT_EQ(Of(limited, 1).start_estimate->earliest, In(5));
  // Prediction off: estimates are not read, and without a limit there is no start to give.
  PolicyConfig off;
  off.prediction.enabled = false;
  holder.time_limit.reset();
  const Decisions none =
      Decide(Held(holder, 40), Queue{.pending = {Waiting(1)}}, off, FromUnixMillis(kNow));
  EXPECT_FALSE(Of(none, 1).start_estimate.has_value());
  EXPECT_FALSE(Of(none, 1).estimated_start.has_value());
}

}  // namespace
}  // namespace gf
