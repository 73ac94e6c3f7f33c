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
                    .gpu_seconds = static_cast<double>((end - start) * gpus)};
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

}  // namespace
}  // namespace gf::sim
