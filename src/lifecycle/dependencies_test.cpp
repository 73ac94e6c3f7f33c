#include "lifecycle/dependencies.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

using Broken = DependencyGraph::Broken;

Dependency Any(std::int64_t job) {
  return Dependency{.job = JobId(job), .kind = DependencyKind::kAny};
}
Dependency Ok(std::int64_t job) {
  return Dependency{.job = JobId(job), .kind = DependencyKind::kOk};
}
JobOutcome Completed(int exit_code) {
  return JobOutcome{.state = JobState::kCompleted, .exit_code = exit_code};
}
JobOutcome Failed(int exit_code) {
  return JobOutcome{.state = JobState::kFailed, .exit_code = exit_code};
}
JobOutcome Cancelled() {
  return JobOutcome{.state = JobState::kCancelled, .exit_code = std::nullopt};
}

TEST(DependenciesTest, AnyIsMetByEveryEndOkOnlyByExitZero) {
  for (const JobOutcome& o : {Completed(0),
                              Failed(1),
                              Cancelled(),
                              JobOutcome{.state = JobState::kTimeout, .exit_code = 143}}) {
    EXPECT_TRUE(Satisfies(DependencyKind::kAny, o));
  }
  EXPECT_TRUE(Satisfies(DependencyKind::kOk, Completed(0)));
  EXPECT_FALSE(Satisfies(DependencyKind::kOk, Failed(1)));
  EXPECT_FALSE(Satisfies(DependencyKind::kOk, Cancelled()));
  EXPECT_FALSE(Satisfies(DependencyKind::kOk,
                         JobOutcome{.state = JobState::kTimeout, .exit_code = std::nullopt}));
}

TEST(DependenciesTest, ReasonsAndCausesNameTheJob) {
  EXPECT_EQ(WaitingReason(Any(12)).text, "waiting for job 12 to end");
  EXPECT_EQ(WaitingReason(Ok(12)).text, "waiting for job 12 to complete successfully");
  EXPECT_EQ(BrokenCause(JobId(12), Failed(1)), "dependency job 12 failed (exit 1)");
  EXPECT_EQ(BrokenCause(JobId(12), Cancelled()), "dependency job 12 was cancelled");
  EXPECT_EQ(BrokenCause(JobId(12), JobOutcome{.state = JobState::kTimeout, .exit_code = 143}),
            "dependency job 12 timed out");
}

TEST(DependenciesTest, ValidateRejectsRepeatsAndTooMany) {
  EXPECT_TRUE(ValidateDependencies({Any(1), Ok(2)}).ok());
  Status twice = ValidateDependencies({Any(3), Ok(3)});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("after: job 3 is given twice"), std::string::npos);
  std::vector<Dependency> many;
  for (std::size_t i = 1; i <= kMaxDependencies + 1; ++i) {
    many.push_back(Any(static_cast<std::int64_t>(i)));
  }
  EXPECT_FALSE(ValidateDependencies(many).ok());
}

TEST(DependencyGraphTest, WaitsUntilEveryJobEnded) {
  DependencyGraph graph;
  graph.Wait(JobId(10), {Any(1), Ok(2)});
  EXPECT_TRUE(graph.Waiting(JobId(10)));
  EXPECT_EQ(graph.FirstUnmet(JobId(10)), Any(1));
  EXPECT_TRUE(graph.OnEnded(JobId(1), Failed(3)).empty());  // any: a failure meets it
  EXPECT_EQ(graph.FirstUnmet(JobId(10)), Ok(2));
  EXPECT_TRUE(graph.OnEnded(JobId(2), Completed(0)).empty());
  EXPECT_FALSE(graph.Waiting(JobId(10)));
  EXPECT_EQ(graph.WaitingCount(), 0u);
}

TEST(DependencyGraphTest, EmptyListDoesNotWait) {
  DependencyGraph graph;
  graph.Wait(JobId(10), {});
  EXPECT_FALSE(graph.Waiting(JobId(10)));
  EXPECT_FALSE(graph.FirstUnmet(JobId(10)));
}

TEST(DependencyGraphTest, FailedOkDependencyBreaksAndCascadesAlongOkOnly) {
  DependencyGraph graph;
  graph.Wait(JobId(2), {Ok(1)});           // B after A:ok
  graph.Wait(JobId(3), {Ok(2)});           // C after B:ok
  graph.Wait(JobId(4), {Any(2)});          // D after B (any end)
  graph.Wait(JobId(5), {Ok(3), Any(99)});  // E after C:ok and an unrelated job
  graph.Wait(JobId(6), {Any(1)});          // F after A (any end)
  const std::vector<Broken> broken = graph.OnEnded(JobId(1), Failed(1));
  EXPECT_EQ(broken,
            (std::vector<Broken>{{JobId(2), "dependency job 1 failed (exit 1)"},
                                 {JobId(3), "dependency job 2 was cancelled"},
                                 {JobId(5), "dependency job 3 was cancelled"}}));
  EXPECT_FALSE(graph.Waiting(JobId(4)));  // B's cancellation is an end: D may run
  EXPECT_FALSE(graph.Waiting(JobId(6)));
  EXPECT_FALSE(graph.Waiting(JobId(5)));
  // The controller then cancels B, C and E: reporting those ends again changes nothing.
  EXPECT_TRUE(graph.OnEnded(JobId(2), Cancelled()).empty());
  EXPECT_TRUE(graph.OnEnded(JobId(3), Cancelled()).empty());
  EXPECT_TRUE(graph.OnEnded(JobId(99), Completed(0)).empty());
  EXPECT_EQ(graph.WaitingCount(), 0u);
}

TEST(DependencyGraphTest, SuccessMeetsOk) {
  DependencyGraph graph;
  graph.Wait(JobId(2), {Ok(1)});
  EXPECT_TRUE(graph.OnEnded(JobId(1), Completed(0)).empty());
  EXPECT_FALSE(graph.Waiting(JobId(2)));
}

TEST(DependencyGraphTest, AWaiterThatEndsIsForgotten) {
  DependencyGraph graph;
  graph.Wait(JobId(2), {Ok(1)});
  graph.Wait(JobId(3), {Ok(1)});
  EXPECT_TRUE(graph.OnEnded(JobId(2), Cancelled()).empty());  // cancelled by its user
  EXPECT_FALSE(graph.Waiting(JobId(2)));
  // Only job 3 still waited: it alone breaks.
  EXPECT_EQ(graph.OnEnded(JobId(1), Failed(2)),
            (std::vector<Broken>{{JobId(3), "dependency job 1 failed (exit 2)"}}));
}

TEST(DependencyGraphTest, OneBrokenDependencyIsEnoughOnceEach) {
  DependencyGraph graph;
  graph.Wait(JobId(3), {Ok(1), Ok(2)});
  EXPECT_EQ(graph.OnEnded(JobId(1), Failed(1)).size(), 1u);
  EXPECT_TRUE(graph.OnEnded(JobId(2), Failed(1)).empty());  // already broken: not twice
}

}  // namespace
}  // namespace gf
