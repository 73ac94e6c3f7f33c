// UsageBook (usage_book.h) on its own: no controller, the running jobs given as spans, the
// store only where Load reads it.
#include "controller/usage_book.h"

#include <filesystem>
#include <numbers>
#include <tuple>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

constexpr double kHourS = 3600;

// 2026-04-01T00:00:00Z and 2026-05-01T00:00:00Z, unix ms.
const Time kApril = FromUnixMillis(1'775'001'600'000);
const Time kMay = FromUnixMillis(1'777'593'600'000);

// Team cv (alice's) may use 2 GPU-hours a month; nlp (bob's) has no budget.
UsageBookOptions CvBudget() {
  UsageBookOptions options;
  options.policy.fair_share.half_life = hours(1);
  options.policy.teams = {TeamPolicy{.name = "cv",
                                     .guaranteed_gpus = 4,
                                     .max_gpus = 6,
                                     .gpu_hour_budget = 2.0,
                                     .over_budget = OverBudget::kHold},
                          TeamPolicy{.name = "nlp"}};
  options.team_of_user = {{"alice", "cv"}, {"bob", "nlp"}};
  options.energy_price = EnergyPrice{.price_per_kwh = 0.5};
  return options;
}

RunningSpan Span(const std::string& team, const std::string& user, int gpus, Time start) {
  return RunningSpan{.team = team,
                     .user = user,
                     .gpus = static_cast<double>(gpus),
                     .start = start,
                     .held_milli = gpus * kWholeGpuMilli};
}

// A job of `user` in `team` that ran on `gpus` whole GPUs of node n1 from `start`.
Job StartedJob(
    std::int64_t id, const std::string& team, const std::string& user, int gpus, Time start) {
  Job job;
  job.id = JobId(id);
  job.spec.team = team;
  job.owner.user = user;
  job.allocation = Allocation{};
  job.allocation->node = NodeId("n1");
  for (int i = 0; i < gpus; ++i) {
    job.allocation->gpus.emplace_back("GPU-" + std::to_string(i));
  }
  job.start_time = start;
  return job;
}

TEST(UsageBookTest, ABudgetCrossedSinceTheLastFullPassAsksForOne) {
  UsageBook book(CvBudget());
  ASSERT_TRUE(book.HasBudgets());
  book.Advance(kApril, {});
  const std::vector<RunningSpan> running = {Span("cv", "alice", 2, kApril),
                                            Span("nlp", "bob", 8, kApril)};
  book.NoteFullPass(running, kApril);
  // 2 GPUs reach cv's 2 GPU-hours after one hour; nlp, with no budget, never crosses one.
  EXPECT_FALSE(book.BudgetsCrossed(running, kApril + minutes(59)));
  EXPECT_TRUE(book.BudgetsCrossed(running, kApril + minutes(60)));
  // The full pass of that moment sees cv over budget: nothing crossed since.
  book.NoteFullPass(running, kApril + minutes(60));
  EXPECT_FALSE(book.BudgetsCrossed(running, kApril + minutes(61)));

  // The run ends: its record goes to the store batch and still counts in the period.
  Job job = StartedJob(7, "cv", "alice", 2, kApril);
  job.end_time = kApril + minutes(90);
  const UsageRecord record = book.RunEnded(job, 5'000, {"H100"}, kApril + minutes(90));
  EXPECT_EQ(record.job, JobId(7));
  EXPECT_EQ(record.team, "cv");
  EXPECT_EQ(record.gpus, 2);
  EXPECT_DOUBLE_EQ(record.gpu_seconds, 2 * 90 * 60.0);
  EXPECT_EQ(record.energy_mj, 5'000);
  EXPECT_EQ(record.gpu_models, std::vector<std::string>{"H100"});
  EXPECT_FALSE(book.BudgetsCrossed({running[1]}, kApril + minutes(91)));
  EXPECT_DOUBLE_EQ(book.TeamHours({}, kApril + minutes(91)).at("cv"), 3);

  // A new month starts every budget from zero: cv is under again, which a pass must learn.
  book.Advance(kMay, {running[1]});
  EXPECT_EQ(book.CurrentPeriod().start, kMay);
  EXPECT_TRUE(book.BudgetsCrossed({running[1]}, kMay));
}

TEST(UsageBookTest, WithoutBudgetsNothingIsEverCrossed) {
  UsageBookOptions options = CvBudget();
  options.policy.teams[0].gpu_hour_budget.reset();
  UsageBook book(options);
  EXPECT_FALSE(book.HasBudgets());
  book.NoteFullPass({}, kApril);
  EXPECT_FALSE(book.BudgetsCrossed({Span("cv", "alice", 8, kApril)}, kApril + hours(100)));
  // other_teams' budget applies to every team not listed.
  options.policy.other_teams.gpu_hour_budget = 1.0;
  UsageBook others(options);
  EXPECT_TRUE(others.HasBudgets());
  EXPECT_EQ(TeamsOverBudget(options.policy, {{"cv", 5}, {"vision", 1}, {"ml", 0.5}}),
            (std::set<std::string>{"vision"}));
}

// The ledgers decay each GPU-second by its age (half-life 1 h) and weigh it by its GPU model;
// a pass sees them, and the period's GPU-hours, in its snapshot's usage.
TEST(UsageBookTest, DecayedLedgersFeedThePassSnapshot) {
  UsageBookOptions options = CvBudget();
  options.policy.fair_share.model_weights = {{"H100", 2.0}};
  UsageBook book(options);
  ASSERT_TRUE(book.WeighsModels());
  RunningSpan h100 = Span("cv", "alice", 2, kApril);
  h100.gpu_models = {"H100"};
  const std::vector<RunningSpan> running = {h100, Span("nlp", "bob", 1, kApril)};
  book.Advance(kApril, running);
  book.Advance(kApril + hours(1), running);

  const PassUsage usage = book.ForPass(running, kApril + hours(1));
  // The integral of rate x 2^-(age / 1 h) over the last hour: rate x 3600 / ln 2 x (1 - 1/2).
  const double per_gpu = kHourS / std::numbers::ln2 / 2;
  EXPECT_NEAR(usage.teams.at("cv").decayed_gpu_seconds, 2 * 2.0 * per_gpu, 1e-6);
  EXPECT_NEAR(usage.teams.at("nlp").decayed_gpu_seconds, per_gpu, 1e-6);
  EXPECT_NEAR(usage.users.at("alice"), 2 * 2.0 * per_gpu, 1e-6);
  EXPECT_NEAR(usage.users.at("bob"), per_gpu, 1e-6);
  // Budget hours are not weighted: 2 GPUs for an hour are 2 GPU-hours.
  EXPECT_DOUBLE_EQ(usage.teams.at("cv").period_gpu_hours, 2);
  EXPECT_DOUBLE_EQ(usage.teams.at("nlp").period_gpu_hours, 1);

  // An hour with nothing held halves the ledgers.
  book.Advance(kApril + hours(2), {});
  const PassUsage later = book.ForPass({}, kApril + hours(2));
  EXPECT_NEAR(later.teams.at("cv").decayed_gpu_seconds, 2.0 * per_gpu, 1e-6);
  EXPECT_NEAR(later.users.at("bob"), per_gpu / 2, 1e-6);
}

// alice (team cv) sees her team and her own row, with what cv holds and borrows now and what
// is left of its budget; bob's team and row are not hers to see. An operator sees everything.
TEST(UsageBookTest, QuotaForACallerOfOneTeam) {
  UsageBook book(CvBudget());
  const Time now = kApril + hours(2);
  book.Advance(kApril, {});
  Job ended = StartedJob(1, "nlp", "bob", 1, kApril);
  ended.end_time = kApril + hours(1);
  book.RunEnded(ended, 0, {}, ended.end_time.value());
  RunningSpan borrowed = Span("cv", "alice", 1, kApril + hours(1));
  borrowed.borrowed = true;
  borrowed.energy_mj = static_cast<std::int64_t>(kMillijoulesPerKwh);  // 1 kWh
  const std::vector<RunningSpan> running = {Span("cv", "alice", 2, now - minutes(15)), borrowed};

  const QuotaReport mine = book.Quota(TestCaller(1000, "alice"), {"cv"}, running, now);
  EXPECT_EQ(mine.period_start, kApril);
  EXPECT_EQ(mine.period_end, kMay);
  EXPECT_TRUE(mine.quotas_on);
  ASSERT_EQ(mine.teams.size(), 1U);
  const TeamQuota& cv = mine.teams[0];
  EXPECT_EQ(cv.team, "cv");
  EXPECT_TRUE(cv.listed);
  EXPECT_EQ(cv.held_milli, 3000);
  EXPECT_EQ(cv.borrowed_milli, 1000);
  EXPECT_DOUBLE_EQ(cv.used_gpu_hours, 0.5 + 1);  // 2 GPUs x 15 min, 1 GPU x 1 h
  EXPECT_EQ(cv.budget_gpu_hours, 2.0);
  EXPECT_DOUBLE_EQ(cv.left_gpu_hours.value(), 0.5);
  EXPECT_EQ(cv.guaranteed_gpus, 4);
  EXPECT_EQ(cv.max_gpus, 6);
  EXPECT_EQ(cv.over_budget, "hold");
  EXPECT_FALSE(cv.out_of_budget);  // 1.5 of 2 used
  EXPECT_DOUBLE_EQ(cv.energy.kwh, 1);
  EXPECT_DOUBLE_EQ(cv.energy.cost.value(), 0.5);
  ASSERT_EQ(mine.users.size(), 1U);
  EXPECT_EQ(mine.users[0].user, "alice");
  EXPECT_DOUBLE_EQ(mine.users[0].used_gpu_hours, 1.5);

  // Her job in another team shows that team too; her default team shows without any job.
  const QuotaReport with_job = book.Quota(TestCaller(1000, "alice"), {"nlp"}, running, now);
  EXPECT_EQ(with_job.teams.size(), 2U);
  const QuotaReport idle = book.Quota(TestCaller(1000, "alice"), {}, {}, now);
  ASSERT_EQ(idle.teams.size(), 1U);
  EXPECT_EQ(idle.teams[0].team, "cv");
  EXPECT_TRUE(idle.users.empty());

  const QuotaReport all = book.Quota(TestCaller(0, "root"), {}, running, now);
  ASSERT_EQ(all.teams.size(), 2U);
  EXPECT_EQ(all.teams[1].team, "nlp");
  EXPECT_DOUBLE_EQ(all.teams[1].used_gpu_hours, 1);
  EXPECT_FALSE(all.teams[1].budget_gpu_hours.has_value());
  EXPECT_EQ(all.users.size(), 2U);
}

// Load starts from the store: the period's stored runs count towards the budget and the
// stored runs of the last half-lives seed the ledgers (SeedFairShare's sums).
TEST(UsageBookTest, LoadSeedsThePeriodAndTheLedgersFromTheStore) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gf-usage-book-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auto store = OpenSqliteStore(dir / "state.db");
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  const Time now = kApril + hours(3);
  UsageBook before(CvBudget());
  Job job = StartedJob(1, "cv", "alice", 2, kApril);
  job.end_time = kApril + hours(2);
  const UsageRecord run = before.RunEnded(job, 0, {}, *job.end_time);
  ASSERT_TRUE((*store)->Commit(StoreBatch{.usage = {run}}).ok());

  UsageBook book(CvBudget());
  const std::vector<RunningSpan> running = {Span("nlp", "bob", 1, now - hours(1))};
  ASSERT_TRUE(book.Load(**store, now, running).ok());
  EXPECT_EQ(book.CurrentPeriod().start, kApril);
  EXPECT_DOUBLE_EQ(book.TeamHours(running, now).at("cv"), 4);
  const PassUsage usage = book.ForPass(running, now);
  const FairShareSeed seed = SeedFairShare({run}, running, now, CvBudget().policy.fair_share);
  EXPECT_NEAR(usage.teams.at("cv").decayed_gpu_seconds, seed.teams.at("cv"), 1e-6);
  EXPECT_NEAR(usage.users.at("bob"), seed.users.at("bob"), 1e-6);
  // cv used 4 of its 2 GPU-hours before the restart: over budget from the first pass on.
  book.NoteFullPass(running, now);
  EXPECT_FALSE(book.BudgetsCrossed(running, now));
  std::filesystem::remove_all(dir);
}

// A restart gives the book each active job's earlier runs from their usage records: the ones
// of a job still active, not those of an ended job, nor runs before the oldest active job.
TEST(UsageBookTest, EarlierRunsOfTheActiveJobsComeFromTheirUsageRecords) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gf-earlier-runs-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auto store = OpenSqliteStore(dir / "state.db");
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  UsageBook book(CvBudget());
  std::vector<UsageRecord> runs;
  for (const auto& [id, gpus, start, length] :
       {std::tuple{1, 2, kApril, hours(1)},             // job 1, first run
        std::tuple{1, 2, kApril + hours(2), hours(2)},  // job 1, second run
        std::tuple{2, 4, kApril, hours(1)},             // job 2: ended, no longer active
        std::tuple{3, 1, kApril - hours(30), hours(1)}}) {
    Job job = StartedJob(id, "cv", "alice", gpus, start);
    job.end_time = start + length;
    runs.push_back(book.RunEnded(job, 0, {}, *job.end_time));
  }
  ASSERT_TRUE((*store)->Commit(StoreBatch{.usage = runs}).ok());
  std::map<JobId, Job> active;
  for (const std::int64_t id : {1, 3, 4}) {
    Job job = StartedJob(id, "cv", "alice", 1, kApril);
    job.submit_time = kApril - minutes(5);
    active.emplace(JobId(id), job);
  }
  const Result<std::map<JobId, double>> earlier = EarlierRunsOf(**store, active);
  ASSERT_TRUE(earlier.ok()) << earlier.error().ToString();
  // Job 3's run ended before any active job was submitted: not read. Job 4 has none.
  EXPECT_EQ(*earlier, (std::map<JobId, double>{{JobId(1), 2 * 3 * kHourS}}));
  EXPECT_TRUE(EarlierRunsOf(**store, {}).value().empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gf
