#include "lifecycle/stops.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

// A stop to be requeued after a preemption by job 9.
StopIntent PreemptedByJob9() {
  return StopIntent{.final_state = JobState::kPreempted,
                    .cause = "preempted by job 9",
                    .requeue_after = "preemption"};
}

TEST(StopBookTest, ARunNobodyStopsCompletesOrFailsByItsExitCode) {
  const StopBook book;
  EXPECT_EQ(book.OnExit(JobId(1), 0, "exited with status 0"),
            (RunVerdict{.state = JobState::kCompleted, .cause = "exited with status 0"}));
  EXPECT_EQ(book.OnExit(JobId(1), 3, "exited with status 3"),
            (RunVerdict{.state = JobState::kFailed, .cause = "exited with status 3"}));
}

TEST(StopBookTest, AStopThatEndsTheJobGivesItsStateAndSaysItsCauseOnce) {
  StopBook book;
  book.Request(JobId(4),
               StopIntent{.final_state = JobState::kTimeout, .cause = "time limit 1h reached"});
  EXPECT_TRUE(book.Stopping(JobId(4)));
  EXPECT_FALSE(book.Stopping(JobId(5)));
  // The agent's account of the kill starts with the cause it was given.
  EXPECT_EQ(book.OnExit(JobId(4), 137, "time limit 1h reached: killed by signal 9"),
            (RunVerdict{.state = JobState::kTimeout,
                        .cause = "time limit 1h reached (killed by signal 9)"}));
  // Exiting 0 on its SIGTERM does not make it COMPLETED: it was stopped.
  EXPECT_EQ(book.OnExit(JobId(4), 0, "exited with status 0").state, JobState::kTimeout);
}

TEST(StopBookTest, APreemptedRunIsRequeuedWhateverItsExitCode) {
  StopBook book;
  book.Request(JobId(2), PreemptedByJob9());
  const RunVerdict expected{
      .state = JobState::kPreempted,
      .cause = "preempted by job 9 (exited with status 0)",
      .requeue = RunVerdict::Requeue{
          .after = "preemption", .cause = "preempted by job 9", .otherwise = JobState::kCancelled}};
  // Exit 0 on the checkpoint signal: it saved its work and stopped; it has not finished.
  EXPECT_EQ(book.OnExit(JobId(2), 0, "exited with status 0"), expected);
  // A GPU failure's stop requeues too, or fails a job that must not run twice.
  book.Request(JobId(3),
               StopIntent{.final_state = JobState::kNodeFail,
                          .cause = "GPU 0 failed",
                          .requeue_after = "GPU failure"});
  EXPECT_EQ(book.OnExit(JobId(3), 137, "killed by signal 9").requeue->otherwise, JobState::kFailed);
}

TEST(StopBookTest, ALostNodeRequeuesItsRunUnlessAStopThatEndsItWasUnderWay) {
  StopBook book;
  EXPECT_EQ(book.OnLost(JobId(1), "node n2 silent for 60s"),
            (RunVerdict{.state = JobState::kNodeFail,
                        .cause = "node n2 silent for 60s",
                        .requeue = RunVerdict::Requeue{.after = "node failure",
                                                       .cause = "node n2 silent for 60s",
                                                       .otherwise = JobState::kFailed}}));
  book.Request(JobId(1),
               StopIntent{.final_state = JobState::kCancelled, .cause = "cancelled by bob"});
  EXPECT_EQ(book.OnLost(JobId(1), "node n2 silent for 60s"),
            (RunVerdict{.state = JobState::kCancelled,
                        .cause = "cancelled by bob (then node n2 silent for 60s)"}));
  // Being stopped to be requeued: the node's loss requeues it all the same.
  book.Request(JobId(1), PreemptedByJob9());
  EXPECT_EQ(book.OnLost(JobId(1), "node n2 silent for 60s").state, JobState::kNodeFail);
}

TEST(StopBookTest, ALaterRequestReplacesTheIntentAndARequeueEndsTheStop) {
  StopBook book;
  book.Request(JobId(7), PreemptedByJob9());
  book.Request(JobId(7),
               StopIntent{.final_state = JobState::kCancelled, .cause = "cancelled by bob"});
  EXPECT_EQ(book.Find(JobId(7))->final_state, JobState::kCancelled);
  EXPECT_FALSE(book.OnExit(JobId(7), 137, "killed by signal 9").requeue.has_value());

  book.Request(JobId(8), PreemptedByJob9());
  book.Requeued(JobId(8), "preemption", "preempted by job 9");
  EXPECT_FALSE(book.Stopping(JobId(8)));
  ASSERT_NE(book.RequeueCause(JobId(8)), nullptr);
  EXPECT_EQ(*book.RequeueCause(JobId(8)), "requeued after preemption (preempted by job 9)");
  book.Started(JobId(8));
  EXPECT_EQ(book.RequeueCause(JobId(8)), nullptr);
  book.Requeued(JobId(8), "node failure", "node n2 lost");
  book.Forget(JobId(8));
  EXPECT_EQ(book.RequeueCause(JobId(8)), nullptr);
  EXPECT_EQ(book.Intents().size(), 1u);  // job 7's
}

}  // namespace
}  // namespace gf
