#include "scheduler/scenario.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(SchedulerScenarioParserTest, ParsesEveryStep) {
  const Result<Scenario> scenario = ParseScenario(R"(
# a comment line
node gpu01 2xA100-40GB+2xH100-80GB state=draining   # trailing comment
state gpu01 up
health gpu01 1 failed
allocate gpu01 0,3
job 7 gpus=2 type=H100-80GB priority=high submit=1m30s user=ana
advance 10s
decide at 2m
decide
finish 7
expect start 7 on gpu01 gpus 2,3
expect pending 8 "needs # not a comment"
expect reason 8 "exact"
expect pending 9
expect starts 0
)");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  ASSERT_EQ(scenario->steps.size(), 14u);
  EXPECT_EQ(scenario->steps[0].line, 3);

  const auto& node = std::get<AddNodeStep>(scenario->steps[0].action).node;
  EXPECT_EQ(node.state, NodeState::kDraining);
  ASSERT_EQ(node.gpus.size(), 4u);
  EXPECT_EQ(node.gpus[3].model, "H100-80GB");
  EXPECT_EQ(node.gpus[3].index, 3);
  EXPECT_EQ(node.gpus[3].uuid, GpuUuid("GPU-gpu01-3"));

  const auto& job = std::get<SubmitStep>(scenario->steps[4].action);
  EXPECT_EQ(job.job.id, JobId(7));
  EXPECT_EQ(job.job.request.gpus, 2);
  EXPECT_EQ(job.job.request.gpu_type, "H100-80GB");
  EXPECT_EQ(job.job.priority, PriorityClass::kHigh);
  EXPECT_EQ(job.submit, Millis(90'000));
  EXPECT_EQ(job.job.user, "ana");

  EXPECT_EQ(std::get<DecideStep>(scenario->steps[6].action).at, Millis(120'000));
  EXPECT_EQ(std::get<ExpectStartStep>(scenario->steps[9].action).gpus, (std::vector<int>{2, 3}));
  const auto& pending = std::get<ExpectPendingStep>(scenario->steps[10].action);
  EXPECT_EQ(pending.text, "needs # not a comment");
  EXPECT_FALSE(pending.exact);
  EXPECT_TRUE(std::get<ExpectPendingStep>(scenario->steps[11].action).exact);
}

TEST(SchedulerScenarioParserTest, ErrorsNameTheLine) {
  const auto message = [](std::string_view text) {
    const Result<Scenario> scenario = ParseScenario(text);
    return scenario.ok() ? std::string("(parsed)") : scenario.error().message;
  };
  EXPECT_EQ(message("node a 8xH100\nfrobnicate\n").substr(0, 28), "line 2: cannot read 'frobnic");
  EXPECT_EQ(message("job 1 gpus=two"), "line 1: gpus 'two' is not an integer");
  EXPECT_EQ(message("node a 8H100"), "line 1: GPU spec '8H100' is not <count>x<model>");
  EXPECT_EQ(message("advance 10 s").substr(0, 7), "line 1:");
  EXPECT_EQ(message("advance 10x").substr(0, 21), "line 1: time '10x' is");
  EXPECT_EQ(message("expect pending 1 \"open"), "line 1: unterminated quote");
  EXPECT_EQ(message("job 1 colour=red").substr(0, 33), "line 1: unknown job option 'colou");
}

TEST(SchedulerScenarioRunnerTest, PassingScenarioHasNoFailures) {
  const Result<Scenario> scenario = ParseScenario(R"(
node n 2xH100
job 1 gpus=2
job 2 gpus=1 submit=1s
decide at 5s
expect start 1 on n gpus 0,1
expect pending 2 "0 free"
expect starts 1
finish 1
decide
expect start 2 on n gpus 0
)");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  const Result<std::vector<std::string>> failures = RunScenario(*scenario);
  ASSERT_TRUE(failures.ok()) << failures.error().message;
  EXPECT_TRUE(failures->empty()) << (*failures)[0];
}

TEST(SchedulerScenarioRunnerTest, ReportsUnmetExpectationsWithLineAndOutcome) {
  const Result<Scenario> scenario = ParseScenario(
      "node n 2xH100\njob 1 gpus=2\njob 2\ndecide\nexpect start 2 on n\nexpect starts 2\n"
      "expect reason 2 \"wrong\"\n");
  ASSERT_TRUE(scenario.ok());
  const Result<std::vector<std::string>> failures = RunScenario(*scenario);
  ASSERT_TRUE(failures.ok());
  ASSERT_EQ(failures->size(), 3u);
  EXPECT_EQ((*failures)[0],
            "line 5: expected job 2 to start on n; it is pending: \"needs 1 GPU; 0 free\"");
  EXPECT_EQ((*failures)[1], "line 6: expected 2 starts; got 1: 1");
  EXPECT_EQ((*failures)[2],
            "line 7: expected job 2 pending with reason \"wrong\"; it is pending: \"needs 1 GPU; "
            "0 free\"");
}

TEST(SchedulerScenarioRunnerTest, StepsThatCannotRunAreErrors) {
  const auto error = [](std::string_view text) {
    const Result<Scenario> scenario = ParseScenario(text);
    if (!scenario.ok()) {
      return "parse: " + scenario.error().message;
    }
    const Result<std::vector<std::string>> run = RunScenario(*scenario);
    return run.ok() ? std::string("(ran)") : run.error().message;
  };
  EXPECT_EQ(error("finish 3"), "line 1: job 3 is not running");
  EXPECT_EQ(error("health x 0 failed"), "line 1: no node 'x'; add it with a node line first");
  EXPECT_EQ(error("node a 1xH100\nallocate a 4"), "line 2: node 'a' has no GPU 4");
  EXPECT_EQ(error("node a 1xH100\nnode a 1xH100"), "line 2: node 'a' is already there");
  EXPECT_EQ(error("job 1\njob 1"), "line 2: job 1 is already submitted");
  EXPECT_EQ(error("expect starts 0"), "line 1: expect before any decide");
}

}  // namespace
}  // namespace gf
