#include "lifecycle/admission.h"

#include <string>

#include <gtest/gtest.h>

namespace gf {
namespace {

ArrayMember Task(
    std::int64_t job, std::int64_t array, int index, std::optional<int> limit, bool running) {
  return ArrayMember{
      .job = JobId(job),
      .task = ArrayTask{.array_job = JobId(array), .index = index, .max_running = limit},
      .running = running};
}

Job Pending(std::int64_t id) {
  Job job;
  job.id = JobId(id);
  job.state = JobState::kPending;
  return job;
}

Job Holding(std::int64_t id) {
  Job job = Pending(id);
  job.state = JobState::kRunning;
  job.allocation = Allocation{.node = NodeId("n1"), .gpus = {GpuUuid("GPU-" + std::to_string(id))}};
  return job;
}

Job Member(Job job, std::int64_t gang, int rank, int size) {
  job.spec.gang = GangMember{.gang_job = JobId(gang), .rank = rank, .size = size};
  return job;
}

Job AsTask(Job job, std::int64_t array, int index, int limit) {
  job.spec.array = ArrayTask{.array_job = JobId(array), .index = index, .max_running = limit};
  return job;
}

std::map<JobId, Job> Active(std::vector<Job> jobs) {
  std::map<JobId, Job> active;
  for (Job& job : jobs) {
    active.emplace(job.id, std::move(job));
  }
  return active;
}

TEST(AdmissionTest, NothingIsHeldBackWithoutDependenciesGangsOrLimits) {
  const auto active = Active({Pending(1), Pending(2), Holding(3)});
  EXPECT_TRUE(HeldBack(active, DependencyGraph{}).empty());
}

TEST(AdmissionTest, AJobWaitingForADependencyTakesNoPlaceInItsArraysThrottle) {
  // Array 10, limit 1: task 10 waits for job 1, so task 11 takes the one place.
  DependencyGraph dependencies;
  dependencies.Wait(JobId(10), {Dependency{.job = JobId(1), .kind = DependencyKind::kOk}});
  const auto active = Active({Holding(1),
                              AsTask(Pending(10), 10, 0, 1),
                              AsTask(Pending(11), 10, 1, 1),
                              AsTask(Pending(12), 10, 2, 1)});
  const auto held = HeldBack(active, dependencies);
  ASSERT_EQ(held.size(), 2U);
  EXPECT_EQ(held.at(JobId(10)).text, "waiting for job 1 to complete successfully");
  EXPECT_EQ(held.at(JobId(10)).code, PendingCode::kDependency);
  EXPECT_EQ(held.at(JobId(10)).stage, PendingStage::kAdmission);
  EXPECT_TRUE(held.at(JobId(10)).can_ever_fit);
  EXPECT_EQ(held.at(JobId(12)).code, PendingCode::kArrayLimit);
  EXPECT_EQ(held.at(JobId(12)).stage, PendingStage::kAdmission);
  EXPECT_TRUE(held.at(JobId(12)).can_ever_fit);
  EXPECT_FALSE(held.contains(JobId(11)));
  EXPECT_EQ(held.at(JobId(12)).text,
            "array 10: at most 1 at once; 0 tasks running, 1 lower-index task goes first");
}

Job HeldBy(Job job, const std::string& owner, const std::string& holder) {
  job.owner.user = owner;
  job.held_by = holder;
  return job;
}

TEST(AdmissionTest, AHeldJobWaitsForItsReleaseAndTakesNoPlaceInItsArraysThrottle) {
  // Array 10, limit 1: task 10 is held by its owner, so task 11 takes the one place; job 20 is
  // held by root, an administrator's hold.
  const auto active = Active({HeldBy(AsTask(Pending(10), 10, 0, 1), "alice", "alice"),
                              AsTask(Pending(11), 10, 1, 1),
                              HeldBy(Pending(20), "bob", "root"),
                              Pending(21)});
  const auto held = HeldBack(active, DependencyGraph{});
  ASSERT_EQ(held.size(), 2U);
  EXPECT_EQ(held.at(JobId(10)).text, "held by alice: gpufleet release 10");
  EXPECT_EQ(held.at(JobId(10)).code, PendingCode::kHeld);
  EXPECT_EQ(held.at(JobId(10)).stage, PendingStage::kAdmission);
  EXPECT_FALSE(held.at(JobId(10)).can_ever_fit);  // waiting alone never ends a hold
  EXPECT_EQ(held.at(JobId(20)).text,
            "held by root (an administrator's hold): an operator or an admin releases it with "
            "gpufleet release 20");
  EXPECT_FALSE(held.contains(JobId(11)));
  EXPECT_FALSE(held.contains(JobId(21)));
}

TEST(AdmissionTest, AHoldKeepsBackOnlyAPendingJob) {
  Job running = HeldBy(Holding(1), "alice", "alice");  // a stale mark on a job that started
  EXPECT_TRUE(HeldBack(Active({running}), DependencyGraph{}).empty());
  EXPECT_EQ(HoldReason(Pending(2)), std::nullopt);
}

TEST(AdmissionTest, ARequeuedGangWaitsUntilEveryMemberHasStopped) {
  // Gang 5 of three: member 5 is back in the queue, 6 still stops, 7 is pending too.
  const auto active = Active(
      {Member(Pending(5), 5, 0, 3), Member(Holding(6), 5, 1, 3), Member(Pending(7), 5, 2, 3)});
  const auto held = HeldBack(active, DependencyGraph{});
  ASSERT_EQ(held.size(), 2U);
  EXPECT_EQ(held.at(JobId(5)).text,
            "waiting for its gang's members 6 to stop: the gang starts again whole");
  EXPECT_EQ(held.at(JobId(5)).code, PendingCode::kGangStopping);
  EXPECT_EQ(held.at(JobId(5)).stage, PendingStage::kAdmission);
  EXPECT_TRUE(held.at(JobId(5)).can_ever_fit);
  EXPECT_EQ(held.at(JobId(7)), held.at(JobId(5)));
  EXPECT_EQ(GangHoldReason(active, active.at(JobId(6))), held.at(JobId(5)));  // lists holders only
  const auto stopped = Active(
      {Member(Pending(5), 5, 0, 3), Member(Pending(6), 5, 1, 3), Member(Pending(7), 5, 2, 3)});
  EXPECT_TRUE(HeldBack(stopped, DependencyGraph{}).empty());
}

TEST(AdmissionTest, RunningTasksFillTheirArraysLimit) {
  const auto active = Active({AsTask(Holding(20), 20, 0, 2),
                              AsTask(Holding(21), 20, 1, 2),
                              AsTask(Pending(22), 20, 2, 2)});
  const auto held = HeldBack(active, DependencyGraph{});
  ASSERT_EQ(held.size(), 1U);
  EXPECT_EQ(held.at(JobId(22)).text, "array 20: 2 tasks running, limit 2");
}

TEST(ArrayThrottleTest, ThrottleOffersTheLowestIndicesUpToTheRoomLeft) {
  // Array 40, limit 2: task 0 runs, tasks 1..4 wait (given out of order).
  const auto held = ThrottledTasks({Task(44, 40, 4, 2, false),
                                    Task(40, 40, 0, 2, true),
                                    Task(42, 40, 2, 2, false),
                                    Task(41, 40, 1, 2, false),
                                    Task(43, 40, 3, 2, false)});
  EXPECT_FALSE(held.contains(JobId(41)));  // room for one more: the lowest index
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(held.at(JobId(42)).text,
            "array 40: at most 2 at once; 1 task running, 1 lower-index task goes first");
  EXPECT_TRUE(held.contains(JobId(43)));
  EXPECT_TRUE(held.contains(JobId(44)));
}

TEST(ArrayThrottleTest, FullArrayHoldsEveryPendingTask) {
  const auto held = ThrottledTasks(
      {Task(40, 40, 0, 2, true), Task(41, 40, 1, 2, true), Task(42, 40, 2, 2, false)});
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held.at(JobId(42)).text, "array 40: 2 tasks running, limit 2");
}

TEST(ArrayThrottleTest, ArraysAreThrottledApartAndUnlimitedOnesNotAtAll) {
  const auto held = ThrottledTasks({Task(10, 10, 0, 1, false),
                                    Task(11, 10, 1, 1, false),
                                    Task(20, 20, 0, 1, true),
                                    Task(21, 20, 1, 1, false),
                                    Task(30, 30, 0, std::nullopt, false),
                                    Task(31, 30, 1, std::nullopt, false)});
  EXPECT_EQ(held.size(), 2u);
  EXPECT_TRUE(held.contains(JobId(11)));
  EXPECT_TRUE(held.contains(JobId(21)));
}

TEST(ArrayThrottleTest, TaskName) {
  EXPECT_EQ(ArrayTaskName(ArrayTask{.array_job = JobId(40), .index = 3, .max_running = 4}), "40_3");
}

}  // namespace
}  // namespace gf
