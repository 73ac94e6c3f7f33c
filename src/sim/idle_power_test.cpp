#include "sim/idle_power.h"

#include <gtest/gtest.h>

namespace gf::sim {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

// One GPU; job "a" runs from 0 to 1 h, job "b" from `b_at` for an hour (each submitted as it
// starts).
SimResult TwoJobs(hours b_at) {
  SimResult result;
  result.total_gpus = 1;
  for (const auto& [id, at] : {std::pair{"a", hours(0)}, std::pair{"b", b_at}}) {
    JobOutcome job;
    job.id = id;
    job.gpus = 1;
    job.submit = Millis(at);
    job.fate = JobFate::kCompleted;
    job.runs = {{Millis(at), Millis(at + hours(1))}};
    result.jobs.push_back(job);
  }
  return result;
}

TEST(IdlePowerTest, AForecastOfRecentDemandKeepsTheGpuReady) {
  // Idle from 1 h to 2 h. The idle wait caps it from 1h10m: 50 minutes capped, and b's start
  // waits for the lift. The forecast has seen an hour of 1 GPU wanted and keeps one ready.
  const IdlePowerComparison c = CompareIdlePower(TwoJobs(hours(2)), IdlePowerOptions{});
  EXPECT_DOUBLE_EQ(c.idle_wait.idle_gpu_hours, 1);
  EXPECT_NEAR(c.idle_wait.capped_gpu_hours, 50.0 / 60, 1e-9);
  EXPECT_EQ(c.idle_wait.starts, 2);
  EXPECT_EQ(c.idle_wait.starts_delayed, 1);
  EXPECT_DOUBLE_EQ(c.idle_wait.added_queueing_s, 30);
  EXPECT_DOUBLE_EQ(c.forecast.idle_gpu_hours, 1);
  EXPECT_DOUBLE_EQ(c.forecast.capped_gpu_hours, 0);
  EXPECT_EQ(c.forecast.starts_delayed, 0);
}

TEST(IdlePowerTest, OnceNoDemandIsForecastTheGpuIsCapped) {
  // Idle from 1 h to 30 h. The idle wait caps it from 1h10m: 28h50m. The forecast (6 recent
  // hours, none of these hours of the week seen before) wants 1 GPU ready while an hour with
  // demand is among the last 6 (to 7 h), then none: capped from 7 h, 23 h. Both make b wait.
  const IdlePowerComparison c = CompareIdlePower(TwoJobs(hours(30)), IdlePowerOptions{});
  EXPECT_DOUBLE_EQ(c.idle_wait.idle_gpu_hours, 29);
  EXPECT_NEAR(c.idle_wait.capped_gpu_hours, 28 + 50.0 / 60, 1e-9);
  EXPECT_EQ(c.idle_wait.starts_delayed, 1);
  EXPECT_NEAR(c.forecast.capped_gpu_hours, 23, 1e-9);
  EXPECT_EQ(c.forecast.starts_delayed, 1);
  const std::string text = FormatIdlePower(c, IdlePowerOptions{});
  EXPECT_NE(text.find("idle 10m only"), std::string::npos) << text;
  EXPECT_NE(text.find("28.8 of 29.0"), std::string::npos) << text;
  EXPECT_NE(text.find("load forecast, 2h ahead"), std::string::npos) << text;
  EXPECT_NE(text.find("23.0 of 29.0"), std::string::npos) << text;
}

}  // namespace
}  // namespace gf::sim
