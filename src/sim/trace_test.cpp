#include "sim/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf::sim {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kNormalizedHeader =
    "job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,status\n";

std::string Error(std::string_view text, std::optional<TraceFormat> format = std::nullopt) {
  auto jobs = ParseTrace(text, "t.csv", format);
  EXPECT_FALSE(jobs.ok());
  return jobs.ok() ? "" : jobs.error().message;
}

TEST(TraceTest, ReadsNormalizedRowsSortedBySubmitWithSharesOfOneGpu) {
  const std::string text = std::string(kNormalizedHeader) +
                           "b,20,30.5,0.46,bob,vc1,Pass\r\n"
                           "\n"
                           "a,10,100,2,,vc2,\n";
  auto trace = ParseTrace(text, "t.csv", std::nullopt);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const std::vector<TraceJob>* jobs = &trace->jobs;
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "a");
  EXPECT_EQ((*jobs)[0].submit, Millis(10'000));
  EXPECT_EQ((*jobs)[0].gpus, 2);
  EXPECT_EQ((*jobs)[0].user, "");
  EXPECT_EQ((*jobs)[0].team, "vc2");
  EXPECT_EQ((*jobs)[1].id, "b");
  EXPECT_EQ((*jobs)[1].duration, Millis(30'500));
  EXPECT_EQ((*jobs)[1].gpus, 1);  // 0.46 GPU: a share of one GPU
  EXPECT_EQ((*jobs)[1].gpu_milli, 460);
  EXPECT_EQ((*jobs)[0].gpu_milli, 0);  // whole GPUs
  EXPECT_EQ((*jobs)[1].user, "bob");
  EXPECT_EQ((*jobs)[1].team, "vc1");
}

TEST(TraceTest, ReadsTiresiasRowsAndGuessesTheFormat) {
  const std::string text =
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
      "0,1,0,138764,resnet50,138764,22538\n"
      "1,4,22538,112,resnet50,112,361\n";
  auto trace = ParseTrace(text, "t.csv", std::nullopt);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const std::vector<TraceJob>* jobs = &trace->jobs;
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[1].id, "1");
  EXPECT_EQ((*jobs)[1].gpus, 4);
  EXPECT_EQ((*jobs)[1].submit, Millis(22'538'000));
  EXPECT_EQ((*jobs)[1].duration, Millis(112'000));
  EXPECT_EQ((*jobs)[1].team, "");
}

TEST(TraceTest, RowsWithUnknownDurationAreLeftOutAndCounted) {
  auto trace = ParseTrace(
      std::string(kNormalizedHeader) + "a,1,,1,,,Pending\nb,2,5,1,,,\n", "t.csv", std::nullopt);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 1u);
  EXPECT_EQ(trace->jobs[0].id, "b");
  EXPECT_EQ(trace->unknown_duration, 1);
}

TEST(TraceTest, FractionsBecomeSharesBelowOneAndRoundUpAbove) {
  const std::string text = std::string(kNormalizedHeader) +
                           "a,0,1,0.460,,,\n"
                           "b,1,1,0.0001,,,\n"  // the least share: 1 milli-GPU
                           "c,2,1,0.9996,,,\n"  // rounds to a whole GPU
                           "d,3,1,1.000,,,\n"
                           "e,4,1,1.5,,,\n"  // above one GPU: whole GPUs, rounded up
                           "f,5,1,0,,,\n";   // CPU-only
  auto trace = ParseTrace(text, "t.csv", std::nullopt);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  std::vector<std::pair<int, int>> got;
  for (const TraceJob& job : trace->jobs) {
    got.emplace_back(job.gpus, job.gpu_milli);
  }
  EXPECT_EQ(got,
            (std::vector<std::pair<int, int>>{{1, 460}, {1, 1}, {1, 0}, {1, 0}, {2, 0}, {0, 0}}));
  EXPECT_DOUBLE_EQ(GpusHeld(trace->jobs[0]), 0.46);
  EXPECT_DOUBLE_EQ(GpusHeld(trace->jobs[4]), 2);
}

TEST(TraceTest, RowsWithUnknownDurationAreKeptWhenAsked) {
  const std::string text = std::string(kNormalizedHeader) + "a,0,,0.5,,,Pending\nb,1,5,1,,,\n";
  auto trace = ParseTrace(text, "t.csv", std::nullopt, /*keep_unknown_duration=*/true);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 2u);
  EXPECT_EQ(trace->jobs[0].duration, Millis(0));
  EXPECT_EQ(trace->jobs[0].gpu_milli, 500);
  EXPECT_EQ(trace->unknown_duration, 1);
  // The Tiresias format has no such rows: a blank duration is an error there.
  EXPECT_THAT(Error("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                    "1,1,0,10,m,,60\n"),
              HasSubstr("duration"));
}

TEST(TraceTest, ReadsDependenciesOnEarlierJobs) {
  const std::string text =
      "job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,after\n"
      "a,0,10,1,,,\n"
      "b,0,10,1,,,a:ok\n"
      "c,5,10,1,,,a;b:ok\n";
  auto trace = ParseTrace(text, "t.csv", std::nullopt);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_TRUE(trace->jobs[0].after.empty());
  EXPECT_EQ(trace->jobs[1].after,
            (std::vector<TraceDependency>{{.job = "a", .kind = DependencyKind::kOk}}));
  EXPECT_EQ(trace->jobs[2].after,
            (std::vector<TraceDependency>{{.job = "a", .kind = DependencyKind::kAny},
                                          {.job = "b", .kind = DependencyKind::kOk}}));
  const std::string header = "job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,after\n";
  EXPECT_THAT(Error(header + "a,0,10,1,,,b\nb,0,10,1,,,\n"),
              HasSubstr("t.csv:2: column 7 (after): job 'b' is not on an earlier row submitted no "
                        "later than 'a'"));
  EXPECT_THAT(Error(header + "a,9,10,1,,,\nb,0,10,1,,,a\n"),
              HasSubstr("job 'a' is not on an earlier row submitted no later than 'b'"));
  EXPECT_THAT(Error(header + "a,0,10,1,,,\nb,0,10,1,,,a:done\n"),
              HasSubstr("'a:done' is not ID or ID:ok"));
}

TEST(TraceTest, ReadsTheClassColumnBlankMeaningTheDefault) {
  auto trace = ParseTrace(
      "job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,class\n"
      "a,0,10,1,,,high\n"
      "b,1,10,1,,,\n",
      "t.csv",
      std::nullopt);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->jobs[0].priority, "high");
  EXPECT_EQ(trace->jobs[1].priority, "");
}

TEST(TraceTest, MalformedRowsNameFileLineAndColumn) {
  const std::string h(kNormalizedHeader);
  EXPECT_EQ(Error(h + "a,1,2,1,,,\nb,1,abc,1,,,\n"),
            "t.csv:3: column 3 (duration_s): 'abc' is not a duration in seconds (a number, 0 or "
            "more)");
  EXPECT_THAT(Error(h + "a,-5,2,1,,,\n"), HasSubstr("t.csv:2: column 2 (submit_time_s): '-5'"));
  EXPECT_THAT(Error(h + "a,1,2,,,,\n"), HasSubstr("t.csv:2: column 4 (num_gpus): ''"));
  EXPECT_THAT(Error(h + "a,1,2,nan,,,\n"), HasSubstr("column 4 (num_gpus): 'nan'"));
  EXPECT_THAT(Error(h + "a,1,2,1e9,,,\n"), HasSubstr("more than any cluster has"));
  EXPECT_THAT(Error(h + "a,1,2,1,,\n"), HasSubstr("t.csv:2: 6 fields, but the header has 7"));
  EXPECT_THAT(Error(h + "a,1,2,1,\"x,y\",,\n"), HasSubstr("t.csv:2: a quoted field"));
  EXPECT_THAT(Error(h + "a,1,2,1,,,\n\na,3,4,1,,,\n"),
              HasSubstr("t.csv:4: column 1 (job_id): job id 'a' repeats line 2"));
  EXPECT_THAT(Error(h + ",1,2,1,,,\n"), HasSubstr("t.csv:2: column 1 (job_id): empty job id"));
}

TEST(TraceTest, HeaderProblemsAreExplained) {
  EXPECT_THAT(Error(""), HasSubstr("t.csv:1: cannot tell the trace format"));
  EXPECT_THAT(Error("", TraceFormat::kNormalized), HasSubstr("t.csv: empty file"));
  EXPECT_THAT(Error("job_id,submit_time_s,num_gpus\n"),
              HasSubstr("t.csv:1: no column 'duration_s' in the header "
                        "(job_id,submit_time_s,num_gpus)"));
  EXPECT_THAT(Error("a,b\n1,2\n"), HasSubstr("--format tiresias"));
}

TEST(TraceTest, ParsesFormatNames) {
  EXPECT_EQ(*ParseTraceFormat("tiresias"), TraceFormat::kTiresias);
  EXPECT_EQ(*ParseTraceFormat("normalized"), TraceFormat::kNormalized);
  auto bad = ParseTraceFormat("philly");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "format: 'philly' is not a trace format; use normalized or tiresias");
}

TEST(TraceTest, MissingFileIsNotFound) {
  auto jobs = ReadTrace("/nonexistent/trace.csv", std::nullopt);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(jobs.error().message, HasSubstr("/nonexistent/trace.csv does not exist"));
}

}  // namespace
}  // namespace gf::sim
