#include "report/report.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/kube_pod.h"
#include "report/recommend.h"

namespace gf {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// A recorded month with known answers (docs/reports.md): November 2026, read on the 3rd.
// n1 has GPUs 0 (g0) and 1 (g1), n2 has GPU 0 (g2), all 80 GiB.
//   day 1: g0 held by job 1 (cv/alice) 8 minutes at 95 %, then 2 free minutes at 0 %;
//          g1 held by job 2 (nlp/bob) 6 minutes at 0 % then 4 at 100 %.
//   day 2: g0 held by job 3 (cv/alice) 10 minutes at 95 %; g2 free 10 minutes, 1 degraded.
// Runs: job 1 8 min, job 2 10 min, job 3 5 min (preempted) then 10 min, job 4 (cv/alice)
// an hour of which falls in the period.
const Time kStart = *ParseMonth("2026-11");
const Time kNow = kStart + days(2);

constexpr std::int64_t kGpuMib = std::int64_t{80} * 1024;

Gpu MakeGpu(int index, const std::string& uuid) {
  Gpu gpu;
  gpu.index = index;
  gpu.uuid = GpuUuid(uuid);
  gpu.model = "H100-80GB";
  gpu.memory_mib = kGpuMib;
  return gpu;
}

Node MakeNode(const std::string& name, std::vector<Gpu> gpus) {
  Node node;
  node.name = NodeId(name);
  node.gpus = std::move(gpus);
  return node;
}

// `count` minutes of `uuid` from `at`, each at `util` %, with `energy_mj` each.
std::vector<GpuMinute> Minutes(const std::string& node,
                               const std::string& uuid,
                               Time at,
                               int count,
                               double util,
                               std::optional<std::int64_t> job,
                               const std::string& team,
                               const std::string& user,
                               std::int64_t memory_mib,
                               std::int64_t energy_mj) {
  std::vector<GpuMinute> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    out.push_back(GpuMinute{.node = NodeId(node),
                            .uuid = GpuUuid(uuid),
                            .minute = at + minutes(i),
                            .job = job ? std::optional<JobId>(JobId(*job)) : std::nullopt,
                            .user = user,
                            .team = team,
                            .samples = 60,
                            .allocated_ms = job ? 60'000 : 0,
                            .util_mean_pct = util,
                            .util_max_pct = static_cast<int>(util),
                            .memory_used_max_mib = memory_mib,
                            .energy_mj = energy_mj});
  }
  return out;
}

ReportRun Run(std::int64_t job,
              const std::string& team,
              const std::string& user,
              const std::string& priority,
              Time start,
              Time end,
              double in_period_s,
              std::int64_t energy_mj) {
  return ReportRun{
      .run = UsageRecord{.job = JobId(job),
                         .start = start,
                         .end = end,
                         .team = team,
                         .user = user,
                         .priority = priority,
                         .gpus = 1,
                         .gpu_seconds = std::chrono::duration<double>(end - start).count()},
      .gpu_seconds = in_period_s,
      .energy_mj = energy_mj};
}

Job MakeJob(std::int64_t id,
            const std::string& name,
            const std::string& team,
            const std::string& user,
            Time submit) {
  Job job;
  job.id = JobId(id);
  job.spec.name = name;
  job.spec.team = team;
  job.owner.user = user;
  job.submit_time = submit;
  return job;
}

Event MakeEvent(Time at,
                std::optional<std::int64_t> job,
                const std::string& kind,
                const std::string& actor,
                const std::string& message) {
  return Event{.time = at,
               .job = job ? std::optional<JobId>(JobId(*job)) : std::nullopt,
               .kind = kind,
               .actor = actor,
               .message = message};
}

ReportInput Scenario() {
  ReportInput in;
  in.context = ReportContext{
      .period = "2026-11",
      .start = kStart,
      .end = *ParseMonth("2026-12"),
      .now = kNow,
      .nodes = {MakeNode("n1", {MakeGpu(0, "g0"), MakeGpu(1, "g1")}),
                MakeNode("n2", {MakeGpu(0, "g2")})},
      .teams = {TeamAllowance{.team = "cv", .guaranteed_gpus = 1, .budget_gpu_hours = 1.0},
                TeamAllowance{.team = "ml", .guaranteed_gpus = 2},
                TeamAllowance{.team = "nlp"}},
      .price = EnergyPrice{.price_per_kwh = 0.5, .currency = "EUR", .co2_g_per_kwh = 400}};
  auto add = [&](std::vector<GpuMinute> more) {
    in.minutes.insert(in.minutes.end(), more.begin(), more.end());
  };
  const Time day2 = kStart + days(1);
  add(Minutes("n1", "g0", kStart, 8, 95, 1, "cv", "alice", 4096, 60'000));
  add(Minutes("n1", "g0", kStart + minutes(8), 2, 0, std::nullopt, "", "", 0, 60'000));
  add(Minutes("n1", "g1", kStart, 6, 0, 2, "nlp", "bob", 40'000, 30'000));
  add(Minutes("n1", "g1", kStart + minutes(6), 4, 100, 2, "nlp", "bob", 40'000, 30'000));
  add(Minutes("n1", "g0", day2, 10, 95, 3, "cv", "alice", 8192, 60'000));
  add(Minutes("n2", "g2", day2, 10, 0, std::nullopt, "", "", 0, 10'000));
  in.minutes.back().health = GpuHealth::kDegraded;
  // Outside the period: ignored.
  add(Minutes("n1", "g0", kStart - minutes(5), 5, 100, 4, "cv", "alice", 1, 1));

  in.runs = {
      Run(1, "cv", "alice", "normal", kStart, kStart + minutes(8), 480, 480'000),
      Run(2, "nlp", "bob", "high", kStart, kStart + minutes(10), 600, 600'000),
      Run(3,
          "cv",
          "alice",
          "normal",
          kStart + hours(12),
          kStart + hours(12) + minutes(5),
          300,
          300'000),
      Run(3, "cv", "alice", "normal", day2, day2 + minutes(10), 600, 600'000),
      Run(4, "cv", "alice", "normal", kStart - hours(1), kStart + hours(1), 3600, 1'000'000),
  };
  in.jobs = {MakeJob(1, "train-a", "cv", "alice", kStart - minutes(10)),
             MakeJob(2, "<script>alert(1)</script>", "nlp", "bob", kStart - minutes(1)),
             MakeJob(3, "train-c", "cv", "alice", kStart + hours(11)),
             MakeJob(4, "train-d", "cv", "alice", kStart - hours(2))};
  in.events = {
      MakeEvent(kStart - hours(1), 4, "preempt", "scheduler", "outside the period"),
      MakeEvent(kStart, 1, "submit", "alice", "not counted"),
      MakeEvent(kStart + minutes(8), 1, "state", "controller", "RUNNING -> TIMEOUT: time limit"),
      MakeEvent(kStart + minutes(9), 2, "idle_reap", "reaper", "idle 30m: cancelling"),
      MakeEvent(kStart + minutes(10), 2, "state", "agent:n1", "RUNNING -> FAILED: exit code 1"),
      MakeEvent(kStart + minutes(50), 4, "gpu_failover", "controller", "GPU failed: SIGTERM"),
      MakeEvent(kStart + hours(1), 4, "state", "agent:n1", "RUNNING -> NODE_FAIL: GPU failure"),
      MakeEvent(kStart + hours(12), 3, "preempt", "scheduler", "for job 9: SIGTERM"),
      MakeEvent(
          day2, std::nullopt, "gpu_health", "agent:n2", "GPU 0 (g2) on n2: ok -> degraded: 91 C"),
      MakeEvent(day2 + minutes(1),
                std::nullopt,
                "gpu_health",
                "agent:n2",
                "GPU 0 (g2) on n2: degraded -> ok"),
      MakeEvent(day2 + minutes(2),
                std::nullopt,
                "gpu_health",
                "root",
                "resume GPU 0 (was failed: XID 79 -> reset)"),
  };
  return in;
}

const TeamFigures& TeamRow(const Report& r, const std::string& team) {
  for (const TeamFigures& row : r.teams) {
    if (row.team == team) {
      return row;
    }
  }
  throw std::runtime_error("no team row " + team);
}

TEST(ReportTest, ParsesMonths) {
  ASSERT_TRUE(ParseMonth("2026-02").ok());
  EXPECT_EQ(MonthLabel(*ParseMonth("2026-02")), "2026-02");
  EXPECT_EQ(ToUnixMillis(*ParseMonth("1970-01")), 0);
  for (const char* bad : {"2026-13", "2026-00", "26-11", "2026/11", "2026-1", "abcd-ef", ""}) {
    auto parsed = ParseMonth(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().message.find("use YYYY-MM"), std::string::npos);
  }
}

// A run that starts and ends within minutes: the minutes count the part of their samples the
// job held the GPU, so the cluster's GPU-hours are the run's, as the team's are. By hand: the job
// holds g0 from 0:30 to 2:00 (90 s); minute 0 is held for 30 s (mean utilisation 50 %: 100 %
// while held), minute 1 whole, minute 2 not at all.
TEST(ReportTest, AMinuteHeldPartOfTheTimeCountsForItsPart) {
  ReportInput in;
  in.context = ReportContext{.period = "2026-11",
                             .start = kStart,
                             .end = *ParseMonth("2026-12"),
                             .now = kStart + minutes(3),
                             .nodes = {MakeNode("n1", {MakeGpu(0, "g0")})}};
  in.minutes = Minutes("n1", "g0", kStart, 3, 100, 1, "cv", "alice", 4096, 0);
  in.minutes[0].allocated_ms = 30'000;
  in.minutes[0].util_mean_pct = 50;
  in.minutes[2] = Minutes("n1", "g0", kStart + minutes(2), 1, 0, std::nullopt, "", "", 0, 0)[0];
  in.runs = {gf::Run(1, "cv", "alice", "normal", kStart + seconds(30), kStart + minutes(2), 90, 0)};
  in.jobs = {MakeJob(1, "train", "cv", "alice", kStart)};
  const Report r = ComputeReport(in);
  const MinuteFigures& c = r.cluster.figures;
  EXPECT_DOUBLE_EQ(c.minutes_allocated, 1.5);
  EXPECT_DOUBLE_EQ(c.gpu_hours_allocated, 90.0 / 3600);
  EXPECT_DOUBLE_EQ(TeamRow(r, "cv").usage.gpu_hours_allocated, c.gpu_hours_allocated);
  EXPECT_DOUBLE_EQ(c.allocated_pct, 50);  // 1.5 of 3 minutes
  // Utilisation while held: minute 0 weighs half (50 %), minute 1 whole (100 %).
  EXPECT_DOUBLE_EQ(c.used_pct, (0.5 * 50 + 100) / 1.5);
}

TEST(ReportTest, ClusterNodeAndDayUtilisation) {
  const Report r = ComputeReport(Scenario());
  EXPECT_EQ(r.period, "2026-11");
  EXPECT_EQ(r.covered_until, kNow);
  EXPECT_TRUE(r.all_teams);
  EXPECT_EQ(r.cluster.nodes, 2);
  EXPECT_EQ(r.cluster.gpus, 3);
  const MinuteFigures& c = r.cluster.figures;
  EXPECT_EQ(c.minutes_observed, 40);
  EXPECT_EQ(c.minutes_allocated, 28);
  EXPECT_EQ(c.minutes_idle_allocated, 6);
  EXPECT_EQ(c.minutes_unhealthy, 1);
  EXPECT_DOUBLE_EQ(c.allocated_pct, 70);
  EXPECT_DOUBLE_EQ(c.used_pct, 2110.0 / 28);  // (8 + 10) x 95 + 4 x 100 over 28 minutes
  EXPECT_DOUBLE_EQ(c.util_pct, 2110.0 / 40);
  EXPECT_DOUBLE_EQ(c.idle_pct, 100.0 * (12 + 6) / 40);
  EXPECT_DOUBLE_EQ(c.gpu_hours_allocated, 28.0 / 60);
  EXPECT_DOUBLE_EQ(c.gpu_hours_used, 28.0 / 60 * (2110.0 / 28) / 100);
  EXPECT_DOUBLE_EQ(c.gpu_hours_idle, 0.1);
  EXPECT_EQ(c.energy.energy_mj, 20 * 60'000 + 10 * 30'000 + 10 * 10'000);
  ASSERT_TRUE(c.energy.cost);
  EXPECT_DOUBLE_EQ(*c.energy.cost, 1.6e6 / kMillijoulesPerKwh * 0.5);

  ASSERT_EQ(r.nodes.size(), 2U);
  EXPECT_EQ(r.nodes[0].node, "n1");
  EXPECT_EQ(r.nodes[0].gpus, 2);
  EXPECT_EQ(r.nodes[0].figures.minutes_observed, 30);
  EXPECT_EQ(r.nodes[0].figures.minutes_allocated, 28);
  EXPECT_EQ(r.nodes[1].figures.minutes_allocated, 0);
  EXPECT_DOUBLE_EQ(r.nodes[1].figures.idle_pct, 100);

  ASSERT_EQ(r.days.size(), 2U);  // the 1st and the 2nd: covered until the 3rd
  EXPECT_EQ(r.days[0].day, "2026-11-01");
  EXPECT_DOUBLE_EQ(r.days[0].figures.allocated_pct, 90);
  EXPECT_DOUBLE_EQ(r.days[0].figures.used_pct, 1160.0 / 18);
  EXPECT_EQ(r.days[1].day, "2026-11-02");
  EXPECT_DOUBLE_EQ(r.days[1].figures.allocated_pct, 50);
  EXPECT_DOUBLE_EQ(r.days[1].figures.used_pct, 95);
}

TEST(ReportTest, IdleOverloadedAndUnhealthyGpus) {
  const Report r = ComputeReport(Scenario());
  ASSERT_EQ(r.gpus.size(), 3U);
  const GpuFigures& g0 = r.gpus[0];
  EXPECT_EQ(g0.uuid, "g0");
  EXPECT_EQ(g0.model, "H100-80GB");
  EXPECT_DOUBLE_EQ(g0.figures.allocated_pct, 90);
  EXPECT_DOUBLE_EQ(g0.figures.used_pct, 95);
  EXPECT_TRUE(g0.overloaded);
  EXPECT_FALSE(g0.idle);
  const GpuFigures& g1 = r.gpus[1];
  EXPECT_EQ(g1.index, 1);
  EXPECT_DOUBLE_EQ(g1.figures.used_pct, 40);
  EXPECT_DOUBLE_EQ(g1.figures.idle_pct, 60);
  EXPECT_FALSE(g1.idle || g1.overloaded || g1.unhealthy);
  const GpuFigures& g2 = r.gpus[2];
  EXPECT_EQ(g2.node, "n2");
  EXPECT_TRUE(g2.idle);
  EXPECT_TRUE(g2.unhealthy);  // 1 of 10 minutes degraded
  EXPECT_FALSE(g2.overloaded);
  EXPECT_EQ(g2.figures.energy.energy_mj, 100'000);
}

TEST(ReportTest, TeamsAndUsersAllocatedVsUsed) {
  const Report r = ComputeReport(Scenario());
  ASSERT_EQ(r.teams.size(), 3U);  // cv, ml (configured, unused), nlp
  const TeamFigures& cv = TeamRow(r, "cv");
  const double cv_hours = (480.0 + 300 + 600 + 3600) / 3600;
  EXPECT_EQ(cv.usage.jobs, 3);
  EXPECT_DOUBLE_EQ(cv.usage.gpu_hours_allocated, cv_hours);
  EXPECT_EQ(cv.usage.minutes_allocated, 8 + 10);  // job 1's and job 3's sampled minutes
  EXPECT_DOUBLE_EQ(cv.usage.mean_util_pct, 95);
  EXPECT_DOUBLE_EQ(cv.usage.gpu_hours_used, cv_hours * 0.95);
  EXPECT_DOUBLE_EQ(cv.usage.gpu_hours_idle, 0);
  EXPECT_EQ(cv.usage.energy.energy_mj, 480'000 + 300'000 + 600'000 + 1'000'000);
  EXPECT_DOUBLE_EQ(cv.guaranteed_gpu_hours, 48);
  ASSERT_TRUE(cv.guarantee_used_pct);
  EXPECT_DOUBLE_EQ(*cv.guarantee_used_pct, 100.0 * cv_hours / 48);
  ASSERT_TRUE(cv.budget_used_pct);
  EXPECT_DOUBLE_EQ(*cv.budget_used_pct, 100.0 * cv_hours);
  EXPECT_EQ(cv.events.preemptions, 1);  // the one before the period is not counted
  EXPECT_EQ(cv.events.timeouts, 1);
  EXPECT_EQ(cv.events.node_failures, 1);
  EXPECT_EQ(cv.events.gpu_failovers, 1);
  EXPECT_EQ(cv.events.failed, 0);

  const TeamFigures& ml = TeamRow(r, "ml");
  EXPECT_EQ(ml.usage.jobs, 0);
  EXPECT_EQ(ml.usage.minutes_allocated, 0);
  EXPECT_DOUBLE_EQ(ml.guaranteed_gpu_hours, 96);
  ASSERT_TRUE(ml.guarantee_used_pct);
  EXPECT_DOUBLE_EQ(*ml.guarantee_used_pct, 0);
  EXPECT_FALSE(ml.budget_used_pct);

  const TeamFigures& nlp = TeamRow(r, "nlp");
  EXPECT_DOUBLE_EQ(nlp.usage.gpu_hours_allocated, 600.0 / 3600);
  EXPECT_EQ(nlp.usage.minutes_allocated, 10);
  EXPECT_DOUBLE_EQ(nlp.usage.mean_util_pct, 40);
  EXPECT_DOUBLE_EQ(nlp.usage.gpu_hours_idle, 0.1);
  EXPECT_FALSE(nlp.guarantee_used_pct);
  EXPECT_EQ(nlp.events.failed, 1);
  EXPECT_EQ(nlp.events.idle_reaps, 1);

  ASSERT_EQ(r.users.size(), 2U);
  EXPECT_EQ(r.users[0].user, "alice");
  EXPECT_EQ(r.users[0].peak_memory_mib, 8192);
  EXPECT_EQ(r.users[0].gpu_memory_mib, kGpuMib);
  EXPECT_EQ(r.users[1].user, "bob");
  EXPECT_DOUBLE_EQ(r.users[1].usage.gpu_hours_used, 600.0 / 3600 * 0.4);

  EXPECT_EQ(r.events.preemptions, 1);
  EXPECT_EQ(r.events.failed, 1);
  EXPECT_EQ(r.events.gpu_faults, 1);  // the recovery and the resume are not faults
  EXPECT_DOUBLE_EQ(r.waste_gpu_hours, 0.1);
}

TEST(ReportTest, WasteJobsAndQueueDelay) {
  const Report r = ComputeReport(Scenario());
  ASSERT_EQ(r.waste_jobs.size(), 1U);
  EXPECT_EQ(r.waste_jobs[0].job, 2);
  EXPECT_EQ(r.waste_jobs[0].name, "<script>alert(1)</script>");
  EXPECT_DOUBLE_EQ(r.waste_jobs[0].gpu_hours_idle, 0.1);
  EXPECT_DOUBLE_EQ(r.waste_jobs[0].idle_pct, 60);

  ASSERT_EQ(r.queue.size(), 2U);
  EXPECT_EQ(r.queue[0].priority, "high");
  EXPECT_EQ(r.queue[0].runs, 1);
  EXPECT_DOUBLE_EQ(r.queue[0].mean_s, 60);
  // normal: job 1 waited 600 s, job 3 3600 s, then (preempted) from 12:05 to the next day:
  // 11 h 55 min. Job 4 started before the period: not counted.
  const QueueFigures& normal = r.queue[1];
  EXPECT_EQ(normal.priority, "normal");
  EXPECT_EQ(normal.runs, 3);
  EXPECT_DOUBLE_EQ(normal.mean_s, (600.0 + 3600 + 42'900) / 3);
  EXPECT_DOUBLE_EQ(normal.p50_s, 3600);
  EXPECT_DOUBLE_EQ(normal.p95_s, 42'900);
  EXPECT_DOUBLE_EQ(normal.max_s, 42'900);
}

TEST(ReportTest, RecommendationsCarryTheirNumbers) {
  const Report r = ComputeReport(Scenario());
  std::vector<std::string> kinds;
  for (const Recommendation& rec : r.recommendations) {
    kinds.push_back(rec.kind + " " + rec.subject);
  }
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"overloaded_gpu n1/0",
                                      "idle_gpu n2/0",
                                      "unhealthy_gpu n2/0",
                                      "over_budget team cv",
                                      "low_team_use team nlp",
                                      "share_gpus user alice",
                                      "waste user bob",
                                      // Two days of at most a GPU or two wanted, of 3.
                                      "capacity_spare cluster"}));
  const auto message = [&](std::size_t i) {
    return r.recommendations[i].message;
  };
  EXPECT_NE(message(1).find("idle 100 % of the time it was observed"), std::string::npos)
      << message(1);
  EXPECT_NE(message(3).find("138 % of its 1 GPU-h budget"), std::string::npos) << message(3);
  EXPECT_NE(message(4).find("team nlp used 40 %"), std::string::npos) << message(4);
  EXPECT_NE(message(5).find("user alice's 3 jobs peaked at 8.0 GiB of 80.0 GiB GPUs"),
            std::string::npos)
      << message(5);
  EXPECT_NE(message(5).find("--gpu-mem 12G"), std::string::npos) << message(5);
  EXPECT_NE(message(6).find("idle for 0.1 GPU-h (60 %"), std::string::npos) << message(6);
  EXPECT_NE(message(7).find("of the cluster's 3 GPUs over the next 7 days"), std::string::npos)
      << message(7);
  EXPECT_FALSE(r.recommendations[4].figures.empty());
}

// Issue #24: "used 565 % of its 0.0 GPU-h budget": a small budget kept one decimal
// (core/gpu_hours.h now keeps up to four).
TEST(ReportTest, SmallBudgetsKeepTheirDigits) {
  Report report;
  report.teams = {TeamFigures{.team = "cv",
                              .usage = UsageFigures{.jobs = 1, .gpu_hours_allocated = 0.00566},
                              .budget_gpu_hours = 0.001,
                              .budget_used_pct = 565}};
  const std::vector<Recommendation> advice = Recommend(report);
  ASSERT_EQ(advice.size(), 1U);
  EXPECT_EQ(advice[0].message.rfind(
                "team cv used 565 % of its 0.001 GPU-h budget (0.0057 GPU-h): raise", 0),
            0U)
      << advice[0].message;
}

TEST(ReportTest, SuggestedGpuMemHasHeadroom) {
  EXPECT_EQ(SuggestedGpuMem(std::int64_t{12} * 1024), "16G");
  EXPECT_EQ(SuggestedGpuMem(std::int64_t{13} * 1024), "20G");
  EXPECT_EQ(SuggestedGpuMem(100), "4G");
}

// A user sees their own teams' figures and only their own rows and jobs.
TEST(ReportTest, UserScopeHidesOtherTeamsAndUsers) {
  ReportInput in = Scenario();
  in.scope = ReportScope{.teams = std::set<std::string>{"nlp"}, .user = "bob"};
  const Report r = ComputeReport(in);
  EXPECT_FALSE(r.all_teams);
  EXPECT_EQ(r.cluster.figures.minutes_observed, 40);  // the cluster is everyone's
  ASSERT_EQ(r.teams.size(), 1U);
  EXPECT_EQ(r.teams[0].team, "nlp");
  ASSERT_EQ(r.users.size(), 1U);
  EXPECT_EQ(r.users[0].user, "bob");
  ASSERT_EQ(r.queue.size(), 1U);
  EXPECT_EQ(r.queue[0].priority, "high");
  EXPECT_EQ(r.events.preemptions, 0);
  EXPECT_EQ(r.events.failed, 1);
  EXPECT_EQ(r.events.gpu_faults, 1);
  ASSERT_EQ(r.waste_jobs.size(), 1U);
  for (const Recommendation& rec : r.recommendations) {
    EXPECT_EQ(rec.subject.find("alice"), std::string::npos);
    EXPECT_EQ(rec.subject.find("cv"), std::string::npos);
  }

  in.scope = ReportScope{.teams = std::set<std::string>{"nlp"}, .user = "carol"};
  const Report carol = ComputeReport(in);
  EXPECT_TRUE(carol.users.empty());
  EXPECT_TRUE(carol.waste_jobs.empty());  // bob's job is not carol's to see
  ASSERT_EQ(carol.teams.size(), 1U);      // but the team's totals are
  EXPECT_DOUBLE_EQ(carol.teams[0].usage.gpu_hours_allocated, 600.0 / 3600);
}

// Kubernetes mode: pods' jobs summed by their namespace and the workload the server named;
// other jobs count to none, and a reader sees only the pods they may see.
TEST(ReportTest, PodsAreSummedByWorkload) {
  ReportInput in = Scenario();
  const auto pod = [](std::int64_t id, const std::string& name, const std::string& workload) {
    Job job = MakeJob(id, name, "vision", "system:serviceaccount:vision:trainer", kStart);
    job.spec.env = KubePodJobEnv(KubePod{
        .uid = "0000000000" + std::to_string(id) + "-x", .pod_namespace = "vision", .name = name});
    if (!workload.empty()) {
      SetEnvValue(job.spec.env, kPodWorkloadEnv, workload);
    }
    return job;
  };
  const std::string sa = "system:serviceaccount:vision:trainer";
  in.jobs.push_back(pod(11, "train-7f9c-a", "Deployment/train"));
  in.jobs.push_back(pod(12, "train-7f9c-b", "Deployment/train"));
  in.jobs.push_back(pod(13, "scratch", ""));  // no API-server watch: owner not known
  in.runs.push_back(
      gf::Run(11, "vision", sa, "kubernetes", kStart, kStart + hours(2), 7200, 7'000));
  in.runs.push_back(
      gf::Run(12, "vision", sa, "kubernetes", kStart, kStart + hours(1), 3600, 3'000));
  in.runs.push_back(
      gf::Run(13, "vision", sa, "kubernetes", kStart, kStart + hours(1), 1800, 1'000));
  const auto add = [&in](std::vector<GpuMinute> more) {
    in.minutes.insert(in.minutes.end(), more.begin(), more.end());
  };
  add(Minutes("n2", "g2", kStart + days(2), 4, 80, 11, "vision", sa, 1024, 1'000));
  add(Minutes("n2", "g2", kStart + days(2) + minutes(4), 4, 0, 12, "vision", sa, 1024, 1'000));

  const Report r = ComputeReport(in);
  ASSERT_EQ(r.workloads.size(), 2U);                // jobs 1-4 are not pods
  const WorkloadFigures& unknown = r.workloads[0];  // "" sorts first
  EXPECT_EQ(unknown.team, "vision");
  EXPECT_EQ(unknown.workload, "");
  EXPECT_EQ(unknown.usage.jobs, 1);
  EXPECT_DOUBLE_EQ(unknown.usage.gpu_hours_allocated, 0.5);
  const WorkloadFigures& train = r.workloads[1];
  EXPECT_EQ(train.workload, "Deployment/train");
  EXPECT_EQ(train.usage.jobs, 2);
  EXPECT_DOUBLE_EQ(train.usage.gpu_hours_allocated, 3.0);
  EXPECT_EQ(train.usage.minutes_allocated, 8);      // both pods' sampled minutes
  EXPECT_DOUBLE_EQ(train.usage.mean_util_pct, 40);  // 4 at 80 %, 4 at 0 %
  EXPECT_DOUBLE_EQ(train.usage.gpu_hours_used, 3.0 * 0.4);
  EXPECT_EQ(train.usage.energy.energy_mj, 10'000);
  // The namespace's team row counts the same pods.
  EXPECT_DOUBLE_EQ(TeamRow(r, "vision").usage.gpu_hours_allocated, 3.5);

  in.scope = ReportScope{.teams = std::set<std::string>{"nlp"}, .user = "bob"};
  EXPECT_TRUE(ComputeReport(in).workloads.empty());  // not bob's namespace
}

TEST(ReportTest, TeamFilterForAnOperator) {
  ReportInput in = Scenario();
  in.scope = ReportScope{.teams = std::set<std::string>{"cv"}, .team_filter = "cv"};
  const Report r = ComputeReport(in);
  ASSERT_EQ(r.teams.size(), 1U);
  EXPECT_EQ(r.team_filter, "cv");
  ASSERT_EQ(r.users.size(), 1U);
  EXPECT_EQ(r.users[0].user, "alice");
  EXPECT_TRUE(r.waste_jobs.empty());
  EXPECT_DOUBLE_EQ(r.waste_gpu_hours, 0);
}

// Paging: the same input in pieces gives the same report.
TEST(ReportTest, BuilderTakesPages) {
  const ReportInput in = Scenario();
  ReportBuilder builder(in.context);
  for (const GpuMinute& minute : in.minutes) {
    builder.AddMinutes({minute});
  }
  builder.AddRuns({in.runs.begin(), in.runs.begin() + 2});
  builder.AddRuns({in.runs.begin() + 2, in.runs.end()});
  builder.AddEvents(in.events);
  const std::set<JobId> wanted = builder.JobsWanted();
  EXPECT_EQ(wanted, (std::set<JobId>{JobId(1), JobId(2), JobId(3), JobId(4)}));
  builder.AddJobs(in.jobs);
  EXPECT_TRUE(builder.JobsWanted().empty());
  const Report paged = builder.Finish({});
  const Report whole = ComputeReport(in);
  EXPECT_EQ(paged.queue.size(), whole.queue.size());
  EXPECT_DOUBLE_EQ(paged.cluster.figures.used_pct, whole.cluster.figures.used_pct);
  EXPECT_EQ(paged.recommendations.size(), whole.recommendations.size());
}

TEST(ReportTest, EmptyPeriodHasNoNaNs) {
  ReportInput in = Scenario();
  in.minutes.clear();
  in.runs.clear();
  in.events.clear();
  const Report r = ComputeReport(in);
  EXPECT_EQ(r.cluster.figures.minutes_observed, 0);
  EXPECT_DOUBLE_EQ(r.cluster.figures.used_pct, 0);
  EXPECT_DOUBLE_EQ(r.cluster.figures.idle_pct, 0);
  EXPECT_TRUE(r.queue.empty());
  EXPECT_TRUE(r.recommendations.empty());
  EXPECT_EQ(r.gpus.size(), 3U);  // the inventory, with nothing observed
  EXPECT_FALSE(r.gpus[0].idle);
}

// The capacity advice (issue #22): two days of 10 GPUs wanted every hour forecast 10 for the
// next week (the hours of the week seen, times a trend of 1; the others, the recent level).
TEST(ReportTest, CapacityAdviceFromTheForecastDemand) {
  const std::vector<double> steady(48, 10.0);
  const std::optional<Recommendation> short_of = CapacityAdvice(steady, kStart, 8);
  ASSERT_TRUE(short_of.has_value());
  EXPECT_EQ(short_of->kind, "capacity_short");
  EXPECT_NE(short_of->message.find("forecast to reach 10 GPUs"), std::string::npos)
      << short_of->message;
  EXPECT_NE(short_of->message.find("add about 2 GPUs"), std::string::npos) << short_of->message;
  const std::optional<Recommendation> spare = CapacityAdvice(steady, kStart, 32);  // 10 < 16
  ASSERT_TRUE(spare.has_value());
  EXPECT_EQ(spare->kind, "capacity_spare");
  EXPECT_NE(spare->message.find("at most 10 of the cluster's 32 GPUs"), std::string::npos)
      << spare->message;
  EXPECT_FALSE(CapacityAdvice(steady, kStart, 16).has_value());  // within bounds
  EXPECT_FALSE(CapacityAdvice(std::vector<double>(23, 10.0), kStart, 8).has_value());  // < a day
  EXPECT_FALSE(CapacityAdvice(std::vector<double>(48, 0.0), kStart, 8).has_value());   // no demand
}

}  // namespace
}  // namespace gf
