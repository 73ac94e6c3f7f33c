#include "predict/load_forecast.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

// Monday 2026-11-30 00:00 UTC.
const Time kMonday = FromUnixMillis(1'795'996'800'000);

Time Hour(int h) {
  return kMonday + std::chrono::hours(h);
}

TEST(LoadForecastTest, HoursOfTheWeekStartOnMondayUtc) {
  EXPECT_EQ(HourOfWeek(kMonday), 0);
  EXPECT_EQ(HourOfWeek(Hour(9) + std::chrono::minutes(59)), 9);
  EXPECT_EQ(HourOfWeek(Hour(24 * 6 + 23)), 167);  // Sunday 23:00
  EXPECT_EQ(HourOfWeek(Hour(24 * 7)), 0);
  EXPECT_EQ(HourOfWeek(FromUnixMillis(0)), 3 * 24);  // 1970-01-01 was a Thursday
  EXPECT_EQ(HourOf(Hour(5) + std::chrono::minutes(30)), Hour(5));
}

TEST(LoadForecastTest, HourlyDemandIsTheGpuTimeWantedInEachHour) {
  // 4 GPUs from 00:30 to 02:15, 2 GPUs from 01:00 to 01:30, and 8 GPUs that started before
  // the window and end at 00:45.
  const std::vector<DemandSpan> spans = {
      {.from = Hour(0) + std::chrono::minutes(30),
       .to = Hour(2) + std::chrono::minutes(15),
       .gpus = 4},
      {.from = Hour(1), .to = Hour(1) + std::chrono::minutes(30), .gpus = 2},
      {.from = Hour(-5), .to = Hour(0) + std::chrono::minutes(45), .gpus = 8}};
  const std::vector<double> demand = HourlyDemand(spans, Hour(0), 4);
  ASSERT_EQ(demand.size(), 4U);
  EXPECT_DOUBLE_EQ(demand[0], 4 * 0.5 + 8 * 0.75);  // 8
  EXPECT_DOUBLE_EQ(demand[1], 4 + 2 * 0.5);         // 5
  EXPECT_DOUBLE_EQ(demand[2], 4 * 0.25);            // 1
  EXPECT_DOUBLE_EQ(demand[3], 0);
}

// Two weeks of a working-day pattern: 8 GPUs wanted on weekdays from 09:00 to 17:00, none
// otherwise.
LoadForecast TwoWorkingWeeks() {
  LoadForecast forecast;
  for (int h = 0; h < 2 * kHoursPerWeek; ++h) {
    const int day = (h / 24) % 7;
    const int hour = h % 24;
    forecast.Observe(Hour(h), day < 5 && hour >= 9 && hour < 17 ? 8 : 0);
  }
  return forecast;
}

TEST(LoadForecastTest, TheWeeklyProfileForecastsTheWorkingDay) {
  const LoadForecast forecast = TwoWorkingWeeks();
  EXPECT_EQ(forecast.HoursObserved(), 2 * kHoursPerWeek);
  EXPECT_DOUBLE_EQ(forecast.Trend(), 1);
  // The third Monday from 07:00: 0, 0, then 8 from 09:00.
  const std::vector<double> monday = forecast.Forecast(Hour(2 * kHoursPerWeek + 7), 4);
  EXPECT_EQ(monday, (std::vector<double>{0, 0, 8, 8}));
  // Saturday noon: nothing.
  EXPECT_EQ(forecast.Forecast(Hour(2 * kHoursPerWeek + 5 * 24 + 12), 1), std::vector<double>{0});
}

TEST(LoadForecastTest, ARecentRiseAboveTheProfileRaisesTheNextHours) {
  LoadForecast forecast = TwoWorkingWeeks();
  // The third Monday from 09:00 to 14:00 runs at 12 GPUs where the profile says 8 (the newest
  // week weighs 0.3 in a slot: each of those slots becomes 8 + 0.3 x 4 = 9.2).
  const int monday = 2 * kHoursPerWeek;
  for (int h = 0; h < 9; ++h) {
    forecast.Observe(Hour(monday + h), 0);
  }
  for (int h = 9; h < 15; ++h) {
    forecast.Observe(Hour(monday + h), 12);
  }
  // The last 6 hours saw 72 GPU-hours where the profile said 48: a trend of 1.5.
  EXPECT_DOUBLE_EQ(forecast.Trend(), 1.5);
  // 15:00 and 16:00: 8 x 1.5 = 12; from 17:00 the profile's 0.
  EXPECT_EQ(forecast.Forecast(Hour(monday + 15), 3), (std::vector<double>{12, 12, 0}));
  // An hour seen again (after a restart) changes nothing.
  forecast.Observe(Hour(monday + 14), 100);
  EXPECT_DOUBLE_EQ(forecast.Trend(), 1.5);
}

TEST(LoadForecastTest, AnHourNeverSeenTakesTheRecentLevel) {
  LoadForecast forecast;
  EXPECT_TRUE(forecast.Forecast(Hour(0), 3).empty());  // nothing observed: no forecast
  forecast.Observe(Hour(0), 2);
  forecast.Observe(Hour(1), 4);
  // Hour 1 is seen (4); hours 2 and 3 were never seen: the recent mean, 3.
  EXPECT_EQ(forecast.Forecast(Hour(1), 3), (std::vector<double>{4, 3, 3}));
}

TEST(LoadForecastTest, IdleGpusAreKeptReadyOnlyForForecastDemand) {
  const LoadForecast forecast = TwoWorkingWeeks();
  const int monday = 2 * kHoursPerWeek;
  // 05:00, 2 GPUs in use of 16, looking 2 hours ahead: nothing forecast, every idle GPU may be
  // capped.
  EXPECT_EQ(GpusToKeepReady(forecast, Hour(monday + 5), 2, 2, 16), 0);
  // 07:30, 2 hours ahead reaches 09:00 (8 wanted): 8 - 2 in use = 6 GPUs kept ready.
  EXPECT_EQ(GpusToKeepReady(forecast, Hour(monday + 7) + std::chrono::minutes(30), 2, 2, 16), 6);
  // Never more than the idle GPUs.
  EXPECT_EQ(GpusToKeepReady(forecast, Hour(monday + 9), 2, 12, 14), 0);
  EXPECT_EQ(GpusToKeepReady(forecast, Hour(monday + 9), 2, 5, 10), 3);
  // No forecast yet: the plain idle rule decides.
  EXPECT_FALSE(GpusToKeepReady(LoadForecast(), Hour(0), 2, 0, 8).has_value());
}

}  // namespace
}  // namespace gf
