#include "scheduler/estimates.h"

#include <gtest/gtest.h>

#include "scheduler/placement/gpu_pool.h"

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

}  // namespace
}  // namespace gf
