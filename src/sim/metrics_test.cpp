#include "sim/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf::sim {
namespace {

using std::chrono::seconds;

TEST(MetricsTest, PercentilesInterpolateLikeNumpy) {
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4, 5}, 50), 3);
  EXPECT_DOUBLE_EQ(Percentile({0, 10}, 95), 9.5);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
}

TEST(MetricsTest, JainIndex) {
  EXPECT_DOUBLE_EQ(JainIndex({2, 2, 2}), 1);
  EXPECT_DOUBLE_EQ(JainIndex({1, 0}), 0.5);
  EXPECT_DOUBLE_EQ(JainIndex({}), 1);
}

JobOutcome Finished(std::string team, int submit, int start, int end, int duration, int gpus) {
  return JobOutcome{.id = "j",
                    .team = std::move(team),
                    .user = "",
                    .gpus = gpus,
                    .submit = seconds(submit),
                    .duration = seconds(duration),
                    .fate = JobFate::kCompleted,
                    .first_start = seconds(start),
                    .end = seconds(end),
                    .preemptions = 0,
                    .gpu_seconds = static_cast<double>((end - start) * gpus),
                    .runs = {{seconds(start), seconds(end)}}};
}

TEST(MetricsTest, SummaryPerTeamAndCsv) {
  SimResult result;
  result.total_gpus = 4;
  result.jobs = {Finished("x", 0, 0, 100, 100, 2),
                 Finished("y", 0, 100, 200, 100, 2),
                 JobOutcome{.id = "r",
                            .team = "y",
                            .user = "",
                            .gpus = 9,
                            .submit = seconds(5),
                            .duration = seconds(1),
                            .fate = JobFate::kRejected,
                            .reason = "too big"}};
  const Summary s = Summarize(result);
  EXPECT_EQ(s.jobs, 3);
  EXPECT_EQ(s.finished, 2);
  EXPECT_EQ(s.rejected, 1);
  EXPECT_DOUBLE_EQ(s.makespan_s, 200);
  EXPECT_DOUBLE_EQ(s.utilisation, 400.0 / 800);
  ASSERT_EQ(s.teams.size(), 2u);
  EXPECT_DOUBLE_EQ(s.teams[0].share, 0.5);
  EXPECT_DOUBLE_EQ(s.teams[1].avg_slowdown, 2);      // the rejected job counts for nothing
  EXPECT_DOUBLE_EQ(s.jain_fairness, 9.0 / (2 * 5));  // slowdowns 1 and 2
  EXPECT_EQ(JobsCsv(result),
            "id,team,user,gpus,submit_s,start_s,end_s,jct_s,queueing_s,preemptions,fate\n"
            "j,x,,2,0.000,0.000,100.000,100.000,0.000,0,completed\n"
            "j,y,,2,0.000,100.000,200.000,200.000,100.000,0,completed\n"
            "r,y,,9,5.000,,,,,0,rejected\n");
  EXPECT_THAT(SummaryJson(s), ::testing::HasSubstr("\"utilisation\": 0.5"));
  EXPECT_THAT(FormatSummary(s), ::testing::HasSubstr("utilisation           50.0 % of GPU time"));
}

TEST(MetricsTest, SeriesMeansPerStep) {
  // 2 GPUs. a holds both 0-100; b waits 10-100, holds 1 GPU 100-120, is preempted, waits
  // 120-130, holds it 130-150. 150 s: 1 s steps.
  SimResult result;
  result.total_gpus = 2;
  JobOutcome b = Finished("", 10, 100, 150, 40, 1);
  b.runs = {{seconds(100), seconds(120)}, {seconds(130), seconds(150)}};
  result.jobs = {Finished("", 0, 0, 100, 100, 2), b};
  const TimeSeries series = Summarize(result).series;
  EXPECT_EQ(series.step_s, 1);
  ASSERT_EQ(series.utilisation.size(), 150u);
  EXPECT_EQ(series.t_s[42], 42);
  EXPECT_DOUBLE_EQ(series.utilisation[99], 1);
  EXPECT_DOUBLE_EQ(series.utilisation[110], 0.5);
  EXPECT_DOUBLE_EQ(series.utilisation[125], 0);
  EXPECT_DOUBLE_EQ(series.queue[9], 0);
  EXPECT_DOUBLE_EQ(series.queue[10], 1);
  EXPECT_DOUBLE_EQ(series.queue[110], 0);
  EXPECT_DOUBLE_EQ(series.queue[125], 1);
  EXPECT_DOUBLE_EQ(series.queue[149], 0);
}

TEST(MetricsTest, SeriesStepIsRoundAndSplitsIntervals) {
  // 1,000 s: 5 s steps (200 points; 2 s would give 500). On the one GPU, a run 2-7 s fills
  // 3/5 of step 0 and 2/5 of step 1; a run 12-993 s 3/5 of step 2 and every step up to 197;
  // a run 993-1000 s the rest.
  SimResult result;
  result.total_gpus = 1;
  result.jobs = {Finished("", 0, 2, 7, 5, 1),
                 Finished("", 0, 12, 993, 981, 1),
                 Finished("", 0, 993, 1000, 7, 1)};
  const TimeSeries series = Summarize(result).series;
  EXPECT_EQ(series.step_s, 5);
  ASSERT_EQ(series.utilisation.size(), 200u);
  EXPECT_DOUBLE_EQ(series.utilisation[0], 0.6);
  EXPECT_DOUBLE_EQ(series.utilisation[1], 0.4);
  EXPECT_DOUBLE_EQ(series.utilisation[2], 0.6);  // 12-15
  EXPECT_DOUBLE_EQ(series.utilisation[100], 1);
  EXPECT_DOUBLE_EQ(series.utilisation[199], 1);
  // Waiting in step 0: the first job 0-2 s, the other two all of it.
  EXPECT_DOUBLE_EQ(series.queue[0], (2 + 5 + 5) / 5.0);
}

TEST(MetricsTest, ComparisonTableAndJson) {
  SimResult result;
  result.total_gpus = 1;
  result.jobs = {Finished("", 0, 0, 100, 100, 1), Finished("", 0, 100, 150, 50, 1)};
  const Summary s = Summarize(result);
  const std::vector<NamedSummary> runs = {{.policy = "fifo", .summary = s},
                                          {.policy = "a-long-name", .summary = s}};
  EXPECT_EQ(FormatComparison(runs),
            "policy       util %    JCT avg     median        p95        p99   queueing  slowdown  "
            "preempt   Jain\n"
            "fifo          100.0        125        125        148        150         50      "
            "2.00        0  1.000\n"
            "a-long-name   100.0        125        125        148        150         50      "
            "2.00        0  1.000\n"
            "(times in seconds; JCT, queueing and slowdown over finished jobs)\n");
  EXPECT_THAT(ComparisonJson(runs), ::testing::HasSubstr("\"policy\": \"a-long-name\""));
  const std::string svg = SeriesSvg(runs);
  EXPECT_THAT(svg, ::testing::StartsWith("<svg "));
  EXPECT_THAT(svg, ::testing::HasSubstr("<title>a-long-name</title>"));
}

}  // namespace
}  // namespace gf::sim
