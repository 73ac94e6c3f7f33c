#include "cli/history_command.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// 2026-12-01T00:00:00Z
constexpr std::int64_t kDecemberMs = 1'796'083'200'000;
constexpr std::int64_t kHourMs = 3'600'000;
constexpr std::int64_t kMinuteMs = 60'000;

Time December() {
  return FromUnixMillis(kDecemberMs);
}

TEST(HistoryCommandTest, FormatNamesColumnsAndRefusesUnknownOnes) {
  auto fields = ParseHistoryFormat("id,State,gpu_hours");
  ASSERT_TRUE(fields.ok());
  EXPECT_THAT(*fields,
              ElementsAre(HistoryField::kId, HistoryField::kState, HistoryField::kGpuHours));
  EXPECT_GT(ParseHistoryFormat("")->size(), 5u);  // the default columns
  auto bad = ParseHistoryFormat("id,gpuhours");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(bad.error().message, HasSubstr("--format: unknown field 'gpuhours'"));
  EXPECT_THAT(bad.error().message, HasSubstr("gpu_hours"));
}

TEST(HistoryCommandTest, TimesAreUtcDatesNowOrDurationsAgo) {
  const Time now = December() + std::chrono::hours(12);
  EXPECT_EQ(ToUnixMillis(*ParseHistoryTime("2026-12-01", now, "--since")), kDecemberMs);
  EXPECT_EQ(ToUnixMillis(*ParseHistoryTime("2026-12-01T08:30", now, "--since")),
            kDecemberMs + 8 * kHourMs + 30 * kMinuteMs);
  EXPECT_EQ(ToUnixMillis(*ParseHistoryTime("2026-12-01 08:30:15Z", now, "--since")),
            kDecemberMs + 8 * kHourMs + 30 * kMinuteMs + 15'000);
  EXPECT_EQ(*ParseHistoryTime("now", now, "--until"), now);
  EXPECT_EQ(*ParseHistoryTime("2d", now, "--since"), now - std::chrono::hours(48));
  for (const char* bad : {"yesterday", "2026-13-01", "2026-12-01T25:00", "2026-12-01x", ""}) {
    auto t = ParseHistoryTime(bad, now, "--since");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_THAT(t.error().message, HasSubstr("--since: '"));
    EXPECT_THAT(t.error().message, HasSubstr("2026-12-01T08:30:00Z"));
  }
}

TEST(HistoryCommandTest, StatesTakeLongAndSlurmShortNames) {
  EXPECT_EQ(*ParseHistoryStates("cd,F,timeout"), "COMPLETED,FAILED,TIMEOUT");
  auto bad = ParseHistoryStates("DONE");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("--state: unknown state 'DONE'"));
  EXPECT_THAT(bad.error().message, HasSubstr("COMPLETED (CD)"));
}

TEST(HistoryCommandTest, TargetCarriesTheFiltersAndTheCursor) {
  HistoryFlags flags{.since = "2026-12-01", .state = "CD,F", .user = "zoë", .team = "cv"};
  auto target = HistoryTarget(flags, December(), 41, 500);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target,
            "/api/v1/history?limit=500&since_ms=" + std::to_string(kDecemberMs) +
                "&state=COMPLETED%2CFAILED&user=zo%C3%AB&team=cv&cursor=41");
  flags.until = "soon";
  auto bad = HistoryTarget(flags, December(), std::nullopt, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("--until: 'soon'"));
}

nlohmann::json EndedJob() {
  return nlohmann::json{{"id", 12},
                        {"name", "train"},
                        {"user", "ann"},
                        {"state", "COMPLETED"},
                        {"exit_code", 0},
                        {"gpus", 2},
                        {"gpu_uuids", {"GPU-a", "GPU-b"}},
                        {"node", "n1"},
                        {"time_limit_s", 4 * 3600},
                        {"start_time", "2026-12-01T00:00:00.000Z"},
                        {"start_time_ms", kDecemberMs},
                        {"end_time_ms", kDecemberMs + 90 * kMinuteMs},
                        {"usage",
                         {{"samples", 100},
                          {"mean_util_pct", 20.0},
                          {"peak_util_pct", 90},
                          {"peak_memory_mib", 4096},
                          {"energy_kwh", 0.5}}}};
}

TEST(HistoryCommandTest, CellsForTheTableAndForCsv) {
  const nlohmann::json job = EndedJob();
  const std::int64_t now = kDecemberMs + 10 * kHourMs;
  EXPECT_EQ(HistoryCell(job, HistoryField::kElapsed, now, false), "1h30m");
  EXPECT_EQ(HistoryCell(job, HistoryField::kElapsed, now, true), "5400");
  EXPECT_EQ(HistoryCell(job, HistoryField::kGpuHours, now, false), "3");
  EXPECT_EQ(HistoryCell(job, HistoryField::kUtil, now, false), "20.0%");
  EXPECT_EQ(HistoryCell(job, HistoryField::kPeakMem, now, false), "4096 MiB");
  EXPECT_EQ(HistoryCell(job, HistoryField::kPeakMem, now, true), "4096");
  EXPECT_EQ(HistoryCell(job, HistoryField::kEnergy, now, false), "0.500 kWh");
  EXPECT_EQ(HistoryCell(job, HistoryField::kStart, now, false), "2026-12-01T00:00:00.000Z");
  EXPECT_EQ(HistoryCell(job, HistoryField::kEnd, now, false), "-");
  EXPECT_EQ(HistoryCell(job, HistoryField::kEnd, now, true), "");
  EXPECT_EQ(HistoryHeader(HistoryField::kGpuHours, false), "GPU-H");
  EXPECT_EQ(HistoryHeader(HistoryField::kGpuHours, true), "gpu_hours");
  // Running: elapsed to now.
  nlohmann::json running = job;
  running["state"] = "RUNNING";
  running.erase("end_time_ms");
  EXPECT_EQ(HistoryCell(running, HistoryField::kElapsed, kDecemberMs + 60'000, false), "1m");
}

TEST(HistoryCommandTest, EfficiencyShowsHeldVsUsedAndAdvice) {
  const nlohmann::json node = {{"name", "n1"},
                               {"gpus", {{{"uuid", "GPU-a"}, {"memory_mib", 81920}}}}};
  std::ostringstream out;
  PrintEfficiency(EndedJob(), node, kDecemberMs + 10 * kHourMs, out);
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("State:"));
  EXPECT_THAT(text, HasSubstr("COMPLETED  exit code 0"));
  EXPECT_THAT(text, HasSubstr("1h30m of time limit 4h (38 %)"));
  EXPECT_THAT(text, HasSubstr("3 allocated, 0.6 used (mean utilisation 20.0 %)"));
  EXPECT_THAT(text, HasSubstr("peak 4096 MiB of 81920 MiB on the card (5 %)"));
  EXPECT_THAT(text, HasSubstr("used 20 % of its GPUs: ask for fewer (--gpus 1 would do)"));
  EXPECT_THAT(text, Not(HasSubstr("so far")));
  const nlohmann::json figures = EfficiencyJson(EndedJob(), node, kDecemberMs + 10 * kHourMs);
  EXPECT_EQ(figures["gpu_hours_allocated"], 3.0);
  EXPECT_EQ(figures["card_memory_mib"], 81920);
  EXPECT_EQ(figures["running"], false);
  EXPECT_THAT(figures["advice"].get<std::string>(), HasSubstr("--gpus 1 would do"));
  // Without its node's GPUs the card memory is unknown, and said so.
  EXPECT_TRUE(EfficiencyJson(EndedJob(), nlohmann::json::object(), 0)["memory_pct"].is_null());
  // Nothing measured of its host side (an older run): said so, not zero.
  EXPECT_THAT(text, HasSubstr("CPU efficiency:      not measured\n"));
  EXPECT_TRUE(figures["cpu_pct"].is_null());
}

// Its CPU time and peak host memory (issue #24): of what it reserved in `eff`, and as history's
// cpu_time and max_rss columns.
TEST(HistoryCommandTest, HostUsageShowsInEffAndHistory) {
  nlohmann::json job = EndedJob();  // 1h30m
  job["cpus"] = 2;
  job["mem_mib"] = 4096;
  job["host_usage"] = {{"cpu_ms", 3'723'000}, {"peak_memory_kib", 1'258'291}};
  std::ostringstream out;
  PrintEfficiency(job, nlohmann::json::object(), kDecemberMs + 10 * kHourMs, out);
  EXPECT_THAT(out.str(), HasSubstr("CPU efficiency:      1h2m3s of 3h core-time (34 %)\n"));
  EXPECT_THAT(out.str(), HasSubstr("Peak host memory:    1.2 GiB of 4 GiB requested (30 %)\n"));
  const nlohmann::json figures = EfficiencyJson(job, nlohmann::json::object(), 0);
  EXPECT_DOUBLE_EQ(figures["cpu_time_s"].get<double>(), 3723.0);
  EXPECT_DOUBLE_EQ(figures["core_time_s"].get<double>(), 10800.0);
  EXPECT_NEAR(figures["host_memory_pct"].get<double>(), 30.0, 0.1);
  const std::int64_t now = kDecemberMs + 10 * kHourMs;
  EXPECT_EQ(HistoryCell(job, HistoryField::kCpuTime, now, false), "1h2m3s");
  EXPECT_EQ(HistoryCell(job, HistoryField::kCpuTime, now, true), "3723.000");
  EXPECT_EQ(HistoryCell(job, HistoryField::kMaxRss, now, false), "1.2 GiB");
  EXPECT_EQ(HistoryCell(job, HistoryField::kMaxRss, now, true), "1228.8");
  EXPECT_EQ(HistoryCell(EndedJob(), HistoryField::kMaxRss, now, false), "-");
  EXPECT_EQ(HistoryHeader(HistoryField::kMaxRss, false), "MAXRSS");
  EXPECT_EQ(HistoryHeader(HistoryField::kCpuTime, true), "cpu_time");
}

}  // namespace
}  // namespace gf
