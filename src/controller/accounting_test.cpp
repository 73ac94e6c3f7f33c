#include "controller/accounting.h"

#include <cmath>

#include <gtest/gtest.h>

#include "scheduler/ordering/usage_ledger.h"

namespace gf {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr double kHourS = 3600;

// 2026-03-01T00:00:00Z and 2026-04-01T00:00:00Z, unix ms.
const Time kMarch = FromUnixMillis(1'772'323'200'000);
const Time kApril = FromUnixMillis(1'775'001'600'000);

UsageRecord RunOf(
    const std::string& team, const std::string& user, int gpus, Time start, Time end) {
  return UsageRecord{.job = JobId(1),
                     .start = start,
                     .end = end,
                     .team = team,
                     .user = user,
                     .gpus = gpus,
                     .gpu_seconds = OverlapGpuSeconds(start, end, gpus, start, end)};
}

TEST(AccountingTest, MonthOfIsTheUtcCalendarMonth) {
  EXPECT_EQ(MonthOf(kMarch), (Period{.start = kMarch, .end = kApril}));
  EXPECT_EQ(MonthOf(kApril - Millis(1)), (Period{.start = kMarch, .end = kApril}));
  EXPECT_EQ(MonthOf(kApril).start, kApril);
  // December rolls into the next year; February 2028 has 29 days.
  const Period december = MonthOf(FromUnixMillis(1'798'675'200'000));  // 2026-12-31T00:00Z
  EXPECT_EQ(ToUnixMillis(december.start), 1'796'083'200'000);          // 2026-12-01
  EXPECT_EQ(ToUnixMillis(december.end), 1'798'761'600'000);            // 2027-01-01
  const Period february = MonthOf(FromUnixMillis(1'835'481'600'000));  // 2028-03-01
  EXPECT_EQ(ToUnixMillis(february.start), 1'835'481'600'000);
  EXPECT_EQ(february.start - MonthOf(february.start - Millis(1)).start, hours(24 * 29));
  // Before 1970 the month is still the one that holds the instant.
  EXPECT_EQ(ToUnixMillis(MonthOf(FromUnixMillis(-1)).start), -31 * 24 * 3'600'000LL);
}

TEST(AccountingTest, ClippingCountsOnlyThePartInsideThePeriod) {
  // 4 GPUs from one hour before April to one hour after: half in each month.
  const UsageRecord crossing = RunOf("cv", "ana", 4, kApril - hours(1), kApril + hours(1));
  EXPECT_DOUBLE_EQ(ClippedGpuSeconds(crossing, kMarch, kApril), 4 * kHourS);
  EXPECT_DOUBLE_EQ(ClippedGpuSeconds(crossing, kApril, kApril + hours(24 * 30)), 4 * kHourS);
  EXPECT_DOUBLE_EQ(ClippedGpuSeconds(crossing, kApril + hours(2), kApril + hours(3)), 0);
  // A zero-length run counts whole when it lies in [from, to), which is half-open.
  UsageRecord instant = RunOf("cv", "ana", 1, kApril, kApril);
  instant.gpu_seconds = 5;
  EXPECT_DOUBLE_EQ(ClippedGpuSeconds(instant, kApril, kApril + hours(1)), 5);
  EXPECT_DOUBLE_EQ(ClippedGpuSeconds(instant, kMarch, kApril), 0);
}

TEST(AccountingTest, PeriodHoursAddStoredEndedAndRunningJobs) {
  Accounting accounting;
  const Time now = kApril + hours(10);
  accounting.Reset(now, {UsageSum{.team = "cv", .user = "ana", .gpu_seconds = 2 * kHourS}});
  // A run that started in March and ended now counts its April part: 10 h x 2 GPUs.
  accounting.AddRun(RunOf("cv", "bob", 2, kApril - hours(5), now), now);
  // Running since 1 h before April on 3 GPUs: its April part so far is 10 h x 3 GPUs.
  const std::vector<RunningSpan> running = {
      RunningSpan{.team = "cv", .user = "ana", .gpus = 3, .start = kApril - hours(1)},
      RunningSpan{.team = "nlp", .user = "cy", .gpus = 1, .start = now - hours(1)}};
  const auto users = accounting.UserHours(running, now);
  EXPECT_DOUBLE_EQ(users.at({"cv", "ana"}), 2 + 30);
  EXPECT_DOUBLE_EQ(users.at({"cv", "bob"}), 20);
  EXPECT_DOUBLE_EQ(users.at({"nlp", "cy"}), 1);
  const auto teams = accounting.TeamHours(running, now);
  EXPECT_DOUBLE_EQ(teams.at("cv"), 52);
  EXPECT_DOUBLE_EQ(teams.at("nlp"), 1);
}

// Energy is accounted like time: stored sums, ended runs' part inside the period (pro rata to
// time), and running jobs' energy so far, clipped the same way.
TEST(AccountingTest, PeriodEnergyAddsStoredEndedAndRunningJobs) {
  Accounting accounting;
  const Time now = kApril + hours(10);
  accounting.Reset(now, {UsageSum{.team = "cv", .user = "ana", .energy_mj = 7'000}});
  // 15 h, 10 of them in April: two thirds of its 3,000,000 mJ.
  UsageRecord ended = RunOf("cv", "bob", 2, kApril - hours(5), now);
  ended.energy_mj = 3'000'000;
  accounting.AddRun(ended, now);
  const std::vector<RunningSpan> running = {
      RunningSpan{.team = "cv",
                  .user = "ana",
                  .gpus = 3,
                  .start = kApril - hours(10),
                  .energy_mj = 2'000'000},  // half of its 20 h so far in April
      RunningSpan{
          .team = "nlp", .user = "cy", .gpus = 1, .start = now - hours(1), .energy_mj = 360'000}};
  const auto energy = accounting.UserEnergyMj(running, now);
  EXPECT_EQ(energy.at({"cv", "ana"}), 7'000 + 1'000'000);
  EXPECT_EQ(energy.at({"cv", "bob"}), 2'000'000);
  EXPECT_EQ(energy.at({"nlp", "cy"}), 360'000);
  // Zero-length runs count whole inside the range, like their GPU-seconds.
  UsageRecord instant = RunOf("cv", "ana", 1, kApril, kApril);
  instant.energy_mj = 5;
  EXPECT_EQ(ClippedEnergyMj(instant, kApril, kApril + hours(1)), 5);
  EXPECT_EQ(ClippedEnergyMj(instant, kMarch, kApril), 0);
  accounting.Roll(now + hours(24 * 30));  // May starts from nothing
  EXPECT_TRUE(accounting.UserEnergyMj({}, now + hours(24 * 30)).empty());
}

TEST(AccountingTest, ANewPeriodStartsFromZero) {
  Accounting accounting;
  accounting.Reset(kApril - hours(2),
                   {UsageSum{.team = "cv", .user = "ana", .gpu_seconds = 100 * kHourS}});
  EXPECT_EQ(accounting.CurrentPeriod().end, kApril);
  // The run ends after the boundary: only its April hour counts in April.
  const Time now = kApril + hours(1);
  accounting.AddRun(RunOf("cv", "ana", 1, kApril - hours(1), now), now);
  EXPECT_EQ(accounting.CurrentPeriod().start, kApril);
  EXPECT_DOUBLE_EQ(accounting.TeamHours({}, now).at("cv"), 1);
  accounting.Roll(now + hours(24 * 30));  // May
  EXPECT_TRUE(accounting.TeamHours({}, now + hours(24 * 30)).empty());
}

// The seed is what a ledger that ran all along would hold: a restart keeps fair share.
// [scheduler.model_weights]: a GPU-second on a weighted model counts that many times, in the
// seed as in the ledger, matched ignoring case; models without a weight count once.
TEST(AccountingTest, ModelWeightsScaleFairShareUsage) {
  const FairSharePolicy fair_share{.half_life = hours(1),
                                   .user_weights = {},
                                   .model_weights = {{"H100-80GB", 2.0}, {"A100-40GB", 0.5}}};
  EXPECT_EQ(ModelWeight(fair_share, "h100-80gb"), 2.0);
  EXPECT_EQ(ModelWeight(fair_share, "V100"), 1.0);
  EXPECT_EQ(ModelWeight(fair_share, std::vector<std::string>{"H100-80GB", "A100-40GB"}), 1.25);
  const Time t0 = kApril;
  UsageLedger users(fair_share.half_life);
  users.Advance(t0, {});
  users.Advance(t0 + minutes(30), {{"ana", 2 * 2.0}, {"bob", 2 * 1.0}});  // 2 H100s; 2 V100s
  UsageRecord h100 = RunOf("cv", "ana", 2, t0, t0 + minutes(30));
  h100.gpu_models = {"H100-80GB"};
  UsageRecord v100 = RunOf("cv", "bob", 2, t0, t0 + minutes(30));
  v100.gpu_models = {"V100"};
  const FairShareSeed seed = SeedFairShare({h100, v100}, {}, t0 + minutes(30), fair_share);
  EXPECT_NEAR(seed.users.at("ana"), users.Sums().at("ana"), 1e-6);
  EXPECT_NEAR(seed.users.at("bob"), users.Sums().at("bob"), 1e-6);
  EXPECT_NEAR(seed.users.at("ana"), 2 * seed.users.at("bob"), 1e-6);
}

TEST(AccountingTest, SeedMatchesALedgerThatNeverStopped) {
  const seconds half_life = hours(1);
  const Time t0 = kApril;
  UsageLedger teams(half_life);
  teams.Advance(t0, {});
  teams.Advance(t0 + minutes(90), {{"cv", 2}});   // cv holds 2 GPUs for 90 minutes
  teams.Advance(t0 + minutes(150), {});           // then nothing for an hour
  teams.Advance(t0 + minutes(180), {{"cv", 1}});  // then one GPU, still running
  const Time now = t0 + minutes(180);
  const FairShareSeed seed = SeedFairShare(
      {RunOf("cv", "ana", 2, t0, t0 + minutes(90))},
      {RunningSpan{.team = "cv", .user = "bob", .gpus = 1, .start = t0 + minutes(150)}},
      now,
      FairSharePolicy{.half_life = half_life});
  EXPECT_NEAR(seed.teams.at("cv"), teams.Sums().at("cv"), 1e-6);
  EXPECT_NEAR(seed.users.at("ana") + seed.users.at("bob"), teams.Sums().at("cv"), 1e-6);
  // 2 GPUs x 90 min that ended 90 min ago (1.5 half-lives) and began 3 half-lives ago: worth
  // between all of it decayed by 3 half-lives and all of it decayed by 1.5.
  EXPECT_LT(seed.users.at("ana"), 2 * 90 * 60.0 * std::exp2(-1.5));
  EXPECT_GT(seed.users.at("ana"), 2 * 90 * 60.0 * std::exp2(-3));
  EXPECT_EQ(SeedHorizon(now, half_life), now - hours(10));
}

TEST(AccountingTest, SeededLedgerDecaysFromTheSeed) {
  UsageLedger ledger(hours(1));
  ledger.Seed(kApril, {{"cv", 1000}});
  ledger.Advance(kApril + hours(1), {});
  EXPECT_NEAR(ledger.Sums().at("cv"), 500, 1e-9);
}

}  // namespace
}  // namespace gf
