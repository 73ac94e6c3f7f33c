#include "metrics/cluster_series.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

const Time kT0 = FromUnixMillis(1'700'000'000'000);

GpuView Gpu(int index, std::optional<int> util, bool held, std::int64_t power_mw = 100'000) {
  GpuView v;
  v.node = NodeId("n1");
  v.gpu.index = index;
  v.gpu.uuid = GpuUuid("GPU-" + std::to_string(index));
  if (held) {
    v.assignments.push_back(GpuAssignment{.job = JobId(index + 1)});
  }
  GpuSample s;
  s.uuid = v.gpu.uuid;
  s.util_gpu_pct = util;
  s.power_mw = power_mw;
  v.sample = s;
  return v;
}

// A hand-counted cluster: 5 GPUs; GPU 0 held and busy, 1 held at 2 % (idle: under the
// report's 5 %), 2 held without a reading, 3 free but running someone's process at 50 %, 4
// free and failed.
TEST(ClusterPointTest, CountsGpusQueueAndTeamsByHand) {
  TelemetrySnapshot t;
  t.gpus = {Gpu(0, 80, true),
            Gpu(1, 2, true),
            Gpu(2, std::nullopt, true),
            Gpu(3, 50, false),
            Gpu(4, 0, false)};
  t.gpus[4].gpu.health = GpuHealth::kFailed;
  ClusterStats stats;
  stats.queue = {QueueStats{"high", 0, 0}, QueueStats{"normal", 3, 120.5}};
  QuotaReport quota;
  quota.teams = {
      TeamQuota{.team = "ml", .guaranteed_gpus = 2, .held_milli = 3000, .borrowed_milli = 1000}};

  const ClusterPoint p = MakeClusterPoint(kT0, stats, &quota, t);
  EXPECT_EQ(p.time, kT0);
  EXPECT_EQ(p.gpus, 5);
  EXPECT_EQ(p.allocated, 3);
  EXPECT_EQ(p.busy, 1);
  EXPECT_EQ(p.idle_allocated, 2);
  EXPECT_EQ(p.failed, 1);
  EXPECT_DOUBLE_EQ(p.used, 0.80 + 0.02 + 0.50);
  EXPECT_DOUBLE_EQ(p.power_w, 500);
  ASSERT_EQ(p.queue.size(), 2U);
  EXPECT_EQ(p.queue[1].priority, "normal");
  EXPECT_EQ(p.queue[1].pending, 3);
  EXPECT_DOUBLE_EQ(p.queue[1].oldest_wait_s, 120.5);
  ASSERT_EQ(p.teams.size(), 1U);
  EXPECT_EQ(p.teams[0].team, "ml");
  EXPECT_EQ(p.teams[0].guaranteed, 2);
  EXPECT_EQ(p.teams[0].held, 3);
  EXPECT_EQ(p.teams[0].borrowed, 1);

  EXPECT_TRUE(MakeClusterPoint(kT0, stats, nullptr, t).teams.empty());
}

ClusterPoint At(Time t, double allocated, std::vector<ClassPoint> queue = {}) {
  ClusterPoint p;
  p.time = t;
  p.allocated = allocated;
  p.queue = std::move(queue);
  return p;
}

TEST(ClusterPointTest, MeanMatchesClassesByNameAndCountsAbsentAsZero) {
  const std::vector<ClusterPoint> points = {
      At(kT0, 2, {{"normal", 4, 100}}),
      At(kT0 + Millis(5000), 4, {{"high", 1, 10}, {"normal", 2, 50}}),
  };
  const ClusterPoint mean = MeanPoint(points);
  EXPECT_EQ(mean.time, kT0 + Millis(5000));
  EXPECT_EQ(mean.allocated, 3);
  ASSERT_EQ(mean.queue.size(), 2U);
  EXPECT_EQ(mean.queue[0].priority, "normal");
  EXPECT_EQ(mean.queue[0].pending, 3);
  EXPECT_EQ(mean.queue[0].oldest_wait_s, 75);
  EXPECT_EQ(mean.queue[1].priority, "high");
  EXPECT_EQ(mean.queue[1].pending, 0.5);
}

TEST(ClusterSeriesTest, FineWindowKeepsAnHourAndIgnoresOlderPoints) {
  ClusterSeries series;
  for (int i = 0; i <= 800; ++i) {  // every 5 s for 4000 s
    series.Record(At(kT0 + Millis(5000LL * i), i));
  }
  series.Record(At(kT0, 99));  // older than the latest: ignored
  const Time now = kT0 + Millis(4'000'000);
  const auto hour = series.Window(now, Millis(3'600'000), 1000);
  ASSERT_EQ(hour.size(), 720U);  // (now - 1 h, now]
  EXPECT_EQ(hour.back().allocated, 800);
  EXPECT_EQ(hour.front().time, now - Millis(3'600'000) + Millis(5000));
  ASSERT_TRUE(series.Latest());
  EXPECT_EQ(series.Latest()->allocated, 800);
}

TEST(ClusterSeriesTest, WindowsOverMaxPointsAreAveragedIntoSlices) {
  ClusterSeries series;
  for (int i = 1; i <= 720; ++i) {
    series.Record(At(kT0 + Millis(5000LL * i), i % 2 == 0 ? 4 : 2));
  }
  const Time now = kT0 + Millis(5000LL * 720);
  const auto points = series.Window(now, Millis(3'600'000), 360);
  ASSERT_EQ(points.size(), 360U);  // 10 s slices of two points each
  for (const ClusterPoint& p : points) {
    EXPECT_EQ(p.allocated, 3);
  }
  EXPECT_LE(series.Window(now, Millis(3'600'000)).size(), ClusterSeries::kMaxPoints);
}

TEST(ClusterSeriesTest, CoarseRingHoldsMinuteMeansForTheWeekWindows) {
  ClusterSeries series;
  // Two minutes of points every 5 s, allocated 1 in the first and 3 in the second, then one.
  for (int i = 0; i < 24; ++i) {
    series.Record(At(kT0 + Millis(5000LL * i), i < 12 ? 1 : 3));
  }
  ASSERT_EQ(ToUnixMillis(kT0) % 60'000, 20'000);  // kT0 is 20 s past a minute
  const Time now = kT0 + Millis(5000LL * 24);
  const auto day = series.Window(now, Millis(86'400'000));
  ASSERT_FALSE(day.empty());
  // Minute slots: [kT0, +40 s) holds 8 points of 1; the next minute 4 of 1 and 8 of 3; the open
  // slot (from +100 s) 4 of 3, shown as its mean so far.
  ASSERT_EQ(day.size(), 3U);
  EXPECT_EQ(day[0].allocated, 1);
  EXPECT_DOUBLE_EQ(day[1].allocated, (4 * 1 + 8 * 3) / 12.0);
  EXPECT_EQ(day[2].allocated, 3);
}

}  // namespace
}  // namespace gf
