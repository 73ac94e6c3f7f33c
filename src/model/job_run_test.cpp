#include "model/job_run.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

Time At(std::int64_t seconds) {
  return FromUnixMillis(1'800'000'000'000 + seconds * 1000);
}

Event StateEvent(std::int64_t seconds, JobState from, JobState to, const std::string& cause) {
  return Event{.time = At(seconds),
               .job = JobId(5),
               .kind = "state",
               .actor = "scheduler",
               .message = StateChangeText(ToString(from), ToString(to), cause)};
}

Node FourGpus(const std::string& name) {
  Node node;
  node.name = NodeId(name);
  for (int i = 0; i < 4; ++i) {
    Gpu gpu;
    gpu.index = i;
    gpu.uuid = GpuUuid(name + "-gpu" + std::to_string(i));
    node.gpus.push_back(gpu);
  }
  return node;
}

TEST(StateChangeTest, TextRoundTrips) {
  const std::string text = StateChangeText("RUNNING", "FAILED", "exit 1: bad input");
  EXPECT_EQ(text, "RUNNING -> FAILED: exit 1: bad input");
  const auto change = ParseStateChange(text);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->from, "RUNNING");
  EXPECT_EQ(change->to, "FAILED");
  EXPECT_EQ(change->cause, "exit 1: bad input");
  EXPECT_FALSE(ParseStateChange("drain node1: maintenance").has_value());
  EXPECT_EQ(ParseStateChange("ok -> failed")->to, "failed");
}

TEST(StartingTextTest, NamesNodeAndGpus) {
  EXPECT_EQ(StartingText("node1", {2, 0}), "starting on node1 GPUs 2,0");
  EXPECT_EQ(StartingText("node1", {}), "starting on node1 GPUs none");
}

// Requeued once: the first run's window and GPUs come from its events, the second's from the
// job (the agent's start time, the GPUs in the allocation's order).
TEST(JobRunsTest, ARequeuedJobHasTwoRuns) {
  const std::vector<Node> nodes = {FourGpus("a"), FourGpus("b")};
  Job job;
  job.id = JobId(5);
  job.state = JobState::kRunning;
  job.start_time = At(101);
  job.allocation = Allocation{.node = NodeId("b"), .gpus = {GpuUuid("b-gpu3"), GpuUuid("b-gpu1")}};
  const std::vector<Event> events = {
      Event{
          .time = At(0), .job = JobId(5), .kind = "submit", .actor = "ann", .message = "submitted"},
      StateEvent(10, JobState::kPending, JobState::kStarting, StartingText("a", {0, 1})),
      StateEvent(11, JobState::kStarting, JobState::kRunning, "running on a"),
      Event{.time = At(50),
            .job = JobId(5),
            .kind = "requeue",
            .actor = "ann",
            .message = "requeue by ann"},
      StateEvent(60, JobState::kRunning, JobState::kPreempted, "gpufleet requeue 5"),
      StateEvent(60, JobState::kPreempted, JobState::kPending, "requeued after requeue by ann"),
      StateEvent(100, JobState::kPending, JobState::kStarting, StartingText("b", {3, 1}) + " x"),
      StateEvent(102, JobState::kStarting, JobState::kRunning, "running on b"),
  };
  const std::vector<JobRun> runs = JobRuns(job, events, nodes);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0],
            (JobRun{.number = 1,
                    .node = NodeId("a"),
                    .gpus = {RunGpu{0, GpuUuid("a-gpu0")}, RunGpu{1, GpuUuid("a-gpu1")}},
                    .placed = At(10),
                    .start = At(11),
                    .end = At(60),
                    .end_state = JobState::kPreempted,
                    .end_cause = "gpufleet requeue 5"}));
  EXPECT_EQ(runs[1],
            (JobRun{.number = 2,
                    .node = NodeId("b"),
                    .gpus = {RunGpu{3, GpuUuid("b-gpu3")}, RunGpu{1, GpuUuid("b-gpu1")}},
                    .placed = At(100),
                    .start = At(101)}));
}

// Back in the queue: every run has ended, and the job's cleared fields change none of them; a
// node that is gone leaves the run its indexes without uuids.
TEST(JobRunsTest, PendingAgainKeepsEndedRuns) {
  Job job;
  job.state = JobState::kPending;
  const std::vector<Event> events = {
      StateEvent(10, JobState::kPending, JobState::kStarting, StartingText("gone", {2})),
      StateEvent(12, JobState::kStarting, JobState::kRunning, "running on gone"),
      StateEvent(30, JobState::kRunning, JobState::kNodeFail, "node gone lost"),
      StateEvent(30, JobState::kNodeFail, JobState::kPending, "requeued after node failure"),
  };
  const std::vector<JobRun> runs = JobRuns(job, events, {FourGpus("a")});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].node, NodeId("gone"));
  EXPECT_EQ(runs[0].gpus, (std::vector<RunGpu>{RunGpu{2, std::nullopt}}));
  EXPECT_EQ(runs[0].end, At(30));
  EXPECT_EQ(runs[0].end_state, JobState::kNodeFail);
}

// A run that failed to launch never ran: no start, its end the failure's.
TEST(JobRunsTest, ALaunchFailureHasNoStart) {
  Job job;
  job.state = JobState::kFailed;
  job.end_time = At(21);
  job.allocation = Allocation{.node = NodeId("a"), .gpus = {GpuUuid("a-gpu2")}};
  const std::vector<Event> events = {
      StateEvent(20, JobState::kPending, JobState::kStarting, StartingText("a", {2})),
      StateEvent(21, JobState::kStarting, JobState::kFailed, "launch failed"),
  };
  const std::vector<JobRun> runs = JobRuns(job, events, {FourGpus("a")});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].start.has_value());
  EXPECT_EQ(runs[0].end, At(21));
  EXPECT_EQ(runs[0].end_state, JobState::kFailed);
  EXPECT_EQ(runs[0].gpus, (std::vector<RunGpu>{RunGpu{2, GpuUuid("a-gpu2")}}));
}

// Without events (a journal kept elsewhere) a started job still has its run; a job that never
// started has none.
TEST(JobRunsTest, WithoutEventsTheJobsOwnRun) {
  Job job;
  job.state = JobState::kCompleted;
  job.start_time = At(5);
  job.end_time = At(9);
  job.allocation = Allocation{.node = NodeId("a"), .gpus = {GpuUuid("a-gpu0")}};
  const std::vector<JobRun> runs = JobRuns(job, {}, {FourGpus("a")});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].start, At(5));
  EXPECT_EQ(runs[0].end, At(9));
  EXPECT_EQ(runs[0].end_state, JobState::kCompleted);
  EXPECT_EQ(runs[0].gpus, (std::vector<RunGpu>{RunGpu{0, GpuUuid("a-gpu0")}}));
  EXPECT_TRUE(JobRuns(Job{}, {}, {}).empty());
}

}  // namespace
}  // namespace gf
