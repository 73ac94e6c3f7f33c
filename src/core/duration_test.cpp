#include "core/duration.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::seconds;

TEST(DurationTest, UnitForms) {
  EXPECT_EQ(*ParseDuration("90s"), seconds(90));
  EXPECT_EQ(*ParseDuration("30m"), seconds(1800));
  EXPECT_EQ(*ParseDuration("2h"), seconds(7200));
  EXPECT_EQ(*ParseDuration("1d"), seconds(86400));
  EXPECT_EQ(*ParseDuration("1h30m"), seconds(5400));
}

TEST(DurationTest, SlurmForms) {
  EXPECT_EQ(*ParseDuration("45"), seconds(45 * 60));
  EXPECT_EQ(*ParseDuration("1:30"), seconds(90));
  EXPECT_EQ(*ParseDuration("01:02:03"), seconds(3723));
  EXPECT_EQ(*ParseDuration("2-03"), seconds(2 * 86400 + 3 * 3600));
  EXPECT_EQ(*ParseDuration("1-00:00:10"), seconds(86410));
}

TEST(DurationTest, RejectsMalformed) {
  for (const char* bad :
       {"", "abc", "10x", "h", "-5", "1:2:3:4", "0", "0s", "1.5h", "99999999999s"}) {
    auto r = ParseDuration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find("use e.g."), std::string::npos) << r.error().message;
  }
}

// The bound keeps sums from overflowing and FormatDuration's output parseable (found by
// tests/fuzz/duration_fuzz.cpp).
TEST(DurationTest, AtMostHundredYears) {
  EXPECT_EQ(*ParseDuration("36500d"), seconds(36500LL * 86400));
  for (const char* bad : {"36501d", "36500d1s", "999999999d9d", "36501-00"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(DurationTest, Format) {
  EXPECT_EQ(FormatDuration(seconds(0)), "0s");
  EXPECT_EQ(FormatDuration(seconds(3723)), "1h2m3s");
  EXPECT_EQ(FormatDuration(seconds(86400 + 60)), "1d1m");
}

TEST(FormatUtcSecondsTest, DateAndTimeRoundedUpToTheSecond) {
  EXPECT_EQ(FormatUtcSeconds(FromUnixMillis(1'700'000'000'000)), "2023-11-14 22:13:20 UTC");
  EXPECT_EQ(FormatUtcSeconds(FromUnixMillis(1'700'000'000'001)), "2023-11-14 22:13:21 UTC");
  EXPECT_EQ(FormatUtcSeconds(FromUnixMillis(-1)), "1970-01-01 00:00:00 UTC");
}

TEST(FormatRfc3339Test, UtcWithMillis) {
  EXPECT_EQ(FormatRfc3339(FromUnixMillis(1'700'000'000'123)), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(FormatRfc3339(FromUnixMillis(0)), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339(FromUnixMillis(-1)), "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace gf
