#include "cli/explain_view.h"

#include <sstream>

#include <gtest/gtest.h>

#include "api/json_mapping.h"
#include "core/duration.h"

namespace gf {
namespace {

constexpr std::int64_t kNowMs = 1'800'000'000'000;  // 2027-01-15T08:00:00Z

Time At(std::int64_t offset_s) {
  return FromUnixMillis(kNowMs + offset_s * 1000);
}

std::string Render(const Explanation& e) {
  std::ostringstream out;
  PrintExplanation(ExplanationToJson(e), kNowMs, out);
  return out.str();
}

Explanation Waiting() {
  Explanation e;
  e.job = JobId(12);
  e.state = "pending";
  e.outcome = "waits";
  e.reason = "behind job 3 (high priority, needs 4 GPUs)";
  e.position = 2;
  e.waiting = 5;
  e.ahead = {JobAhead{.id = JobId(3),
                      .position = 1,
                      .priority = "high",
                      .team = "vision",
                      .gpus = 4,
                      .action = "reserved",
                      .nodes = {NodeId("gpu01")},
                      .more_nodes = 0,
                      .from = At(3000)}};
  e.priority = PriorityFactors{.priority = "normal",
                               .class_rank = 1,
                               .team = "nlp",
                               .quotas_on = true,
                               .team_below_guarantee = false,
                               .team_usage_gpu_seconds = 7200,
                               .team_weight = 2,
                               .team_share = 3600,
                               .team_rank = 2,
                               .teams_waiting = 3,
                               .user = "alice",
                               .user_usage_gpu_seconds = 0,
                               .user_weight = 1,
                               .user_share = 0,
                               .user_rank = 1,
                               .users_waiting = 1,
                               .submit_time = At(-1500),
                               .waited = Millis(1'500'000)};
  e.quota = QuotaExplanation{.may_start = true,
                             .borrowed = true,
                             .guarantee_right = false,
                             .reason = "",
                             .class_allowed_users = {},
                             .class_max_gpus_per_user = std::nullopt,
                             .quotas_on = true,
                             .team_held_milli = 6000,
                             .team_guaranteed_gpus = 4,
                             .team_max_gpus = 8,
                             .team_budget_gpu_hours = 500,
                             .team_period_gpu_hours = 120.5,
                             .over_budget = "borrow_only",
                             .budget_approved = false};
  e.time_limit = std::chrono::hours(2);
  e.time_limit_source = "requested";
  NodeExplanation busy{
      .node = NodeId("gpu01"),
      .state = "up",
      .verdict = "busy",
      .detail = "2 of 4 matching GPUs free; needs 4 GPUs",
      .gpus = 4,
      .failed = 0,
      .matching = 4,
      .free = 2,
      .givable = 0,
      .models = {"H100"},
      .held = {GpuHold{.index = 0, .kind = "running", .job = JobId(100), .until = At(3000)},
               GpuHold{.index = 1, .kind = "running", .job = JobId(100), .until = At(3000)},
               GpuHold{.index = 2, .kind = "reserved", .job = JobId(3), .until = At(3000)},
               GpuHold{.index = 3, .kind = "reserved", .job = JobId(3), .until = At(3000)}},
      .victims = {VictimCandidate{.job = JobId(100),
                                  .priority = "low",
                                  .borrowed = false,
                                  .may_preempt = false,
                                  .chosen = false,
                                  .why = "protected: ran 5m of the minimum run time 10m"}}};
  NodeExplanation down{.node = NodeId("gpu09"),
                       .state = "down",
                       .verdict = "not_up",
                       .detail = "node is down: it takes no new work",
                       .gpus = 8,
                       .failed = 0,
                       .matching = 0,
                       .free = 0,
                       .givable = 0,
                       .models = {"H100"},
                       .held = {},
                       .victims = {}};
  e.nodes = {busy, down};
  e.nodes_omitted = 30;
  e.nodes_by_verdict = {{"busy", 1}, {"not_up", 1}, {"too_small", 30}};
  return e;
}

TEST(ExplainViewTest, PendingJobInSections) {
  EXPECT_EQ(Render(Waiting()),
            "Job 12: waits\n"
            "  reason          behind job 3 (high priority, needs 4 GPUs)\n"
            "  position        2 of 5 waiting (scheduling order)\n"
            "\n"
            "Jobs ahead that take or set aside GPUs it could use\n"
            "  #1 job 3 (high, team vision, 4 GPUs): reserved GPUs on gpu01 from "
            "2027-01-15T08:50:00.000Z (in 50m)\n"
            "\n"
            "Priority (factors in the order they are compared; lower goes first)\n"
            "  class           normal (rank 1)\n"
            "  guarantee       team nlp is not below its guarantee\n"
            "  team share      nlp: 7200 GPU-s / weight 2 = 3600 (2 of 3 teams waiting)\n"
            "  user share      alice: 0 GPU-s / weight 1 = 0 (1 of 1 users of the team waiting)\n"
            "  submitted       2027-01-15T07:35:00.000Z (waited 25m)\n"
            "\n"
            "Quota\n"
            "  verdict         may start, as borrowed work (preemptible)\n"
            "  class rules     users: everyone; max GPUs per user: no limit\n"
            "  team            holds 6 GPUs; guarantee 4, max 8\n"
            "  budget          120.5 of 500 GPU-hours this period; over budget: borrow_only\n"
            "  time limit      2h (requested)\n"
            "\n"
            "Placement per node (32 nodes: busy 1, not_up 1, too_small 30)\n"
            "  gpu01 (up, 4 GPUs H100): busy - 2 of 4 matching GPUs free; needs 4 GPUs\n"
            "      GPU 0,1: held by job 100 until 2027-01-15T08:50:00.000Z (in 50m)\n"
            "      GPU 2,3: reserved for job 3 from 2027-01-15T08:50:00.000Z (in 50m); this job "
            "would not end by then\n"
            "      job 100 (low): spared: protected: ran 5m of the minimum run time 10m\n"
            "  gpu09 (down, 8 GPUs H100): not_up - node is down: it takes no new work\n"
            "  ... and 30 less relevant nodes (--json lists the counts above)\n");
}

// The run-time predictor's estimate (issue #22): what it orders and plans the job by.
TEST(ExplainViewTest, PredictedRunIsShownWithItsBasis) {
  Explanation e = Waiting();
  e.prediction = JobPrediction{.expected = Millis(5'400'000),
                               .high = Millis(9'000'000),
                               .basis = "user+family+gpus",
                               .explanation =
                                   "median of alice's 12 runs of python3 train.py "
                                   "with 4 GPUs",
                               .error_median = 0.184,
                               .error_runs = 12};
  ASSERT_TRUE(e.priority.has_value());
  e.priority->place = At(3900);  // submitted 25 min ago, 1.5 h predicted: 65 min from now
  const std::string out = Render(e);
  EXPECT_NE(out.find("  place           2027-01-15T09:05:00.000Z (submitted + predicted GPU-time; "
                     "compared last)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  predicted run   1h30m (high 2h30m): median of alice's 12 runs of "
                     "python3 train.py with 4 GPUs\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  prediction error off by 18% (median over the last 12 runs predicted)\n"),
            std::string::npos)
      << out;
  e.prediction->error_median.reset();
  EXPECT_NE(Render(e).find("  prediction error not measured yet"), std::string::npos);
  EXPECT_EQ(Render(Waiting()).find("predicted run"), std::string::npos);  // none: no line
}

// The estimated start's range and basis (issue #22).
TEST(ExplainViewTest, EstimatedStartSaysWhatItRestsOn) {
  Explanation e = Waiting();
  const Time latest = At(3000);
  e.estimated_start = latest;
  e.start_estimate = StartEstimate{.earliest = latest - std::chrono::minutes(10),
                                   .latest = latest,
                                   .basis = StartBasis::kPredictions};
  std::string out = Render(e);
  EXPECT_NE(
      out.find("  estimated start between " + FormatRfc3339(latest - std::chrono::minutes(10))),
      std::string::npos)
      << out;
  EXPECT_NE(out.find(", by predicted run times (median to high estimates)\n"), std::string::npos)
      << out;
  e.start_estimate =
      StartEstimate{.earliest = latest, .latest = latest, .basis = StartBasis::kTimeLimits};
  out = Render(e);
  EXPECT_NE(out.find("  estimated start " + FormatRfc3339(latest)), std::string::npos) << out;
  EXPECT_NE(out.find(", by time limits (the latest they allow)\n"), std::string::npos) << out;
}

// What the server leaves out for a caller who may not see other users' jobs (issue #20):
// their ids, and a running job's end.
TEST(ExplainViewTest, OtherUsersJobsAreNamedWithoutIdsOrEnds) {
  Explanation e = Waiting();
  e.ahead[0].id.reset();
  for (GpuHold& hold : e.nodes[0].held) {
    hold.job.reset();
    hold.other_user = true;
    if (hold.kind == "running") {
      hold.until.reset();
    }
  }
  e.nodes[0].held[0].then_for_other_user = true;
  e.nodes[0].held[0].then_from = At(3000);
  e.nodes[0].victims[0].job.reset();
  const std::string text = Render(e);
  EXPECT_NE(text.find("  #1 another user's job (high, team vision, 4 GPUs): reserved GPUs on "
                      "gpu01 from 2027-01-15T08:50:00.000Z (in 50m)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      GPU 0: held by another user's job; then reserved for another "
                      "user's job from 2027-01-15T08:50:00.000Z (in 50m)\n"
                      "      GPU 1: held by another user's job\n"
                      "      GPU 2,3: reserved for another user's job from "
                      "2027-01-15T08:50:00.000Z (in 50m); this job would not end by then\n"
                      "      another user's job (low): spared: protected"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("job 100"), std::string::npos) << text;
  EXPECT_EQ(text.find("no time limit"), std::string::npos) << text;  // unknown, not unlimited

  e.outcome = "preempts";
  e.placement = Allocation();
  e.placement->node = NodeId("gpu01");
  e.preempts = {JobId(5)};
  e.preempts_other_users = 2;
  EXPECT_NE(Render(e).find("Job 12: preempts job(s) 5 and 2 jobs of other users to start on "
                           "gpu01\n"),
            std::string::npos);
  e.preempts = {};
  e.preempts_other_users = 1;
  EXPECT_NE(Render(e).find("Job 12: preempts another user's job to start on gpu01\n"),
            std::string::npos);
}

TEST(ExplainViewTest, HeldJobSaysWhichRule) {
  Explanation e = Waiting();
  e.outcome = "held";
  e.quota->may_start = false;
  e.quota->reason = "team nlp is at its limit: holds 8 of max_gpus 8; this job needs 4 more";
  const std::string text = Render(e);
  EXPECT_NE(text.find("Job 12: held by a rule\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  verdict         held: team nlp is at its limit"), std::string::npos)
      << text;
}

TEST(ExplainViewTest, RunningJob) {
  Explanation e;
  e.job = JobId(7);
  e.state = "running";
  e.outcome = "running";
  e.running = RunningExplanation{
      .allocation = Allocation{.node = NodeId("gpu02"), .gpus = {}},
      .gpu_indexes = {0, 1},
      .since = At(-300),
      .expected_end = std::nullopt,
      .preemptible = true,
      .stopping = false,
      .protected_until = At(300),
      .preempted_by = {"jobs of class high",
                       "jobs of other teams within their guarantee (it runs on borrowed GPUs)"}};
  EXPECT_EQ(Render(e),
            "Job 7: running on gpu02 GPUs 0,1\n"
            "  since           2027-01-15T07:55:00.000Z (5m ago)\n"
            "  expected end    unknown (no time limit)\n"
            "  preemptible     yes: it runs on borrowed GPUs\n"
            "  protected until 2027-01-15T08:05:00.000Z (in 5m) (minimum run time)\n"
            "  preempted by    jobs of class high; jobs of other teams within their guarantee "
            "(it runs on borrowed GPUs)\n");
}

}  // namespace
}  // namespace gf
